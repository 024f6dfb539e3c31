//! Imported functions are as transformable as the eager ones (issue 15):
//! `grad`, `value_and_grad`, `vjp`, `jvp` and `compile` of functions that
//! call an imported function, in both file formats, from fixed-shape files
//! (whose traces run with their element-wise chains fused) and shapeless
//! ones; a training loop whose step calls an imported forward pass; and
//! gradients traced inside a shapeless export. Expected values are closed
//! forms computed here in f64.

use mlx::export::{export_function, import_function, ImportedFunction};
use mlx::transforms::{compile, grad, jvp, value_and_grad, vjp};
use mlx::{ops, Array, ExportOptions, Format, Result};
use std::path::PathBuf;

const FORMATS: [Format; 2] = [Format::Native, Format::Mlx];

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-imported-transforms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn opts(format: Format, shapeless: bool) -> ExportOptions {
    ExportOptions {
        format,
        shapeless,
        ..ExportOptions::default()
    }
}

fn f32s(v: &[f32], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn vals(a: &Array) -> Vec<f64> {
    ops::astype(a, mlx::Dtype::Float64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

/// Relative-and-absolute closeness, with the failing element in the message.
fn assert_near(what: &str, got: &Array, want: &[f64]) {
    let g = vals(got);
    assert_eq!(
        g.len(),
        want.len(),
        "{what}: {} elements, want {}",
        g.len(),
        want.len()
    );
    for (i, (x, y)) in g.iter().zip(want).enumerate() {
        assert!(
            (x - y).abs() <= 1e-5 + 1e-5 * y.abs(),
            "{what}: element {i} is {x}, want {y}"
        );
    }
}

/// `f(x, w) = sin(x·w) + exp(x·x)`: one element-wise tree of five steps,
/// which a fixed-shape import runs as one fused node.
fn f(a: &[Array]) -> Result<Vec<Array>> {
    let (x, w) = (&a[0], &a[1]);
    let s = ops::sin(&ops::multiply(x, w)?)?;
    let e = ops::exp(&ops::multiply(x, x)?)?;
    Ok(vec![ops::add(&s, &e)?])
}

/// Exports `f` traced at `x`'s and `w`'s shapes and imports it back.
fn imported(format: Format, shapeless: bool, x: &Array, w: &Array) -> ImportedFunction {
    let name = format!("f-{format:?}-{shapeless}.bin");
    let path = tmp(&name);
    export_function(&path, f, &[x.clone(), w.clone()], &opts(format, shapeless)).unwrap();
    import_function(&path).unwrap()
}

/// Closed forms of `f` and its partial derivatives, element by element.
struct Closed {
    value: Vec<f64>,
    dx: Vec<f64>,
    dw: Vec<f64>,
}

fn closed(x: &Array, w: &Array) -> Closed {
    let (x, w) = (vals(x), vals(w));
    let mut c = Closed {
        value: vec![],
        dx: vec![],
        dw: vec![],
    };
    for (&x, &w) in x.iter().zip(&w) {
        c.value.push((x * w).sin() + (x * x).exp());
        c.dx.push((x * w).cos() * w + 2.0 * x * (x * x).exp());
        c.dw.push((x * w).cos() * x);
    }
    c
}

fn inputs(shape: &[i32]) -> (Array, Array) {
    let n: i32 = shape.iter().product();
    let x: Vec<f32> = (0..n).map(|i| 0.1 * i as f32 - 0.25).collect();
    let w: Vec<f32> = (0..n).map(|i| 0.7 - 0.2 * i as f32).collect();
    (f32s(&x, shape), f32s(&w, shape))
}

/// The cases run: every transform in both formats, fixed-shape and
/// shapeless. A shapeless file is also called at a shape other than the
/// traced one.
fn each_case(mut check: impl FnMut(&str, &ImportedFunction, &Array, &Array)) {
    let (tx, tw) = inputs(&[2, 3]);
    for format in FORMATS {
        for shapeless in [false, true] {
            let imp = imported(format, shapeless, &tx, &tw);
            let mut shapes = vec![vec![2, 3]];
            if shapeless {
                shapes.push(vec![4, 5]);
            }
            for shape in shapes {
                let (x, w) = inputs(&shape);
                let case = format!("{format:?} shapeless={shapeless} at {shape:?}");
                check(&case, &imp, &x, &w);
            }
        }
    }
}

#[test]
fn grad_of_an_imported_function() {
    each_case(|case, imp, x, w| {
        let loss = |a: &[Array]| Ok(vec![ops::sum(&imp.call(a)?[0], &[], false)?]);
        let g = grad(loss, &[0, 1])(&[x.clone(), w.clone()]).unwrap();
        let c = closed(x, w);
        assert_near(&format!("{case} d/dx"), &g[0], &c.dx);
        assert_near(&format!("{case} d/dw"), &g[1], &c.dw);
    });
}

#[test]
fn value_and_grad_of_an_imported_function() {
    each_case(|case, imp, x, w| {
        let loss = |a: &[Array]| Ok(vec![ops::sum(&imp.call(a)?[0], &[], false)?]);
        let (v, g) = value_and_grad(loss, &[1])(&[x.clone(), w.clone()]).unwrap();
        let c = closed(x, w);
        assert_near(&format!("{case} value"), &v[0], &[c.value.iter().sum()]);
        assert_near(&format!("{case} d/dw"), &g[0], &c.dw);
    });
}

#[test]
fn vjp_of_an_imported_function() {
    each_case(|case, imp, x, w| {
        let n = x.size() as i32;
        let cot: Vec<f32> = (0..n).map(|i| 1.0 + 0.5 * i as f32).collect();
        let cot = f32s(&cot, x.shape());
        let call = |a: &[Array]| imp.call(a);
        let (outs, cots) = vjp(call, &[x.clone(), w.clone()], std::slice::from_ref(&cot)).unwrap();
        let c = closed(x, w);
        let cv = vals(&cot);
        let times = |d: &[f64]| d.iter().zip(&cv).map(|(a, b)| a * b).collect::<Vec<_>>();
        assert_near(&format!("{case} value"), &outs[0], &c.value);
        assert_near(&format!("{case} x cotangent"), &cots[0], &times(&c.dx));
        assert_near(&format!("{case} w cotangent"), &cots[1], &times(&c.dw));
    });
}

#[test]
fn jvp_of_an_imported_function() {
    each_case(|case, imp, x, w| {
        let n = x.size() as i32;
        let tx: Vec<f32> = (0..n).map(|i| 0.3 - 0.1 * i as f32).collect();
        let tw: Vec<f32> = (0..n).map(|i| 1.0 + 0.25 * i as f32).collect();
        let (tx, tw) = (f32s(&tx, x.shape()), f32s(&tw, x.shape()));
        let call = |a: &[Array]| imp.call(a);
        let (outs, tans) = jvp(call, &[x.clone(), w.clone()], &[tx.clone(), tw.clone()]).unwrap();
        let c = closed(x, w);
        let (tx, tw) = (vals(&tx), vals(&tw));
        let want: Vec<f64> = (0..c.dx.len())
            .map(|i| c.dx[i] * tx[i] + c.dw[i] * tw[i])
            .collect();
        assert_near(&format!("{case} value"), &outs[0], &c.value);
        assert_near(&format!("{case} tangent"), &tans[0], &want);
    });
}

#[test]
fn compile_of_a_function_calling_an_imported_function() {
    each_case(|case, imp, x, w| {
        // Compiled call, then the gradient of a compiled function.
        let compiled = compile(|a: &[Array]| Ok(vec![ops::multiply(&imp.call(a)?[0], &a[1])?]));
        let y = compiled(&[x.clone(), w.clone()]).unwrap();
        let c = closed(x, w);
        let wv = vals(w);
        let want: Vec<f64> = c.value.iter().zip(&wv).map(|(v, w)| v * w).collect();
        assert_near(&format!("{case} compiled value"), &y[0], &want);
        let loss = |a: &[Array]| Ok(vec![ops::sum(&compiled(a)?[0], &[], false)?]);
        let g = grad(loss, &[0, 1])(&[x.clone(), w.clone()]).unwrap();
        let dx: Vec<f64> = c.dx.iter().zip(&wv).map(|(d, w)| d * w).collect();
        let dw: Vec<f64> = (0..wv.len())
            .map(|i| c.dw[i] * wv[i] + c.value[i])
            .collect();
        assert_near(&format!("{case} d/dx of compiled"), &g[0], &dx);
        assert_near(&format!("{case} d/dw of compiled"), &g[1], &dw);
        // And a compiled gradient of the imported function.
        let inner = |a: &[Array]| Ok(vec![ops::sum(&imp.call(a)?[0], &[], false)?]);
        let cg = compile(grad(inner, &[0]));
        let g = cg(&[x.clone(), w.clone()]).unwrap();
        assert_near(&format!("{case} compiled d/dx"), &g[0], &c.dx);
    });
}

#[test]
fn second_derivative_through_an_imported_function() {
    // d²/dx² of sum(exp(x²)) (w = 0) is (2 + 4x²)·exp(x²).
    for format in FORMATS {
        let (x, _) = inputs(&[2, 3]);
        let w = ops::zeros_like(&x).unwrap();
        let imp = imported(format, false, &x, &w);
        let first = |a: &[Array]| {
            let loss = |b: &[Array]| Ok(vec![ops::sum(&imp.call(b)?[0], &[], false)?]);
            let g = grad(loss, &[0])(a)?;
            Ok(vec![ops::sum(&g[0], &[], false)?])
        };
        let g2 = grad(first, &[0])(&[x.clone(), w.clone()]).unwrap();
        let want: Vec<f64> = vals(&x)
            .iter()
            .map(|x| (2.0 + 4.0 * x * x) * (x * x).exp())
            .collect();
        assert_near(&format!("{format:?} second derivative"), &g2[0], &want);
    }
}

/// `x @ w + b`, exported as the forward pass of a linear model.
fn forward(a: &[Array]) -> Result<Vec<Array>> {
    Ok(vec![ops::add(&ops::matmul(&a[0], &a[1])?, &a[2])?])
}

#[test]
fn training_loop_through_an_imported_forward_pass() {
    // Columns 1..3 of the 8×8 Sylvester-Hadamard matrix: orthogonal, of
    // squared norm 8, and orthogonal to the ones column the bias sees. So
    // the Hessian of the mean squared error in (w, b) is 2·I, and gradient
    // descent with step 0.25 halves the error of every parameter each step:
    // the loss after k steps is exactly loss₀ · 0.25^k.
    let h = |r: usize, c: usize| {
        if (r & c).count_ones().is_multiple_of(2) {
            1.0f32
        } else {
            -1.0
        }
    };
    let x: Vec<f32> = (0..8).flat_map(|r| (1..4).map(move |c| h(r, c))).collect();
    let x = f32s(&x, &[8, 3]);
    let (w_true, b_true) = ([0.5f32, -1.5, 2.0], 0.75f32);
    let y: Vec<f32> = (0..8)
        .map(|r| (0..3).map(|c| h(r, c + 1) * w_true[c]).sum::<f32>() + b_true)
        .collect();
    let y = f32s(&y, &[8, 1]);
    for format in FORMATS {
        for shapeless in [false, true] {
            let path = tmp(&format!("forward-{format:?}-{shapeless}.bin"));
            let (w0, b0) = (f32s(&[0.0; 3], &[3, 1]), f32s(&[0.0], &[1]));
            let args = [x.clone(), w0.clone(), b0.clone()];
            export_function(&path, forward, &args, &opts(format, shapeless)).unwrap();
            let model = import_function(&path).unwrap();
            let loss = |a: &[Array]| {
                let pred = model.call(&[x.clone(), a[0].clone(), a[1].clone()])?;
                let d = ops::subtract(&pred[0], &y)?;
                Ok(vec![ops::mean(&ops::square(&d)?, &[], false)?])
            };
            let step = value_and_grad(loss, &[0, 1]);
            let (mut w, mut b) = (w0, b0);
            let mut losses = Vec::new();
            for _ in 0..12 {
                let (l, g) = step(&[w.clone(), b.clone()]).unwrap();
                losses.push(l[0].to_vec::<f32>().unwrap()[0] as f64);
                let lr = Array::scalar(0.25f32);
                w = ops::subtract(&w, &ops::multiply(&g[0], &lr).unwrap()).unwrap();
                b = ops::subtract(&b, &ops::multiply(&g[1], &lr).unwrap()).unwrap();
            }
            // loss₀ = mean(y²) = Σ w_true² + b_true² (orthogonal columns).
            let l0: f64 = w_true.iter().map(|v| (v * v) as f64).sum::<f64>() + 0.5625;
            for (k, l) in losses.iter().enumerate() {
                let want = l0 * 0.25f64.powi(k as i32);
                assert!(
                    (l - want).abs() <= 1e-4 * want + 1e-9,
                    "{format:?} shapeless={shapeless}: loss after {k} steps is {l}, want {want}"
                );
            }
        }
    }
}

#[test]
fn gradients_inside_a_shapeless_export() {
    // g(x) = d/dx sum(sin(x)·x) = cos(x)·x + sin(x), traced at [3] and
    // called at other shapes.
    let g = |a: &[Array]| {
        let inner = |b: &[Array]| {
            Ok(vec![ops::sum(
                &ops::multiply(&ops::sin(&b[0])?, &b[0])?,
                &[],
                false,
            )?])
        };
        grad(inner, &[0])(a)
    };
    for format in FORMATS {
        let path = tmp(&format!("grad-shapeless-{format:?}.bin"));
        let x0 = f32s(&[0.1, 0.2, 0.3], &[3]);
        export_function(&path, g, &[x0], &opts(format, true)).unwrap();
        let imp = import_function(&path).unwrap();
        for shape in [vec![3], vec![7]] {
            let n: i32 = shape.iter().product();
            let xs: Vec<f32> = (0..n).map(|i| 0.3 * i as f32 - 1.0).collect();
            let x = f32s(&xs, &shape);
            let got = imp.call(std::slice::from_ref(&x)).unwrap();
            let want: Vec<f64> = vals(&x).iter().map(|x| x.cos() * x + x.sin()).collect();
            assert_eq!(got[0].shape(), &shape[..]);
            assert_near(&format!("{format:?} at {shape:?}"), &got[0], &want);
        }
    }
}
