//! Compiling and running the C and C++ programs against the library that
//! cargo built for these tests, and comparing their `.npy` outputs.

#![allow(dead_code)]

use mlx::{Array, Dtype};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The workspace root (mlx-c's parent).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("mlx-c sits in the workspace")
        .to_path_buf()
}

/// Where cargo put libmlxc.{so,a} for this test run: `deps`, next to this
/// test binary (target/<profile>/deps/<test>). `cargo test` does not always
/// refresh the copies in target/<profile>, so they come second.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    for dir in [Some(deps.clone()), deps.parent().map(Path::to_path_buf)]
        .into_iter()
        .flatten()
    {
        if dir
            .join(format!(
                "{}mlxc{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ))
            .exists()
            && dir.join("libmlxc.a").exists()
        {
            return dir;
        }
    }
    panic!(
        "libmlxc.so / libmlxc.a not found next to {} (cargo builds them with this crate's tests)",
        exe.display()
    )
}

/// A scratch directory for this test binary's programs and outputs.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("mlx-c")
        .join(name);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// How to link a program.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Shared,
    Static,
}

/// Compiles `sources` (C, or C++ when `cpp`) into `out`, warnings as errors.
pub fn compile(sources: &[PathBuf], out: &Path, cpp: bool, link: Link) {
    let root = root();
    let lib = lib_dir();
    let mut cmd = Command::new(if cpp { "c++" } else { "cc" });
    if cpp {
        cmd.arg("-std=c++17");
    } else {
        cmd.args(["-std=c11", "-pedantic"]);
    }
    cmd.args(["-Wall", "-Wextra", "-Werror", "-g", "-O1"])
        .arg("-I")
        .arg(root.join("mlx-c/include"))
        .arg("-I")
        .arg(root.join("examples/c"))
        .args(sources)
        .arg("-o")
        .arg(out);
    match link {
        Link::Shared => {
            cmd.arg(format!("-L{}", lib.display()))
                .arg("-lmlxc")
                .arg(format!("-Wl,-rpath,{}", lib.display()))
                // DT_RPATH, not DT_RUNPATH: it wins over the LD_LIBRARY_PATH
                // cargo sets for tests, which may list a stale libmlxc first.
                .arg("-Wl,--disable-new-dtags");
        }
        Link::Static => {
            // What `rustc --print native-static-libs` lists for a staticlib
            // on Linux.
            cmd.arg(lib.join("libmlxc.a")).args([
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ]);
        }
    }
    let result = cmd.output().expect("run the system C compiler");
    assert!(
        result.status.success(),
        "compiling {sources:?} failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
}

/// The C example (examples/c/run.c), compiled once per test binary.
pub fn run_c() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let exe = scratch("bin").join("run");
        compile(
            &[root().join("examples/c/run.c")],
            &exe,
            false,
            Link::Shared,
        );
        exe
    })
}

/// Runs `exe` with `args`; returns its output whatever the exit status.
pub fn run(exe: &Path, args: &[String]) -> Output {
    Command::new(exe)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
}

/// Asserts the program exited 0, showing its output if not.
pub fn assert_success(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The elements of `a` as f64, row-major.
pub fn values(a: &Array) -> Vec<f64> {
    let a = mlx::ops::astype(a, Dtype::Float64).expect("cast to float64");
    a.to_vec::<f64>().expect("read elements")
}

/// Asserts `got` has `want`'s dtype and shape and values within
/// `atol + rtol * |want|` (exactly equal when both are 0).
pub fn assert_close(what: &str, got: &Array, want: &Array, rtol: f64, atol: f64) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in values(got).iter().zip(values(want)).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= atol + rtol * w.abs();
        assert!(
            ok,
            "{what}: element {i} is {g}, expected {w} (rtol {rtol}, atol {atol})"
        );
    }
}

/// Runs the C example on every call of an MLX fixture's case.json and
/// compares each output with the stored one, at the fixture's tolerance.
pub fn check_fixture(dir: &Path, extra: &[&str]) {
    let case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).expect("case.json"))
            .expect("case.json parses");
    let calls = case["calls"].as_array().expect("calls");
    assert!(!calls.is_empty());
    let name = case["name"].as_str().expect("name");
    for (n, call) in calls.iter().enumerate() {
        let out_dir = scratch(&format!("{name}_{n}{}", extra.join("")));
        let file = |v: &serde_json::Value| {
            dir.join(v["file"].as_str().expect("file"))
                .display()
                .to_string()
        };
        let mut args = vec![file(call)];
        for a in call["args"].as_array().expect("args") {
            args.push(file(a));
        }
        for (k, v) in call["kwargs"].as_object().expect("kwargs") {
            args.push("--kw".into());
            args.push(format!("{k}={}", file(v)));
        }
        args.extend(["--out".to_string(), out_dir.display().to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        let out = run(run_c(), &args);
        assert_success(&format!("{name} call {n}"), &out);
        for (i, o) in call["outputs"]
            .as_array()
            .expect("outputs")
            .iter()
            .enumerate()
        {
            let want = mlx::io::load_npy(dir.join(o["file"].as_str().expect("file")))
                .expect("stored output");
            let got = mlx::io::load_npy(out_dir.join(format!("out{i}.npy")))
                .expect("the C program's output");
            let (rtol, atol) = if o["exact"].as_bool() == Some(true) {
                (0.0, 0.0)
            } else {
                (
                    o["rtol"].as_f64().expect("rtol"),
                    o["atol"].as_f64().expect("atol"),
                )
            };
            assert_close(
                &format!("{name} call {n} output {i}"),
                &got,
                &want,
                rtol,
                atol,
            );
        }
    }
}
