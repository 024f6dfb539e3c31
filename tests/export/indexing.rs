//! The indexing, sort and scan primitives survive export and import in
//! both formats (state codecs and registry entries), and the graphs have
//! MLX's shape (node names in tape order).

use mlx::{ops, Array, ExportOptions, Format};

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-indexing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn f(a: &[Array]) -> mlx::Result<Vec<Array>> {
    let (x, i, m) = (&a[0], &a[1], &a[2]);
    let col = ops::reshape(i, &[2, 1])?;
    let upd = ops::reshape(&ops::take(x, i, Some(0))?, &[2, 1, 4])?;
    Ok(vec![
        ops::take(x, i, Some(1))?,
        ops::take_along_axis(x, &col, Some(1))?,
        ops::put_along_axis(x, &col, &Array::scalar(9.0f32), Some(1))?,
        ops::scatter_add(x, std::slice::from_ref(i), &upd, &[0])?,
        ops::index_put(x, i, &Array::scalar(-1.0f32))?,
        ops::masked_scatter(x, m, &Array::scalar(5.0f32))?,
        ops::sort(x, Some(0))?,
        ops::argsort(x, None)?,
        ops::argpartition(x, 1, Some(-1))?,
        ops::sort(&ops::topk(x, 2, Some(1))?, Some(1))?,
        ops::cumsum(x, Some(1), true, false)?,
        ops::cummax(x, None, false, true)?,
        ops::logcumsumexp(x, Some(0), false, true)?,
    ])
}

fn inputs() -> Vec<Array> {
    let x: Vec<f32> = (0..8).map(|i| ((i * 5) % 7) as f32 - 3.0).collect();
    vec![
        Array::from_slice(&x, &[2, 4]).unwrap(),
        Array::from_slice(&[1i32, -2], &[2]).unwrap(),
        Array::from_slice(
            &[true, false, false, true, true, false, true, false],
            &[2, 4],
        )
        .unwrap(),
    ]
}

#[test]
fn round_trip_in_both_formats() {
    let args = inputs();
    let want = f(&args).unwrap();
    for format in [Format::Mlx, Format::Native] {
        let path = tmp(&format!("fn_{format:?}.mlxfn"));
        let opts = ExportOptions {
            format,
            ..Default::default()
        };
        mlx::export_function(&path, f, &inputs(), &opts).unwrap();
        let g = mlx::import_function(&path).unwrap();
        let got = g.call(&args).unwrap();
        assert_eq!(got.len(), want.len());
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            assert_eq!(a.dtype(), b.dtype(), "output {k}");
            let (a, b) = (
                ops::astype(a, mlx::Dtype::Float64).unwrap(),
                ops::astype(b, mlx::Dtype::Float64).unwrap(),
            );
            assert_eq!(
                a.to_vec::<f64>().unwrap(),
                b.to_vec::<f64>().unwrap(),
                "output {k} ({format:?})"
            );
        }
    }
}

#[test]
fn take_builds_mlx_graph() {
    // mx.take(x, i, axis=1) on x (2, 3, 4), i (2, 2): Gather, Transpose, Squeeze.
    let x = Array::placeholder(&[2, 3, 4], mlx::Dtype::Float32);
    let i = Array::placeholder(&[2, 2], mlx::Dtype::Int32);
    let y = ops::take(&x, &i, Some(1)).unwrap();
    assert_eq!(y.shape(), [2, 2, 2, 4]);
    let (sq, _) = y.node().unwrap();
    assert_eq!(sq.primitive().name(), "Squeeze");
    let (tr, _) = sq.inputs()[0].node().unwrap();
    assert_eq!(tr.primitive().name(), "Transpose");
    assert_eq!(
        tr.primitive().state(),
        vec![mlx::StateValue::Ints(vec![2, 0, 1, 3, 4])]
    );
    let (ga, _) = tr.inputs()[0].node().unwrap();
    assert_eq!(ga.primitive().name(), "Gather");
    assert_eq!(ga.specs()[0].shape, [2, 2, 2, 1, 4]);
}
