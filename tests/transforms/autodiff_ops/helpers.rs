//! Shared checks: finite differences, jvp/vjp duality, MLX fixtures.

use crate::common::{self, as_f64, npy};
use mlx::{ops, transforms, Array, Dtype, Error, Primitive, Result};

pub(crate) type Fun<'a> = &'a dyn Fn(&[Array]) -> Result<Array>;

/// Deterministic values in [-1, 1) from the shared generator.
pub(crate) fn values(n: usize, seed: u64) -> Vec<f64> {
    common::Lcg::new(seed).uniform(-1.0, 1.0, n)
}

/// An array of `shape` and `dtype` from `vals`.
pub(crate) fn arr(vals: &[f64], shape: &[i32], dtype: Dtype) -> Array {
    let a = Array::from_slice(vals, shape).unwrap();
    if dtype == Dtype::Float64 {
        a
    } else {
        ops::astype(&a, dtype).unwrap()
    }
}

pub(crate) fn rand(shape: &[i32], dtype: Dtype, seed: u64) -> Array {
    let n = shape.iter().product::<i32>() as usize;
    arr(&values(n, seed), shape, dtype)
}

/// `f` with only the inputs at `diff` as function arguments (the others,
/// e.g. indices, are captured constants).
pub(crate) fn restrict<'a>(
    f: Fun<'a>,
    inputs: &'a [Array],
    diff: &'a [usize],
) -> impl Fn(&[Array]) -> Result<Vec<Array>> + 'a {
    move |d: &[Array]| {
        let mut full = inputs.to_vec();
        for (&i, a) in diff.iter().zip(d) {
            full[i] = a.clone();
        }
        Ok(vec![f(&full)?])
    }
}

pub(crate) fn pick(inputs: &[Array], diff: &[usize]) -> Vec<Array> {
    diff.iter().map(|&i| inputs[i].clone()).collect()
}

/// Reverse-mode cotangents of the inputs at `diff`.
pub(crate) fn vjp(f: Fun, inputs: &[Array], diff: &[usize], cot: &Array) -> Result<Vec<Array>> {
    let (_, g) = transforms::vjp(
        restrict(f, inputs, diff),
        &pick(inputs, diff),
        std::slice::from_ref(cot),
    )?;
    Ok(g)
}

/// `<a, b>` over the finite entries of `a` (an exclusive max/min/logaddexp
/// scan starts with an infinite identity, which no input moves).
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .filter(|(x, _)| x.is_finite())
        .map(|(x, y)| x * y)
        .sum()
}

/// Compares the vjp of `f` with central differences of `<f(x), c>`
/// for a fixed random cotangent `c`.
pub(crate) fn check_fd(f: Fun, inputs: &[Array], diff: &[usize], eps: f64, rtol: f64, atol: f64) {
    let out = f(inputs).unwrap();
    let cot = rand(out.shape(), out.dtype(), 99);
    let c = as_f64(&cot);
    let grads = vjp(f, inputs, diff, &cot).unwrap();
    for (&i, g) in diff.iter().zip(&grads) {
        assert_eq!(g.shape(), inputs[i].shape(), "gradient shape of input {i}");
        let (g, x) = (as_f64(g), as_f64(&inputs[i]));
        for j in 0..x.len() {
            let at = |d: f64| {
                let mut v = x.clone();
                v[j] += d;
                let mut full = inputs.to_vec();
                full[i] = arr(&v, inputs[i].shape(), inputs[i].dtype());
                dot(&as_f64(&f(&full).unwrap()), &c)
            };
            let fd = (at(eps) - at(-eps)) / (2.0 * eps);
            assert!(
                (g[j] - fd).abs() <= atol + rtol * fd.abs(),
                "input {i} element {j}: vjp {} but finite difference {fd}",
                g[j]
            );
        }
    }
}

/// Checks `<jvp(t), c> = Σ <t_i, vjp(c)_i>` for random t and c.
pub(crate) fn check_dual(f: Fun, inputs: &[Array], diff: &[usize], tol: f64) {
    let primals = pick(inputs, diff);
    let tangents: Vec<Array> = primals
        .iter()
        .enumerate()
        .map(|(k, p)| rand(p.shape(), p.dtype(), 7 + k as u64))
        .collect();
    let (outs, jv) = transforms::jvp(restrict(f, inputs, diff), &primals, &tangents).unwrap();
    let cot = rand(outs[0].shape(), outs[0].dtype(), 5);
    let lhs = dot(&as_f64(&jv[0]), &as_f64(&cot));
    let grads = vjp(f, inputs, diff, &cot).unwrap();
    let rhs: f64 = grads
        .iter()
        .zip(&tangents)
        .map(|(g, t)| dot(&as_f64(g), &as_f64(t)))
        .sum();
    assert!(
        (lhs - rhs).abs() <= tol * (1.0 + lhs.abs()),
        "<J t, c> = {lhs} but <t, J^T c> = {rhs}"
    );
}

pub(crate) fn f64s(shape: &[i32], seed: u64) -> Array {
    rand(shape, Dtype::Float64, seed)
}

pub(crate) fn f32s(shape: &[i32], seed: u64) -> Array {
    rand(shape, Dtype::Float32, seed)
}

pub(crate) fn ints(v: &[i32], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

/// The function applying primitive `p` to all its arguments.
pub(crate) fn apply<P: Primitive + Clone>(p: P) -> impl Fn(&[Array]) -> Result<Array> {
    move |v: &[Array]| Array::from_primitive(p.clone(), v.to_vec())
}

/// MLX fixture case: inputs, cotangent (reshaped to our output when MLX's
/// op squeezes differently) and MLX's gradients of the inputs at `diff`.
pub(crate) fn check_mlx(name: &str, f: Fun, n_inputs: usize, diff: &[usize], rtol: f64, atol: f64) {
    let load = |part: String| npy(&format!("autodiff_ops/{name}_{part}.npy"));
    let inputs: Vec<Array> = (0..n_inputs).map(|i| load(format!("in{i}"))).collect();
    let out = f(&inputs).unwrap();
    let cot = ops::reshape(&load("cot".into()), out.shape()).unwrap();
    let grads = vjp(f, &inputs, diff, &cot).unwrap();
    for (&i, g) in diff.iter().zip(&grads) {
        let want = load(format!("grad{i}"));
        for part in [ops::real, ops::imag] {
            let (g, w) = if want.dtype() == Dtype::Complex64 {
                (part(g).unwrap(), part(&want).unwrap())
            } else {
                (g.clone(), want.clone())
            };
            common::assert_close(&g, &w, rtol, atol);
        }
    }
}

/// The vjp of `f` with respect to every input fails naming `primitive`.
pub(crate) fn assert_not_differentiable(f: Fun, inputs: &[Array], primitive: &str) {
    let out = f(inputs).unwrap();
    let all: Vec<usize> = (0..inputs.len()).collect();
    let cot = ops::zeros_like(&out).unwrap();
    match vjp(f, inputs, &all, &cot) {
        Err(Error::NotDifferentiable(m)) => assert!(m.contains(primitive), "{m}"),
        other => panic!("expected NotDifferentiable naming {primitive}, found {other:?}"),
    }
}
