//! Gradients against real MLX (`mx.grad`, fixtures made by
//! tests/fixtures/autodiff/generate.py), and gradients taken inside traced
//! functions: exported (both formats), imported and called, and compiled.

use crate::common;

use common::{assert_close, npy};
use mlx::transforms::{compile, value_and_grad};
use mlx::{ops, Array, ExportOptions, Format, Result};

fn f32s(v: f32) -> Array {
    Array::scalar(v)
}

/// MLX's `mlp_loss`: relu MLP, mean cross-entropy from logsumexp and a
/// one-hot label matrix. Arguments (w1, b1, w2, b2, x, onehot).
fn mlp_loss(a: &[Array]) -> Result<Vec<Array>> {
    let h = ops::maximum(&ops::add(&ops::matmul(&a[4], &a[0])?, &a[1])?, &f32s(0.0))?;
    let logits = ops::add(&ops::matmul(&h, &a[2])?, &a[3])?;
    let lse = ops::logsumexp(&logits, &[-1], false)?;
    let picked = ops::sum(&ops::multiply(&logits, &a[5])?, &[-1], false)?;
    Ok(vec![ops::mean(&ops::subtract(&lse, &picked)?, &[], false)?])
}

fn mlp_args() -> Vec<Array> {
    ["w1", "b1", "w2", "b2", "x", "onehot"]
        .iter()
        .map(|n| npy(&format!("autodiff/mlp_{n}.npy")))
        .collect()
}

fn check_mlp(loss: &Array, grads: &[Array]) {
    assert_close(loss, &npy("autodiff/mlp_loss.npy"), 1e-5, 1e-6);
    for (g, n) in grads.iter().zip(["w1", "b1", "w2", "b2"]) {
        assert_close(g, &npy(&format!("autodiff/mlp_grad_{n}.npy")), 1e-4, 1e-6);
    }
}

#[test]
fn mlp_cross_entropy_gradients_match_mlx() {
    let (loss, grads) = value_and_grad(mlp_loss, &[0, 1, 2, 3])(&mlp_args()).unwrap();
    assert_eq!(grads.len(), 4);
    check_mlp(&loss[0], &grads);
}

#[test]
fn softmax_and_logsumexp_gradients_match_mlx() {
    let f = |a: &[Array]| {
        let s = ops::sum(
            &ops::multiply(&ops::softmax(&a[0], &[-1])?, &a[1])?,
            &[],
            false,
        )?;
        let l = ops::sum(
            &ops::multiply(&ops::logsumexp(&a[0], &[0], false)?, &a[2])?,
            &[],
            false,
        )?;
        Ok(vec![ops::add(&s, &l)?])
    };
    let args: Vec<Array> = ["a", "w", "v"]
        .iter()
        .map(|n| npy(&format!("autodiff/soft_{n}.npy")))
        .collect();
    let g = mlx::transforms::grad(f, &[0])(&args).unwrap();
    assert_close(&g[0], &npy("autodiff/soft_grad_a.npy"), 1e-4, 1e-6);
}

#[test]
fn slicing_and_concatenation_gradients_match_mlx() {
    let cut = |a: &[Array]| {
        let (p, q) = (&a[0], &a[1]);
        let top = ops::slice(p, &[1, 0], &[4, 4], &[1, 2])?;
        let flipped = ops::slice(p, &[4, 1], &[-6, 3], &[-1, 1])?;
        let joined = ops::concatenate(
            &[
                ops::multiply(&top, &ops::slice(q, &[0, 0], &[3, 2], &[])?)?,
                ops::power(&ops::slice(q, &[0, 1], &[3, 3], &[])?, &f32s(2.0))?,
            ],
            0,
        )?;
        let padded = ops::pad(&joined, &[(1, 0), (0, 2)], &f32s(0.0))?;
        let n = padded.size() as f64;
        let ramp = ops::reshape(
            &ops::arange(0.0, n, 1.0, mlx::Dtype::Int32)?,
            padded.shape(),
        )?;
        let s = ops::split_at(&flipped, &[2], 0)?;
        let first = ops::sum(&ops::multiply(&ops::tanh(&padded)?, &ramp)?, &[], false)?;
        let second = ops::sum(
            &ops::matmul(
                &ops::transpose(&s[0], &[])?,
                &ops::slice(&s[1], &[0, 0], &[2, 2], &[])?,
            )?,
            &[],
            false,
        )?;
        let third = ops::sum(
            &ops::multiply(
                &ops::max(p, &[1], false)?,
                &ops::slice(&ops::prod(q, &[0], false)?, &[0], &[1], &[])?,
            )?,
            &[],
            false,
        )?;
        Ok(vec![ops::add(&ops::add(&first, &second)?, &third)?])
    };
    let args = [npy("autodiff/cut_p.npy"), npy("autodiff/cut_q.npy")];
    let g = mlx::transforms::grad(cut, &[0, 1])(&args).unwrap();
    assert_close(&g[0], &npy("autodiff/cut_grad_p.npy"), 1e-4, 1e-5);
    assert_close(&g[1], &npy("autodiff/cut_grad_q.npy"), 1e-4, 1e-5);
}

/// One SGD step with the backward pass inside: returns the loss and the
/// updated parameters (MLX's train_mlp exports such a step).
fn sgd_step(a: &[Array]) -> Result<Vec<Array>> {
    let (loss, grads) = value_and_grad(mlp_loss, &[0, 1, 2, 3])(a)?;
    let lr = f32s(0.5);
    let mut out = vec![loss[0].clone()];
    for (p, g) in a.iter().zip(&grads) {
        out.push(ops::subtract(p, &ops::multiply(&lr, g)?)?);
    }
    Ok(out)
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-autodiff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn exported_value_and_grad_of_an_mlp_matches_eager_and_mlx() {
    let args = mlp_args();
    let eager = sgd_step(&args).unwrap();
    for format in [Format::Native, Format::Mlx] {
        let path = temp(&format!("sgd_{format:?}.mlxfn"));
        let opts = ExportOptions {
            format,
            ..ExportOptions::default()
        };
        mlx::export_function(&path, sgd_step, &args, &opts).unwrap();
        let imported = mlx::import_function(&path).unwrap();
        let out = imported.call(&args).unwrap();
        assert_eq!(out.len(), 5);
        for (o, e) in out.iter().zip(&eager) {
            assert_close(o, e, 1e-6, 1e-7);
        }
        // The updates are p - 0.5 * grad with MLX's gradients.
        let grads: Vec<Array> = args[..4]
            .iter()
            .zip(&out[1..])
            .map(|(p, new)| ops::multiply(&ops::subtract(p, new).unwrap(), &f32s(2.0)).unwrap())
            .collect();
        check_mlp(&out[0], &grads);
        // A second call with other inputs runs the same graph.
        let shifted: Vec<Array> = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if i < 4 {
                    ops::multiply(a, &f32s(0.5)).unwrap()
                } else {
                    a.clone()
                }
            })
            .collect();
        let again = imported.call(&shifted).unwrap();
        for (o, e) in again.iter().zip(&sgd_step(&shifted).unwrap()) {
            assert_close(o, e, 1e-6, 1e-7);
        }
    }
}

#[test]
fn compiled_gradient_matches_eager() {
    let args = mlp_args();
    let eager = sgd_step(&args).unwrap();
    let step = compile(sgd_step);
    for _ in 0..2 {
        let out = step(&args).unwrap();
        for (o, e) in out.iter().zip(&eager) {
            assert_close(o, e, 1e-6, 1e-7);
        }
    }
}

#[test]
fn gradient_inside_a_trace_of_a_computed_primal() {
    // The primal of the inner grad is a lazy node built inside the trace.
    let f = |a: &[Array]| {
        let w = ops::multiply(&a[0], &f32s(3.0))?;
        let g = mlx::transforms::grad(
            |b: &[Array]| Ok(vec![ops::sum(&ops::square(&b[0])?, &[], false)?]),
            &[0],
        )(&[w])?;
        Ok(g)
    };
    let x = Array::from_slice(&[1.0f32, -2.0], &[2]).unwrap();
    let path = temp("inner_grad.mlxfn");
    mlx::export_function(
        &path,
        f,
        std::slice::from_ref(&x),
        &ExportOptions::default(),
    )
    .unwrap();
    let out = mlx::import_function(&path).unwrap().call(&[x]).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![6.0, -12.0]);
}
