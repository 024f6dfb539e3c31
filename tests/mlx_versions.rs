//! Files written by every MLX release from 0.26.5 to 0.32.4
//! (tests/fixtures/mlx_versions/<release>/, made by make.sh there) import
//! and give the outputs that release computed; each is also converted to
//! the native format and re-written in MLX's format. And files we write for
//! an older release are laid out as that release lays them out.

#[path = "common/mod.rs"]
mod common;
use common::mlx_cases;

use mlx::export::mlx::{decode, encode_for, readers};
use mlx::primitive::MlxVersion;
use std::path::PathBuf;

fn release_dir(release: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mlx_versions")
        .join(release)
}

/// The cases a release wrote (a case it could not export has no folder).
fn cases(release: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(release_dir(release))
        .unwrap_or_else(|e| panic!("{release}: {e}"))
        .filter_map(|e| {
            let p = e.unwrap().path();
            p.join("case.json")
                .is_file()
                .then(|| p.file_name().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    v.sort();
    v
}

macro_rules! releases {
    ($($test:ident => $release:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            let cases = cases($release);
            assert!(cases.len() >= 8, "{}: only {cases:?}", $release);
            for name in cases {
                mlx_cases::run_case(concat!("mlx_versions/", $release), &name);
            }
        }
    )*};
}

releases!(
    mlx_0_26_5 => "0.26.5",
    mlx_0_27_1 => "0.27.1",
    mlx_0_28_0 => "0.28.0",
    mlx_0_29_0 => "0.29.0",
    mlx_0_29_1 => "0.29.1",
    mlx_0_29_2 => "0.29.2",
    mlx_0_29_3 => "0.29.3",
    mlx_0_29_4 => "0.29.4",
    mlx_0_30_0 => "0.30.0",
    mlx_0_30_1 => "0.30.1",
    mlx_0_30_3 => "0.30.3",
    mlx_0_30_4 => "0.30.4",
    mlx_0_30_5 => "0.30.5",
    mlx_0_30_6 => "0.30.6",
    mlx_0_31_0 => "0.31.0",
    mlx_0_31_1 => "0.31.1",
    mlx_0_31_2 => "0.31.2",
    mlx_0_32_0 => "0.32.0",
    mlx_0_32_1 => "0.32.1",
    mlx_0_32_2 => "0.32.2",
    mlx_0_32_3 => "0.32.3",
    mlx_0_32_4 => "0.32.4",
);

/// Every release's file, re-encoded by us for that same release, has the
/// same length as the file MLX wrote (same header, names and state
/// layouts; only the array ids differ), and MLX's reader range for it
/// contains the release.
#[test]
fn rewriting_for_the_writing_release_keeps_its_layout() {
    for &release in MlxVersion::RELEASES {
        let r = release.to_string();
        for name in cases(&r) {
            let path = release_dir(&r).join(&name).join("fn.mlxfn");
            let bytes = std::fs::read(&path).unwrap();
            let table = decode(&bytes, &path.display().to_string(), true)
                .unwrap_or_else(|e| panic!("{r}/{name}: {e}"));
            let mixes_kwargs = table.functions.iter().any(|t| t.kwarg_names.len() > 1);
            if mixes_kwargs && release < MlxVersion::KWARGS_IN_ORDER {
                // That release mixed up the keyword inputs of its own file.
                let e = encode_for(&table, release).unwrap_err().to_string();
                assert!(e.contains("hash-map order"), "{r}/{name}: {e}");
                continue;
            }
            let ours = encode_for(&table, release).unwrap_or_else(|e| panic!("{r}/{name}: {e}"));
            assert_eq!(ours.len(), bytes.len(), "{r}/{name}: re-encoded length");
            let range = readers(&table, release).unwrap();
            assert!(
                range.first <= release && range.before.is_none_or(|b| release < b),
                "{r}/{name}: {range} excludes its own writer"
            );
        }
    }
}

/// Converting between layouts: the 0.32.4 files re-encoded for every
/// older release decode again with the same tape, except where the release
/// lacks something the graph needs, which is an error naming it.
#[test]
fn writing_for_older_releases() {
    for name in cases("0.32.4") {
        let path = release_dir("0.32.4").join(&name).join("fn.mlxfn");
        let bytes = std::fs::read(&path).unwrap();
        let table = decode(&bytes, &name, true).unwrap();
        for &release in MlxVersion::RELEASES {
            match encode_for(&table, release) {
                Ok(out) => {
                    let back = decode(&out, &name, true)
                        .unwrap_or_else(|e| panic!("{name} for {release}: {e}"));
                    assert_eq!(back.writer_version, release.to_string());
                    assert_eq!(back.functions.len(), table.functions.len());
                    for (a, b) in back.functions.iter().zip(&table.functions) {
                        assert_eq!(a.entries.len(), b.entries.len());
                        for (x, y) in a.entries.iter().zip(&b.entries) {
                            assert!(
                                x.primitive.is_equivalent(y.primitive.as_ref()),
                                "{name} for {release}: {:?} vs {:?}",
                                x.primitive,
                                y.primitive
                            );
                        }
                    }
                }
                Err(e) => {
                    let msg = e.to_string();
                    // The reduction slice updates need a newer release, and
                    // so do two keyword inputs.
                    if name == "at_add" && release < MlxVersion::new(0, 31, 2) {
                        assert!(
                            msg.contains("SliceUpdate") && msg.contains("0.31.2"),
                            "{msg}"
                        );
                    } else {
                        assert!(
                            name == "mlp_kwargs" && release < MlxVersion::KWARGS_IN_ORDER,
                            "{name} for {release}: {msg}"
                        );
                        assert!(
                            msg.contains("scale, shift") && msg.contains("0.29.3"),
                            "{msg}"
                        );
                    }
                }
            }
        }
    }
}

fn mlx_fixture(case: &str, file: &str) -> mlx::export::FunctionTable {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mlx")
        .join(case)
        .join(file);
    decode(&std::fs::read(&path).unwrap(), case, true).unwrap()
}

/// Found by check_written.py: MLX before 0.32.2 imports a DivMod written
/// for it but rounds the quotient toward zero (MLX 0.32.2 floors, as we
/// do), so the file gave other values there. Writing it for those
/// releases is refused, and the 0.32.4 file's readers start at 0.32.2.
#[test]
fn divmod_is_not_written_for_releases_that_truncate() {
    let table = mlx_fixture("multi_output", "fn.mlxfn");
    let e = encode_for(&table, MlxVersion::new(0, 32, 1))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("MLX 0.32.1 could not run this file")
            && e.contains("computes DivMod differently (it rounds the quotient toward zero")
            && e.contains("write for MLX 0.32.2 or newer"),
        "{e}"
    );
    encode_for(&table, MlxVersion::new(0, 32, 2)).unwrap();
    let range = readers(&table, MlxVersion::NEWEST).unwrap();
    assert_eq!(range.first, MlxVersion::new(0, 32, 2), "{range}");
}

/// Found by check_written.py: MLX before 0.29.3 binds the keyword inputs
/// of an imported function in hash-map order, so a file we wrote for it
/// with several keyword inputs gave wrong values there. Refused, naming
/// the inputs; a function with keyword inputs reads from 0.29.3 on.
#[test]
fn several_keyword_inputs_are_not_written_for_releases_that_mix_them_up() {
    let table = mlx_fixture("kwargs", "fn.mlxfn");
    assert!(table.functions[0].kwarg_names.len() > 1);
    let e = encode_for(&table, MlxVersion::new(0, 29, 2))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("MLX 0.29.2 could not run this file")
            && e.contains("hash-map order")
            && e.contains("write for MLX 0.29.3 or newer"),
        "{e}"
    );
    let out = encode_for(&table, MlxVersion::KWARGS_IN_ORDER).unwrap();
    let back = decode(&out, "kwargs", true).unwrap();
    assert_eq!(
        back.functions[0].kwarg_names,
        table.functions[0].kwarg_names
    );
    let range = readers(&back, MlxVersion::KWARGS_IN_ORDER).unwrap();
    assert_eq!(range.first, MlxVersion::KWARGS_IN_ORDER, "{range}");
}

/// Files before 0.32.1 have no metadata: writing one with metadata for
/// them is refused with a message naming the way out, and works once the
/// metadata is cleared.
#[test]
fn metadata_is_refused_before_0_32_1_and_can_be_dropped() {
    let mut table = mlx_fixture("multi_trace", "fn.mlxfn");
    assert!(!table.metadata.is_empty());
    let e = encode_for(&table, MlxVersion::new(0, 32, 0))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("MLX 0.32.0 could not import this file") && e.contains("--drop-metadata"),
        "{e}"
    );
    table.metadata.clear();
    let out = encode_for(&table, MlxVersion::new(0, 32, 0)).unwrap();
    assert_eq!(
        decode(&out, "multi_trace", true).unwrap().functions.len(),
        table.functions.len()
    );
}
