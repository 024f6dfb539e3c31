//! The C++ example (examples/cpp/run.cpp) over the RAII header
//! mlx/cpp/mlx.hpp: imports an MLX fixture and prints MLX's numbers.

mod support;

use support::{assert_success, compile, root, run, scratch, values, Link};

#[test]
fn cpp_example_matches_mlx() {
    let exe = scratch("bin").join("run_cpp");
    compile(
        &[root().join("examples/cpp/run.cpp")],
        &exe,
        true,
        Link::Shared,
    );
    let dir = root().join("tests/fixtures/mlx/shapeless");
    let out = run(
        &exe,
        &[
            dir.join("fn.mlxfn").display().to_string(),
            dir.join("s_1x5_arg0.npy").display().to_string(),
        ],
    );
    assert_success("run.cpp", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("first output: array([[["), "{stdout}");
    // Each output: a "output i shape ..." line, then one number per line.
    let mut lines = stdout
        .lines()
        .skip_while(|l| !l.starts_with("output 0 shape"));
    for (i, (shape, rtol, atol)) in [(vec![1, 5, 6], 1e-5, 1e-6), (vec![1, 6], 1e-5, 1e-6)]
        .into_iter()
        .enumerate()
    {
        let header = lines.next().expect("an output header");
        let dims: Vec<i32> = header
            .trim_start_matches(&format!("output {i} shape"))
            .split_whitespace()
            .map(|d| d.parse().unwrap())
            .collect();
        assert_eq!(dims, shape, "{header}");
        let want = mlx::io::load_npy(dir.join(format!("s_1x5_out{i}.npy"))).unwrap();
        assert_eq!(want.shape(), &shape[..]);
        for (j, w) in values(&want).into_iter().enumerate() {
            let g: f64 = lines.next().expect("a value").parse().unwrap();
            assert!(
                (g - w).abs() <= atol + rtol * w.abs(),
                "output {i} element {j}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn cpp_errors_become_exceptions() {
    let exe = scratch("bin").join("run_cpp_err");
    compile(
        &[root().join("examples/cpp/run.cpp")],
        &exe,
        true,
        Link::Shared,
    );
    // (Its own binary: the other test may be writing run_cpp meanwhile.)
    let dir = root().join("tests/fixtures/mlx/kwargs");
    // The kwargs fixture needs keyword inputs: the call fails and run.cpp
    // reports the library's message from the mlx::Error it caught.
    let out = run(
        &exe,
        &[
            dir.join("fn.mlxfn").display().to_string(),
            dir.join("c0_arg0.npy").display().to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: mlx_imported_function_apply_kwargs: no exported signature matches"),
        "{stderr}"
    );
}
