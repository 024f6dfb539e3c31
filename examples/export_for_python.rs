//! Writes functions exported from Rust in MLX's `.mlxfn` format, with their
//! inputs and the outputs Rust computes, for `tests/python/check_rust_exports.py`
//! to import with Python MLX and compare.
//!
//! Usage: `cargo run --example export_for_python -- OUTDIR`

use mlx::fast::{self, Mask};
use mlx::io::save_npy;
use mlx::{ops, Array, Dtype, ExportOptions, Format, Kwargs};
use std::fmt::Write as _;
use std::path::Path;

fn arr(v: &[f32], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919 % 113) as f32 / 113.0 - 0.5) * scale)
        .collect()
}

/// One call: inputs (positional, keyword) and the outputs Rust computed.
struct Call {
    args: Vec<Array>,
    kwargs: Kwargs,
}

fn write_case(
    dir: &Path,
    name: &str,
    f: &mlx::ImportedFunction,
    calls: &[Call],
    manifest: &mut String,
) {
    write_case_with(
        dir,
        name,
        |c| f.call_kwargs(&c.args, &c.kwargs),
        calls,
        manifest,
    )
}

/// [`write_case`] with the expected outputs computed by `run` (e.g. directly
/// in Rust rather than through the exported file).
fn write_case_with(
    dir: &Path,
    name: &str,
    run: impl Fn(&Call) -> mlx::Result<Vec<Array>>,
    calls: &[Call],
    manifest: &mut String,
) {
    for (ci, c) in calls.iter().enumerate() {
        let outs = run(c).unwrap();
        let mut args = Vec::new();
        for (i, a) in c.args.iter().enumerate() {
            let file = format!("{name}_c{ci}_arg{i}.npy");
            save_npy(dir.join(&file), a).unwrap();
            args.push(format!("\"{file}\""));
        }
        let mut kws = Vec::new();
        for (k, a) in &c.kwargs {
            let file = format!("{name}_c{ci}_kw_{k}.npy");
            save_npy(dir.join(&file), a).unwrap();
            kws.push(format!("\"{k}\": \"{file}\""));
        }
        let mut outputs = Vec::new();
        for (i, a) in outs.iter().enumerate() {
            let file = format!("{name}_c{ci}_out{i}.npy");
            save_npy(dir.join(&file), a).unwrap();
            outputs.push(format!("\"{file}\""));
        }
        let _ = writeln!(
            manifest,
            "{{\"file\": \"{name}.mlxfn\", \"args\": [{}], \"kwargs\": {{{}}}, \"outputs\": [{}]}}",
            args.join(", "),
            kws.join(", "),
            outputs.join(", ")
        );
    }
}

fn main() -> mlx::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/rust-exports".into());
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).map_err(|e| mlx::Error::io(dir, e))?;
    let mlx_fmt = ExportOptions {
        format: Format::Mlx,
        ..Default::default()
    };
    let mut manifest = String::new();

    // Element-wise with a captured constant and a scalar.
    let w = arr(&ramp(12, 2.0), &[3, 4]);
    let wc = w.clone();
    let path = dir.join("affine.mlxfn");
    mlx::export_function(
        &path,
        move |a| {
            Ok(vec![ops::maximum(
                &(&a[0] * &wc + 0.25),
                &Array::scalar(0.0f32),
            )?])
        },
        &[arr(&[0.0; 12], &[3, 4])],
        &mlx_fmt,
    )?;
    let f = mlx::import_function(&path)?;
    write_case(
        dir,
        "affine",
        &f,
        &[Call {
            args: vec![arr(&ramp(12, 3.0), &[3, 4])],
            kwargs: Kwargs::new(),
        }],
        &mut manifest,
    );

    // Keyword inputs.
    let path = dir.join("kwargs.mlxfn");
    let g = |a: &[Array], k: &Kwargs| {
        Ok(vec![
            ops::subtract(&ops::multiply(&a[0], &k["scale"])?, &k["offset"])?,
            k["offset"].clone(),
        ])
    };
    let mut kw = Kwargs::new();
    kw.insert("scale".into(), arr(&[2.0, 3.0], &[2]));
    kw.insert("offset".into(), arr(&[1.0], &[]));
    mlx::export_function_kwargs(&path, g, &[arr(&[0.0; 4], &[2, 2])], &kw, &mlx_fmt)?;
    let f = mlx::import_function(&path)?;
    write_case(
        dir,
        "kwargs",
        &f,
        &[Call {
            args: vec![arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2])],
            kwargs: kw.clone(),
        }],
        &mut manifest,
    );

    // Several traces sharing a constant.
    let path = dir.join("multi.mlxfn");
    let c = arr(&ramp(4, 1.0), &[4]);
    let cc = c.clone();
    let mut ex = mlx::exporter(
        &path,
        move |a: &[Array], _: &Kwargs| Ok(vec![ops::add(&a[0], &cc)?]),
        &mlx_fmt,
    )?;
    ex.export(&[arr(&[0.0; 4], &[4])], &Kwargs::new())?;
    ex.export(&[arr(&[0.0; 8], &[2, 4])], &Kwargs::new())?;
    ex.finish()?;
    let f = mlx::import_function(&path)?;
    write_case(
        dir,
        "multi",
        &f,
        &[
            Call {
                args: vec![arr(&ramp(4, 5.0), &[4])],
                kwargs: Kwargs::new(),
            },
            Call {
                args: vec![arr(&ramp(8, 5.0), &[2, 4])],
                kwargs: Kwargs::new(),
            },
        ],
        &mut manifest,
    );

    // Shapeless: traced at one shape, called at others.
    let path = dir.join("shapeless.mlxfn");
    let opts = ExportOptions {
        shapeless: true,
        ..mlx_fmt.clone()
    };
    mlx::export_function(
        &path,
        |a| Ok(vec![ops::add(&ops::multiply(&a[0], &a[0])?, &a[1])?]),
        &[arr(&[0.0; 6], &[2, 3]), arr(&[0.0; 3], &[3])],
        &opts,
    )?;
    let f = mlx::import_function(&path)?;
    write_case(
        dir,
        "shapeless",
        &f,
        &[
            Call {
                args: vec![arr(&ramp(6, 2.0), &[2, 3]), arr(&ramp(3, 1.0), &[3])],
                kwargs: Kwargs::new(),
            },
            Call {
                args: vec![arr(&ramp(20, 2.0), &[4, 5]), arr(&ramp(5, 1.0), &[5])],
                kwargs: Kwargs::new(),
            },
        ],
        &mut manifest,
    );

    // An MLP: relu(x @ w1 + b1) @ w2 + b2.
    let (w1, b1) = (arr(&ramp(32, 1.0), &[8, 4]), arr(&ramp(4, 0.5), &[4]));
    let (w2, b2) = (arr(&ramp(12, 1.0), &[4, 3]), arr(&ramp(3, 0.5), &[3]));
    let path = dir.join("mlp.mlxfn");
    let mlp = move |a: &[Array]| {
        let h = ops::maximum(
            &ops::addmm(&b1, &a[0], &w1, 1.0, 1.0)?,
            &Array::scalar(0.0f32),
        )?;
        Ok(vec![ops::add(&ops::matmul(&h, &w2)?, &b2)?])
    };
    mlx::export_function(&path, mlp, &[arr(&[0.0; 16], &[2, 8])], &mlx_fmt)?;
    let f = mlx::import_function(&path)?;
    write_case(
        dir,
        "mlp",
        &f,
        &[Call {
            args: vec![arr(&ramp(16, 4.0), &[2, 8])],
            kwargs: Kwargs::new(),
        }],
        &mut manifest,
    );

    attention_blocks(dir, &mlx_fmt, &mut manifest)?;

    std::fs::write(dir.join("manifest.jsonl"), manifest).map_err(|e| mlx::Error::io(dir, e))?;
    println!("wrote Rust exports to {}", dir.display());
    Ok(())
}

/// Splits (B, T, H·Dh) into heads (B, H, T, Dh).
fn heads(z: &Array, h: i32) -> mlx::Result<Array> {
    let s = z.shape().to_vec();
    ops::transpose(&ops::reshape(z, &[s[0], s[1], h, s[2] / h])?, &[0, 2, 1, 3])
}

/// Merges heads (B, H, T, Dh) back into (B, T, H·Dh).
fn merge(o: &Array) -> mlx::Result<Array> {
    let s = o.shape().to_vec();
    ops::reshape(
        &ops::transpose(o, &[0, 2, 1, 3])?,
        &[s[0], s[2], s[1] * s[3]],
    )
}

/// Attention blocks built with `mlx::fast` (RMS/layer norm, RoPE, scaled
/// dot-product attention) and projections. They are exported with
/// `decompose_fast`, as MLX's CPU build writes them, since Python MLX on CPU
/// cannot run the fused primitives.
fn attention_blocks(dir: &Path, mlx_fmt: &ExportOptions, manifest: &mut String) -> mlx::Result<()> {
    let opts = ExportOptions {
        decompose_fast: true,
        ..mlx_fmt.clone()
    };
    let (d, t) = (16, 6);
    let w = |seed: usize, rows: i32, cols: i32| {
        let v: Vec<f32> = ramp((rows * cols) as usize + seed, 0.6)[seed..].to_vec();
        arr(&v, &[rows, cols])
    };
    let (wq, wk, wv, wo) = (w(1, d, d), w(2, d, d), w(3, d, d), w(4, d, d));
    let g = arr(
        &ramp(d as usize, 0.4)
            .iter()
            .map(|v| 1.0 + v)
            .collect::<Vec<_>>(),
        &[d],
    );

    // Causal self-attention with RoPE, pre-norm and a residual.
    let (q1, k1, v1, o1, g1) = (wq.clone(), wk.clone(), wv.clone(), wo.clone(), g.clone());
    let block = move |a: &[Array]| {
        let x = &a[0];
        let h = fast::rms_norm(x, Some(&g1), 1e-5)?;
        let q = fast::rope(
            &heads(&ops::matmul(&h, &q1)?, 4)?,
            4,
            false,
            Some(10000.0),
            1.0,
            0,
            None,
        )?;
        let k = fast::rope(
            &heads(&ops::matmul(&h, &k1)?, 4)?,
            4,
            false,
            Some(10000.0),
            1.0,
            0,
            None,
        )?;
        let v = heads(&ops::matmul(&h, &v1)?, 4)?;
        let o = fast::scaled_dot_product_attention(&q, &k, &v, 0.5, Some(Mask::Causal))?;
        Ok(vec![ops::add(x, &ops::matmul(&merge(&o)?, &o1)?)?])
    };
    let path = dir.join("attention.mlxfn");
    mlx::export_function(
        &path,
        &block,
        &[arr(&vec![0.0; (2 * t * d) as usize], &[2, t, d])],
        &opts,
    )?;
    // Expected: the fused Rust kernels, run directly (the file holds the decomposition).
    write_case_with(
        dir,
        "attention",
        |c| block(&c.args),
        &[Call {
            args: vec![arr(&ramp((2 * t * d) as usize, 2.0), &[2, t, d])],
            kwargs: Kwargs::new(),
        }],
        manifest,
    );

    // Grouped-query attention (4 query heads, 2 key/value heads) with a
    // boolean mask input, layer norm and traditional RoPE with an offset.
    let (wkv, wv2) = (w(5, d, d / 2), w(6, d, d / 2));
    let block = move |a: &[Array]| {
        let (x, mask) = (&a[0], &a[1]);
        let h = fast::layer_norm(
            x,
            Some(&g),
            Some(&ops::multiply(&g, &Array::scalar(0.1f32))?),
            1e-5,
        )?;
        let q = fast::rope(
            &heads(&ops::matmul(&h, &wq)?, 4)?,
            4,
            true,
            Some(500.0),
            1.0,
            3,
            None,
        )?;
        let k = fast::rope(
            &heads(&ops::matmul(&h, &wkv)?, 2)?,
            4,
            true,
            Some(500.0),
            1.0,
            3,
            None,
        )?;
        let v = heads(&ops::matmul(&h, &wv2)?, 2)?;
        let o = fast::scaled_dot_product_attention(&q, &k, &v, 0.5, Some(Mask::Array(mask)))?;
        Ok(vec![ops::matmul(&merge(&o)?, &wo)?])
    };
    let mask = ops::greater(
        &arr(&ramp((t * t) as usize, 1.0), &[t, t]),
        &Array::scalar(-0.3f32),
    )?;
    let path = dir.join("attention_gqa.mlxfn");
    mlx::export_function(
        &path,
        &block,
        &[
            arr(&vec![0.0; (2 * t * d) as usize], &[2, t, d]),
            ops::astype(&mask, Dtype::Bool)?,
        ],
        &opts,
    )?;
    write_case_with(
        dir,
        "attention_gqa",
        |c| block(&c.args),
        &[Call {
            args: vec![arr(&ramp((2 * t * d) as usize, 3.0), &[2, t, d]), mask],
            kwargs: Kwargs::new(),
        }],
        manifest,
    );
    Ok(())
}
