//! The C programs under valgrind's memcheck: no invalid access, no
//! uninitialised read, no leak (definite or indirect) — in the library or
//! in the programs' use of it. Skipped, with a note, where valgrind is not
//! on PATH; mlx-c/scripts/memcheck.sh runs the same by hand.

mod support;

use std::process::Command;
use support::{assert_success, compile, root, run_c, scratch, Link};

fn valgrind() -> Option<Command> {
    let found = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("valgrind is not on PATH: memcheck skipped");
        return None;
    }
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--quiet",
        "--error-exitcode=99",
        "--leak-check=full",
        "--show-leak-kinds=definite,indirect",
        "--errors-for-leak-kinds=definite,indirect",
    ]);
    Some(cmd)
}

#[test]
fn run_c_is_clean_under_memcheck() {
    let Some(mut cmd) = valgrind() else { return };
    let dir = root().join("tests/fixtures/mlx/kwargs");
    let out_dir = scratch("memcheck_kwargs");
    let p = |f: &str| dir.join(f).display().to_string();
    let out = cmd
        .arg(run_c())
        .args([p("fn.mlxfn"), p("c0_arg0.npy")])
        .args([
            "--kw".into(),
            format!("a_offset={}", p("c0_kw_a_offset.npy")),
        ])
        .args(["--kw".into(), format!("mid={}", p("c0_kw_mid.npy"))])
        .args(["--kw".into(), format!("z_scale={}", p("c0_kw_z_scale.npy"))])
        .args([
            "--out".into(),
            out_dir.display().to_string(),
            "--from-bytes".into(),
        ])
        .output()
        .expect("run valgrind");
    assert_success("run.c under memcheck", &out);
}

#[test]
fn transformer_is_clean_under_memcheck() {
    let Some(mut cmd) = valgrind() else { return };
    let dir = root().join("tests/fixtures/mlx_models/transformer_float32");
    let out = cmd
        .arg(run_c())
        .arg(dir.join("fn.mlxfn"))
        .arg(dir.join("c0_arg0.npy"))
        .output()
        .expect("run valgrind");
    assert_success("run.c (transformer) under memcheck", &out);
}

#[test]
fn error_paths_are_clean_under_memcheck() {
    let Some(mut cmd) = valgrind() else { return };
    let exe = scratch("bin").join("errors_memcheck");
    compile(
        &[root().join("mlx-c/tests/c/errors.c")],
        &exe,
        false,
        Link::Shared,
    );
    let garbage = scratch("memcheck_errors").join("garbage.mlxfn");
    std::fs::write(&garbage, b"not a function").unwrap();
    let out = cmd
        .arg(&exe)
        .arg(root().join("tests/fixtures/mlx/kwargs/fn.mlxfn"))
        .arg(&garbage)
        .output()
        .expect("run valgrind");
    assert_success("errors.c under memcheck", &out);
}
