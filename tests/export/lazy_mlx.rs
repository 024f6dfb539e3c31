//! Importing an MLX `.mlxfn` file maps it: the import reads only the
//! records, and each constant is read in place (when 64-byte aligned) or
//! copied on its first use. Checked with the counting allocator (no
//! allocation as large as the constant during import) and against values
//! computed here by plain loops, with and without mapping.

use crate::alloc_counter::largest_allocation;
use mlx::export::{export_function, import_function, import_function_with, ImportOptions};
use mlx::{ops, Array, ExportOptions, Format};

const ROWS: usize = 256;
const COLS: usize = 1024;

fn weight() -> Vec<f32> {
    (0..ROWS * COLS)
        .map(|i| ((i % 7) as f32 - 3.0) * 0.25)
        .collect()
}

fn mask() -> Vec<bool> {
    (0..ROWS).map(|i| i % 3 != 0).collect()
}

/// `where(mask, x @ W.T, 0)` for one row `x`, in f64.
fn expected(x: &[f32]) -> Vec<f64> {
    let (w, m) = (weight(), mask());
    (0..ROWS)
        .map(|r| {
            let dot: f64 = (0..COLS)
                .map(|c| w[r * COLS + c] as f64 * x[c] as f64)
                .sum();
            if m[r] {
                dot
            } else {
                0.0
            }
        })
        .collect()
}

#[test]
fn an_mlx_import_copies_no_constant_and_computes_the_same() {
    let w = Array::from_slice(&weight(), &[ROWS as i32, COLS as i32]).unwrap();
    let m = Array::from_slice(&mask(), &[ROWS as i32]).unwrap();
    let f = move |a: &[Array]| {
        let y = ops::matmul(&a[0], &ops::transpose(&w, &[1, 0])?)?;
        let zero = Array::scalar(0.0f32);
        Ok(vec![ops::where_(
            &m,
            &ops::reshape(&y, &[ROWS as i32])?,
            &zero,
        )?])
    };
    let path = std::env::temp_dir().join(format!("mlx-lazy-{}.mlxfn", std::process::id()));
    let xs: Vec<f32> = (0..COLS).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect();
    let x = Array::from_slice(&xs, &[1, COLS as i32]).unwrap();
    let opts = ExportOptions {
        format: Format::Mlx,
        ..ExportOptions::default()
    };
    export_function(&path, f, std::slice::from_ref(&x), &opts).unwrap();

    let (imported, largest) = largest_allocation(|| import_function(&path).unwrap());
    let constant_bytes = ROWS * COLS * 4;
    assert!(
        largest < constant_bytes / 4,
        "import allocated {largest} bytes at once; the weight is {constant_bytes}"
    );
    for c in &imported.table().constants {
        assert!(
            c.data().unwrap().buffer.is_mapped(),
            "{c:?} was copied at import"
        );
    }
    let want = expected(&xs);
    let read = Array::from_slice(&xs, &[1, COLS as i32]).unwrap();
    for f in [
        imported,
        import_function_with(
            &path,
            &ImportOptions {
                mmap: false,
                ..ImportOptions::default()
            },
        )
        .unwrap(),
    ] {
        // Twice: the first call copies the unaligned constants, the second
        // reads the copies.
        for _ in 0..2 {
            let got = f.call(std::slice::from_ref(&read)).unwrap()[0]
                .to_vec::<f32>()
                .unwrap();
            for (r, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "row {r}: {g} vs {w}"
                );
            }
        }
    }
    std::fs::remove_file(&path).ok();
}

/// Eight threads make their first calls of one imported MLX file at once.
/// The calls' graphs run on rayon's pool and the first read of each
/// misaligned constant copies it with parallel tasks; a pool thread waiting
/// for those tasks may take up another thread's evaluation that reads the
/// same constant. Every call must finish (a watchdog fails the test instead
/// of hanging) and give the values computed here.
#[test]
fn first_calls_from_many_threads_at_once() {
    const BIG_ROWS: usize = 3072; // a 12 MiB weight: several copy tasks
    let wv: Vec<f32> = (0..BIG_ROWS * COLS)
        .map(|i| ((i % 11) as f32 - 5.0) * 0.125)
        .collect();
    let w = Array::from_slice(&wv, &[BIG_ROWS as i32, COLS as i32]).unwrap();
    // A 3-byte constant first, so the weight after it is not 64-byte aligned.
    let odd = Array::from_slice(&[true, false, true], &[3]).unwrap();
    let f = move |a: &[Array]| {
        let y = ops::matmul(&a[0], &ops::transpose(&w, &[1, 0])?)?;
        let mut z = ops::multiply(&y, &Array::scalar(0.5f32))?;
        for k in 0..8 {
            z = ops::add(&z, &Array::scalar(k as f32))?;
        }
        let s = ops::sum(&ops::astype(&odd, mlx::Dtype::Float32)?, &[0], false)?;
        Ok(vec![ops::add(&z, &s)?])
    };
    let path = std::env::temp_dir().join(format!("mlx-lazy-threads-{}.mlxfn", std::process::id()));
    let xs: Vec<f32> = (0..COLS).map(|i| (i % 3) as f32 - 1.0).collect();
    let x = Array::from_slice(&xs, &[1, COLS as i32]).unwrap();
    let opts = ExportOptions {
        format: Format::Mlx,
        ..ExportOptions::default()
    };
    export_function(&path, f, std::slice::from_ref(&x), &opts).unwrap();
    let want: Vec<f64> = (0..BIG_ROWS)
        .map(|r| {
            let dot: f64 = (0..COLS)
                .map(|c| wv[r * COLS + c] as f64 * xs[c] as f64)
                .sum();
            dot * 0.5 + 28.0 + 2.0
        })
        .collect();

    let imported = std::sync::Arc::new(import_function(&path).unwrap());
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let (done, finished) = std::sync::mpsc::channel();
    for t in 0..8 {
        let (f, b, done, xs) = (imported.clone(), barrier.clone(), done.clone(), xs.clone());
        std::thread::spawn(move || {
            let x = Array::from_slice(&xs, &[1, COLS as i32]).unwrap();
            b.wait();
            let got = f.call(&[x]).and_then(|o| o[0].to_vec::<f32>());
            done.send((t, got)).unwrap();
        });
    }
    for _ in 0..8 {
        let (t, got) = finished
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("a first call did not finish within 120 s (deadlock?)");
        let got = got.unwrap();
        for (r, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "thread {t}, row {r}: {g} vs {w}"
            );
        }
    }
    std::fs::remove_file(&path).ok();
}
