//! `compile`: same results as eager, correct caching, fusion on large and strided inputs.

use mlx::transforms::compile;
use mlx::{ops, Array};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn ramp(n: usize, k: f32) -> Vec<f32> {
    (0..n).map(|i| ((i * 31 % 97) as f32 - 48.0) * k).collect()
}

fn fma(a: &[Array]) -> mlx::Result<Vec<Array>> {
    Ok(vec![ops::add(&ops::multiply(&a[0], &a[1])?, &a[2])?])
}

#[test]
fn fused_chain_matches_the_closed_form_on_many_chunks() {
    let n = 100_003; // several chunks, ragged last chunk
    let (x, y, z) = (ramp(n, 0.5), ramp(n, -0.25), ramp(n, 2.0));
    let a = Array::from_slice(&x, &[n as i32]).unwrap();
    let b = Array::from_slice(&y, &[n as i32]).unwrap();
    let c = Array::from_slice(&z, &[n as i32]).unwrap();
    let f = compile(fma);
    let got = f(&[a, b, c]).unwrap()[0].to_vec::<f32>().unwrap();
    for i in 0..n {
        assert_eq!(got[i], x[i] * y[i] + z[i], "element {i}");
    }
}

#[test]
fn fused_chain_reads_broadcast_and_transposed_inputs() {
    let a = Array::from_slice(&ramp(12, 1.0), &[3, 4]).unwrap();
    let at = ops::transpose(&a, &[]).unwrap(); // (4, 3), strided
    let s = Array::scalar(3.0f32);
    let f = compile(|x: &[Array]| Ok(vec![ops::subtract(&ops::multiply(&x[0], &x[1])?, &x[0])?]));
    let got = f(&[at.clone(), s.clone()]).unwrap()[0]
        .to_vec::<f32>()
        .unwrap();
    let want = ops::subtract(&ops::multiply(&at, &s).unwrap(), &at)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(got, want);
    let xs = at.to_vec::<f32>().unwrap();
    assert_eq!(got, xs.iter().map(|v| v * 3.0 - v).collect::<Vec<_>>());
}

#[test]
fn cache_retraces_for_a_new_shape_or_dtype_only() {
    let traces = Arc::new(AtomicUsize::new(0));
    let t = traces.clone();
    let f = compile(move |a: &[Array]| {
        t.fetch_add(1, Ordering::SeqCst);
        Ok(vec![ops::add(&a[0], &a[0])?])
    });
    let x2 = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    assert_eq!(
        f(std::slice::from_ref(&x2)).unwrap()[0]
            .to_vec::<f32>()
            .unwrap(),
        vec![2.0, 4.0]
    );
    f(&[Array::from_slice(&[5.0f32, 6.0], &[2]).unwrap()]).unwrap();
    assert_eq!(traces.load(Ordering::SeqCst), 1);
    f(&[Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap()]).unwrap();
    assert_eq!(traces.load(Ordering::SeqCst), 2);
    let out = f(&[Array::from_slice(&[1i32, 2], &[2]).unwrap()]).unwrap();
    assert_eq!(traces.load(Ordering::SeqCst), 3);
    assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![2, 4]);
}

#[test]
fn evaluating_inside_a_compiled_function_is_an_error() {
    let f = compile(|a: &[Array]| {
        let y = ops::add(&a[0], &a[0])?;
        y.eval()?;
        Ok(vec![y])
    });
    let e = f(&[Array::from_slice(&[1.0f32], &[1]).unwrap()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot evaluate"), "{e}");
}

#[test]
fn an_elementwise_chain_becomes_one_fused_node_over_the_inputs() {
    // exp(a * b + c) - a / 2, then tanh: six element-wise steps.
    let f = compile(|x: &[Array]| {
        let t = ops::add(&ops::multiply(&x[0], &x[1])?, &x[2])?;
        let u = ops::subtract(&ops::exp(&t)?, &ops::divide(&x[0], &Array::scalar(2.0f32))?)?;
        Ok(vec![ops::tanh(&u)?])
    });
    let n = 1000;
    let (xa, xb, xc) = (ramp(n, 0.01), ramp(n, -0.02), ramp(n, 0.005));
    let args = [&xa, &xb, &xc].map(|v| Array::from_slice(v, &[n as i32]).unwrap());
    let out = &f(&args).unwrap()[0];
    // Before evaluation the result is a single Compiled node over the three
    // arguments and the scalar (broadcast to their shape, a zero-copy view):
    // no element-wise node, so no intermediate array, is left in the graph.
    let (node, _) = out.node().expect("lazy until evaluated");
    assert_eq!(node.primitive().name(), "Compiled");
    let mut names = Vec::new();
    for a in node.inputs() {
        match a.node() {
            None => names.push("data".to_string()),
            Some((n, _)) => {
                names.push(n.primitive().name().to_string());
                assert!(n.inputs().iter().all(|i| i.node().is_none()));
            }
        }
    }
    names.sort();
    assert_eq!(names, ["Broadcast", "data", "data", "data"]);
    let got = out.to_vec::<f32>().unwrap();
    for i in 0..n {
        let want = ((f64::from(xa[i]) * f64::from(xb[i]) + f64::from(xc[i])).exp()
            - f64::from(xa[i]) / 2.0)
            .tanh();
        assert!(
            (f64::from(got[i]) - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "element {i}: {} vs {want}",
            got[i]
        );
    }
}

#[test]
fn a_shared_intermediate_is_kept_and_the_rest_still_fuses() {
    // `t` is an output and also feeds the rest: it must be materialised.
    let f = compile(|x: &[Array]| {
        let t = ops::multiply(&x[0], &x[0])?;
        Ok(vec![t.clone(), ops::add(&ops::sqrt(&t)?, &x[0])?])
    });
    let v: Vec<f32> = (0..64).map(|i| i as f32 * 0.5).collect();
    let outs = f(&[Array::from_slice(&v, &[64]).unwrap()]).unwrap();
    assert_eq!(
        outs[0].to_vec::<f32>().unwrap(),
        v.iter().map(|x| x * x).collect::<Vec<_>>()
    );
    assert_eq!(
        outs[1].to_vec::<f32>().unwrap(),
        v.iter().map(|x| (x * x).sqrt() + x).collect::<Vec<_>>()
    );
}

#[test]
fn chains_whose_steps_lack_chunk_kernels_take_the_array_path_and_agree_with_eager() {
    // Add/Multiply and float32 Exp run on raw chunks; Less does not, so
    // the chain through it uses the general path for every chunk (20,003
    // elements: 3 chunks).
    let n = 20_003;
    let a = Array::from_slice(&ramp(n, 0.01), &[n as i32]).unwrap();
    let b = Array::from_slice(&ramp(n, -0.02), &[n as i32]).unwrap();
    let f = |x: &[Array]| -> mlx::Result<Vec<Array>> {
        let e = ops::exp(&ops::multiply(&x[0], &x[1])?)?;
        let s = ops::add(&e, &x[0])?;
        Ok(vec![s.clone(), ops::less(&s, &x[1])?])
    };
    let want = f(&[a.clone(), b.clone()]).unwrap();
    let got = compile(f)(&[a, b]).unwrap();
    assert_eq!(
        got[0].to_vec::<f32>().unwrap(),
        want[0].to_vec::<f32>().unwrap()
    );
    assert_eq!(
        got[1].to_vec::<bool>().unwrap(),
        want[1].to_vec::<bool>().unwrap()
    );
}

/// Float32 unary math (sqrt, rsqrt, sigmoid, exp, sin) runs on raw chunks
/// inside a fused chain, also on a value broadcast with strides on its
/// length-1 axes; the results are eager's bits, and the closed form's.
/// A bfloat16 chain (no chunk kernel) agrees with eager too.
#[test]
fn float32_unary_math_in_a_fused_chain_matches_eager_bit_for_bit() {
    let n = 9_000; // two chunks
    let v: Vec<f32> = ramp(n, 0.01).iter().map(|x| x + 0.6).collect();
    let x = Array::from_slice(&v, &[1, 1, n as i32]).unwrap();
    // One value seen as [1, 1, n]: strides (1, 1, 0).
    let eps = ops::broadcast_to(
        &Array::from_slice(&[1e-5f32], &[1, 1, 1]).unwrap(),
        &[1, 1, n as i32],
    )
    .unwrap();
    let f = |a: &[Array]| -> mlx::Result<Vec<Array>> {
        let s = ops::sqrt(&ops::add(&ops::multiply(&a[0], &a[0])?, &a[1])?)?;
        let r = ops::rsqrt(&ops::add(&s, &a[1])?)?;
        let g = ops::multiply(&ops::sigmoid(&a[0])?, &a[0])?;
        let e = ops::add(&ops::exp(&a[0])?, &ops::sin(&a[0])?)?;
        Ok(vec![s, r, g, e])
    };
    let want = f(&[x.clone(), eps.clone()]).unwrap();
    let got = compile(f)(&[x, eps]).unwrap();
    for (g, w) in got.iter().zip(&want) {
        let (g, w) = (g.to_vec::<f32>().unwrap(), w.to_vec::<f32>().unwrap());
        assert!(g.iter().zip(&w).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
    let s = got[0].to_vec::<f32>().unwrap();
    for (i, &xi) in v.iter().enumerate() {
        assert_eq!(s[i], (xi * xi + 1e-5).sqrt(), "element {i}");
    }

    let h = ops::astype(
        &Array::from_slice(&v, &[n as i32]).unwrap(),
        mlx::Dtype::Bfloat16,
    )
    .unwrap();
    let f = |a: &[Array]| -> mlx::Result<Vec<Array>> {
        Ok(vec![ops::sqrt(&ops::multiply(&a[0], &a[0])?)?])
    };
    let want = ops::astype(
        &f(std::slice::from_ref(&h)).unwrap()[0],
        mlx::Dtype::Float32,
    )
    .unwrap();
    let got = ops::astype(
        &compile(f)(std::slice::from_ref(&h)).unwrap()[0],
        mlx::Dtype::Float32,
    )
    .unwrap();
    assert_eq!(got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
}
