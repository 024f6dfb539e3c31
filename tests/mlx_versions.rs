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
                    // Only the reduction slice updates need a newer release.
                    assert!(
                        name == "at_add" && release < MlxVersion::new(0, 31, 2),
                        "{name} for {release}: {msg}"
                    );
                    assert!(
                        msg.contains("SliceUpdate") && msg.contains("0.31.2"),
                        "{msg}"
                    );
                }
            }
        }
    }
}
