//! Compile-fail tests of `#[derive(Primitive)]`: each file in `tests/ui`
//! misuses the derive once and its `.stderr` holds the one error expected,
//! pointing at the offending token. Regenerate with `TRYBUILD=overwrite`.

#[test]
fn derive_misuse_is_a_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
