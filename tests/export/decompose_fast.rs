//! `ExportOptions::decompose_fast`: `mlx::fast` ops exported as the graphs
//! MLX's CPU build writes (so Python MLX on CPU can run the file) compute
//! what the fused kernels compute, for every variant: norms with and
//! without weights, RoPE (traditional or not, partial dims, scalar and
//! per-batch offsets, custom freqs, inverse), attention (causal, bool and
//! additive masks, grouped-query heads, sinks), in f32, f16 and bf16.

use mlx::fast::{self, Mask};
use mlx::{ops, random, Array, Dtype, ExportOptions, Format};

fn normal(seed: u64, shape: &[i32], dtype: Dtype) -> Array {
    let k = random::key(seed);
    let a = random::normal(shape, Dtype::Float32, None, None, Some(&k)).unwrap();
    ops::astype(&a, dtype).unwrap()
}

/// Exports `f` decomposed in MLX's format, checks no fused primitive is
/// left, and compares the imported function with calling `f` directly.
fn check<F>(name: &str, f: F, args: &[Array], tol: f64)
where
    F: Fn(&[Array]) -> mlx::Result<Vec<Array>>,
{
    let path = std::env::temp_dir().join(format!("decompose-{}-{name}.mlxfn", std::process::id()));
    let opts = ExportOptions {
        format: Format::Mlx,
        decompose_fast: true,
        ..Default::default()
    };
    mlx::export_function(&path, &f, args, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    let g = mlx::import_function(&path).unwrap();
    for t in &g.table().functions {
        for e in &t.entries {
            assert!(
                !mlx::export::is_fused_fast(&*e.primitive),
                "{name}: {} left in the file",
                e.primitive.name()
            );
        }
    }
    let got = g.call(args).unwrap_or_else(|e| panic!("{name}: {e}"));
    let want = f(args).unwrap();
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_eq!(a.shape(), b.shape(), "{name} output {i}");
        assert_eq!(a.dtype(), b.dtype(), "{name} output {i}");
        let x = ops::astype(a, Dtype::Float64)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        let y = ops::astype(b, Dtype::Float64)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        let (mut worst, mut at) = (0.0f64, 0);
        for (k, (p, q)) in x.iter().zip(&y).enumerate() {
            let excess = (p - q).abs() - tol * (1.0 + q.abs());
            if excess > worst || excess.is_nan() {
                (worst, at) = (excess, k);
            }
        }
        assert!(
            worst <= 0.0,
            "{name} output {i}: element {at}: decomposed {}, fused {} (tol {tol})",
            x[at],
            y[at]
        );
    }
    std::fs::remove_file(&path).ok();
}

fn tol(d: Dtype) -> f64 {
    match d {
        Dtype::Float16 => 4e-3,
        Dtype::Bfloat16 => 3e-2,
        _ => 2e-5,
    }
}

#[test]
fn norms() {
    for d in [Dtype::Float32, Dtype::Float16, Dtype::Bfloat16] {
        let x = normal(1, &[3, 5, 16], d);
        let w = normal(2, &[16], d);
        let b = normal(3, &[16], d);
        check(
            &format!("norms_{d}"),
            |a: &[Array]| {
                Ok(vec![
                    fast::rms_norm(&a[0], Some(&a[1]), 1e-5)?,
                    fast::rms_norm(&a[0], None, 1e-4)?,
                    fast::layer_norm(&a[0], Some(&a[1]), Some(&a[2]), 1e-5)?,
                    fast::layer_norm(&a[0], None, Some(&a[2]), 1e-5)?,
                    fast::layer_norm(&a[0], None, None, 1e-3)?,
                ])
            },
            &[x, w, b],
            tol(d),
        );
    }
}

#[test]
fn rope_variants() {
    for d in [Dtype::Float32, Dtype::Float16] {
        let x = normal(4, &[2, 3, 7, 12], d);
        let x3 = normal(5, &[2, 7, 8], d);
        let offsets = Array::from_slice(&[0i32, 5], &[2]).unwrap();
        let freqs = ops::add(
            &ops::abs(&normal(6, &[4], Dtype::Float32)).unwrap(),
            &Array::scalar(0.5f32),
        )
        .unwrap();
        check(
            &format!("rope_{d}"),
            |a: &[Array]| {
                Ok(vec![
                    fast::rope(&a[0], 12, false, Some(10000.0), 1.0, 0, None)?,
                    fast::rope(&a[0], 8, true, Some(500.0), 0.5, 3, None)?,
                    fast::rope(&a[0], 8, false, None, 1.0, &a[2], Some(&a[3]))?,
                    fast::rope_inverse(&a[0], 12, true, Some(10000.0), 1.0, 2, None)?,
                    fast::rope(&a[1], 8, false, Some(10000.0), 2.0, 1, None)?,
                ])
            },
            &[x, x3, offsets, freqs],
            tol(d),
        );
    }
}

#[test]
fn attention_variants() {
    for d in [Dtype::Float32, Dtype::Float16, Dtype::Bfloat16] {
        let q = normal(7, &[2, 4, 5, 8], d);
        let k = normal(8, &[2, 2, 6, 8], d);
        let v = normal(9, &[2, 2, 6, 4], d);
        let k4 = normal(10, &[2, 4, 6, 8], d);
        let v4 = normal(11, &[2, 4, 6, 4], d);
        let bool_mask = ops::greater(
            &normal(12, &[5, 6], Dtype::Float32),
            &Array::scalar(-0.8f32),
        )
        .unwrap();
        let add_mask = normal(13, &[2, 1, 5, 6], d);
        let sinks = normal(14, &[4], d);
        check(
            &format!("attention_{d}"),
            |a: &[Array]| {
                let (q, k, v, k4, v4) = (&a[0], &a[1], &a[2], &a[3], &a[4]);
                Ok(vec![
                    fast::scaled_dot_product_attention(q, k4, v4, 0.35, None)?,
                    fast::scaled_dot_product_attention(q, k4, v4, 0.35, Some(Mask::Causal))?,
                    fast::scaled_dot_product_attention(q, k, v, 0.35, Some(Mask::Causal))?,
                    fast::scaled_dot_product_attention(q, k, v, 0.35, Some(Mask::Array(&a[5])))?,
                    fast::scaled_dot_product_attention(q, k4, v4, 0.35, Some(Mask::Array(&a[6])))?,
                    fast::scaled_dot_product_attention(q, k, v, 0.35, Some(Mask::Array(&a[6])))?,
                    fast::scaled_dot_product_attention_sinks(
                        q,
                        k,
                        v,
                        0.35,
                        Some(Mask::Causal),
                        Some(&a[7]),
                    )?,
                    fast::scaled_dot_product_attention_sinks(q, k4, v4, 0.35, None, Some(&a[7]))?,
                ])
            },
            &[q, k, v, k4, v4, bool_mask, add_mask, sinks],
            tol(d),
        );
    }
}

/// Without the option the fused primitives are written (as MLX's GPU build does).
#[test]
fn fused_primitives_are_kept_by_default() {
    let path = std::env::temp_dir().join(format!("fused-{}.mlxfn", std::process::id()));
    let opts = ExportOptions {
        format: Format::Mlx,
        ..Default::default()
    };
    mlx::export_function(
        &path,
        |a: &[Array]| Ok(vec![fast::rms_norm(&a[0], None, 1e-5)?]),
        &[normal(15, &[2, 8], Dtype::Float32)],
        &opts,
    )
    .unwrap();
    let g = mlx::import_function(&path).unwrap();
    let names: Vec<&str> = g.table().functions[0]
        .entries
        .iter()
        .map(|e| e.primitive.name())
        .collect();
    assert!(names.contains(&"RMSNorm"), "{names:?}");
    std::fs::remove_file(&path).ok();
}
