//! Error paths through the C API (mlx-c/tests/c/errors.c): every bad call
//! returns a failure value and reaches the error handler with a message
//! saying what was wrong; without a handler, mlx-c's default prints and
//! exits.

mod support;

use support::{assert_success, compile, root, run, scratch, Link};

/// errors.c, compiled once for all tests here.
fn errors_exe() -> &'static std::path::Path {
    static EXE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        let exe = scratch("bin").join("errors");
        compile(
            &[root().join("mlx-c/tests/c/errors.c")],
            &exe,
            false,
            Link::Shared,
        );
        exe
    })
}

#[test]
fn bad_calls_fail_through_the_handler() {
    let exe = errors_exe();
    let garbage = scratch("errors").join("garbage.mlxfn");
    std::fs::write(&garbage, b"this is not an exported function at all").unwrap();
    let fixture = root().join("tests/fixtures/mlx/kwargs/fn.mlxfn");
    let out = run(
        exe,
        &[fixture.display().to_string(), garbage.display().to_string()],
    );
    assert_success("errors.c", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for check in [
        "ok bad path",
        "ok bad file",
        "ok wrong signature",
        "ok wrong dtype (data)",
        "ok wrong dtype (item)",
        "ok empty array handle",
        "ok freed handle used",
        "ok double free",
        "ok mistyped handle",
        "ok missing key",
        "ok bytes that are not a function",
        "0 checks failed",
    ] {
        assert!(stdout.contains(check), "missing `{check}` in:\n{stdout}");
    }
    // Messages name the function that failed.
    assert!(
        stdout.contains("ok bad path: mlx_imported_function_new: "),
        "{stdout}"
    );
    // The signature mismatch lists what the file accepts.
    assert!(stdout.contains("a_offset=float32[]"), "{stdout}");
}

#[test]
fn default_handler_prints_and_exits() {
    let out = run(errors_exe(), &["--default-handler".to_string()]);
    assert_eq!(
        out.status.code(),
        Some(255),
        "mlx-c's default handler exits with -1"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        "before the error\nMLX error: mlx_array_eval: expected a non-empty mlx_array, found an empty one (ctx is NULL)\n"
    );
}
