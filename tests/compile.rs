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
