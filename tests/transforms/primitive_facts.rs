//! Facts that live on the primitive, not in hand-kept lists (issue 16):
//! `#[primitive(elementwise)]` makes a user crate's primitive fuse into
//! element-wise chains, `Primitive::fallback` makes a primitive
//! differentiable and decomposable without naming it anywhere, and a fused
//! chain (which a file cannot hold) reaching an exporter is recorded as its
//! plain steps. Expected values are closed forms.

use mlx::export::{decompose_fast, export_function, import_function};
use mlx::primitive::Spec;
use mlx::transforms::fuse::fuse;
use mlx::transforms::tracing::{trace, ConstantPool};
use mlx::transforms::{compile, grad, jvp};
use mlx::{ops, Array, Data, Dtype, Error, ExportOptions, Format, Primitive, Result};
use user_primitive::soft_shrink;

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-primitive-facts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn f32s(v: &[f32]) -> Array {
    Array::from_slice(v, &[v.len() as i32]).unwrap()
}

fn vals(a: &Array) -> Vec<f32> {
    a.to_vec::<f32>().unwrap()
}

fn assert_near(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-5 + 1e-5 * w.abs(),
            "{what}: element {i} is {g}, want {w}"
        );
    }
}

/// `soft_shrink(x + x, 0.5) + x`: SoftShrink (from the user crate) between
/// two element-wise ops of mlx.
fn shrink_chain(a: &[Array]) -> Result<Vec<Array>> {
    let x = &a[0];
    let s = soft_shrink(&ops::add(x, x)?, 0.5)?;
    Ok(vec![ops::add(&s, x)?])
}

fn shrink_chain_closed(x: &[f32]) -> Vec<f64> {
    x.iter()
        .map(|&x| {
            let y = 2.0 * x as f64;
            let s = if y > 0.5 {
                y - 0.5
            } else if y < -0.5 {
                y + 0.5
            } else {
                0.0
            };
            s + x as f64
        })
        .collect()
}

#[test]
fn a_user_crates_elementwise_primitive_fuses() {
    let spec = Spec::new([6], Dtype::Float32);
    let mut pool = ConstantPool::default();
    let mut tape = trace(|a, _| shrink_chain(a), &[spec], &[], &mut pool).unwrap();
    fuse(&mut tape, &pool.arrays);
    let fused: Vec<_> = tape
        .entries
        .iter()
        .filter(|e| e.primitive.name() == "Compiled")
        .collect();
    assert_eq!(fused.len(), 1, "one fused chain in {:?}", tape.entries);
    let steps = format!("{:?}", fused[0].primitive.state());
    assert!(
        steps.contains("SoftShrink") && steps.contains("Add"),
        "the chain's steps are {steps}"
    );
    // And the compiled function (which runs that chain) computes the closed form.
    let xs = [-1.0f32, -0.3, -0.1, 0.0, 0.2, 0.9];
    let y = compile(shrink_chain)(&[f32s(&xs)]).unwrap();
    assert_near("compiled chain", &vals(&y[0]), &shrink_chain_closed(&xs));
}

#[test]
fn no_writer_accepts_a_fused_node() {
    // The exporters record a fused chain's steps; a table handed straight
    // to the writers with the fused node still in it is refused, not
    // written as a file that decodes to nothing.
    let spec = Spec::new([6], Dtype::Float32);
    let mut pool = ConstantPool::default();
    let mut tape = trace(|a, _| shrink_chain(a), &[spec], &[], &mut pool).unwrap();
    fuse(&mut tape, &pool.arrays);
    assert!(tape
        .entries
        .iter()
        .any(|e| e.primitive.name() == "Compiled"));
    let table = mlx::export::FunctionTable {
        functions: vec![tape],
        constants: pool.arrays.clone(),
        ..Default::default()
    };
    let native = mlx::export::native::encode(&table).map(|_| ()).unwrap_err();
    assert!(
        native
            .to_string()
            .contains("Compiled has no registry entry"),
        "{native}"
    );
    let mlx_err = mlx::export::mlx::encode(&table).unwrap_err();
    assert!(mlx_err.to_string().contains("Compiled"), "{mlx_err}");
}

/// `x³` with a kernel of its own and `x · x · x` as its fallback graph:
/// differentiable and decomposable without any rule or list naming it.
#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
#[primitive(name = "TestCube", elementwise)]
struct TestCube {}

impl Primitive for TestCube {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        match inputs {
            [x] if x.dtype == Dtype::Float32 => Ok(vec![x.clone()]),
            _ => Err(Error::invalid(
                "TestCube",
                format!("expected one float32 input, found {inputs:?}"),
            )),
        }
    }
    fn eval(&self, inputs: &[Array], outputs: &[Spec]) -> Result<Vec<Data>> {
        let y = mlx::backend::cpu::elementwise::unary(&inputs[0], &outputs[0], |x: f32| x * x * x)?;
        Ok(vec![y])
    }
    fn fallback(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        let [x] = inputs else {
            return Some(Err(Error::invalid("TestCube", "expected one input")));
        };
        Some((|| Ok(vec![ops::multiply(&ops::multiply(x, x)?, x)?]))())
    }
}

fn cube(x: &Array) -> Result<Array> {
    Array::from_primitive(TestCube {}, vec![x.clone()])
}

#[test]
fn a_fallback_makes_a_primitive_differentiable() {
    let xs = [-1.5f32, -0.5, 0.0, 0.75, 2.0];
    let x = f32s(&xs);
    let loss = |a: &[Array]| Ok(vec![ops::sum(&cube(&a[0])?, &[], false)?]);
    let g = grad(loss, &[0])(std::slice::from_ref(&x)).unwrap();
    let three_x2: Vec<f64> = xs.iter().map(|&x| 3.0 * (x as f64).powi(2)).collect();
    assert_near("d/dx sum(x³)", &vals(&g[0]), &three_x2);
    let t = f32s(&[1.0, 2.0, -1.0, 0.5, 0.25]);
    let (y, dy) = jvp(
        |a: &[Array]| Ok(vec![cube(&a[0])?]),
        &[x],
        std::slice::from_ref(&t),
    )
    .unwrap();
    let cubes: Vec<f64> = xs.iter().map(|&x| (x as f64).powi(3)).collect();
    assert_near("x³", &vals(&y[0]), &cubes);
    let want: Vec<f64> = three_x2
        .iter()
        .zip(vals(&t))
        .map(|(d, t)| d * t as f64)
        .collect();
    assert_near("jvp of x³", &vals(&dy[0]), &want);
}

#[test]
fn the_decomposing_rewrite_serves_a_user_primitive() {
    let xs = [-1.5f32, 0.5, 2.0];
    let want: Vec<f64> = xs.iter().map(|&x| (x as f64).powi(3) + x as f64).collect();
    let f = |a: &[Array]| Ok(vec![ops::add(&cube(&a[0])?, &a[0])?]);
    let names = |t: &mlx::export::FunctionTable| -> Vec<String> {
        t.functions[0]
            .entries
            .iter()
            .map(|e| e.primitive.name().to_string())
            .collect()
    };

    // The native format records the user primitive; the rewrite replaces it
    // by its fallback graph.
    let path = tmp("cube-native.bin");
    export_function(&path, f, &[f32s(&xs)], &ExportOptions::default()).unwrap();
    let imported = import_function(&path).unwrap();
    assert!(names(imported.table()).contains(&"TestCube".to_string()));
    let after = names(&decompose_fast(imported.table()).unwrap());
    assert!(
        !after.contains(&"TestCube".to_string()) && after.contains(&"Multiply".to_string()),
        "decomposed entries {after:?}"
    );
    let got = imported.call(&[f32s(&xs)]).unwrap();
    assert_near("native", &vals(&got[0]), &want);

    // MLX's format cannot name a primitive MLX lacks: a plain export is
    // refused with the reason, and `decompose_fast` writes the fallback.
    let mlx = |decompose_fast| ExportOptions {
        format: Format::Mlx,
        decompose_fast,
        ..ExportOptions::default()
    };
    let path = tmp("cube-mlx.bin");
    let err = export_function(&path, f, &[f32s(&xs)], &mlx(false)).unwrap_err();
    assert!(
        err.to_string()
            .contains("TestCube is not in MLX's registry"),
        "{err}"
    );
    export_function(&path, f, &[f32s(&xs)], &mlx(true)).unwrap();
    let imported = import_function(&path).unwrap();
    let entries = names(imported.table());
    assert!(
        !entries.contains(&"TestCube".to_string()) && entries.contains(&"Multiply".to_string()),
        "MLX file entries {entries:?}"
    );
    let got = imported.call(&[f32s(&xs)]).unwrap();
    assert_near("MLX file", &vals(&got[0]), &want);
}

#[test]
fn a_fused_chain_reaching_an_exporter_is_written_as_its_steps() {
    // A fixed-shape import runs `exp(x·x) + x` as one fused node, which no
    // file can hold: exporting a function that calls it records the steps.
    let xs = [0.1f32, -0.4, 0.7, 1.2];
    let inner = |a: &[Array]| {
        let x = &a[0];
        Ok(vec![ops::add(&ops::exp(&ops::multiply(x, x)?)?, x)?])
    };
    let want: Vec<f64> = xs
        .iter()
        .map(|&x| ((x as f64) * (x as f64)).exp() + x as f64)
        .collect();
    for format in [Format::Native, Format::Mlx] {
        let opts = ExportOptions {
            format,
            ..ExportOptions::default()
        };
        let first = tmp(&format!("inner-{format:?}.bin"));
        export_function(&first, inner, &[f32s(&xs)], &opts).unwrap();
        let imported = import_function(&first).unwrap();
        let outer = |a: &[Array]| imported.call(a);
        let second = tmp(&format!("outer-{format:?}.bin"));
        export_function(&second, outer, &[f32s(&xs)], &opts).unwrap();
        let again = import_function(&second).unwrap();
        let names: Vec<&str> = again.table().functions[0]
            .entries
            .iter()
            .map(|e| e.primitive.name())
            .collect();
        assert!(
            !names.contains(&"Compiled") && names.contains(&"Exp"),
            "{format:?}: the re-exported file holds {names:?}"
        );
        assert_near(
            "re-exported",
            &vals(&again.call(&[f32s(&xs)]).unwrap()[0]),
            &want,
        );
    }
}
