//! Files outlive the code that wrote them.
//!
//! `fixtures/versioning/soft_shrink_v1.mlxfn` was written by
//! `examples/soft_shrink_file.rs` when the user-crate primitive `SoftShrink`
//! had one state field, `lambda`. It has since gained
//! `#[state(default)] lower: Option<f32>`. States are maps keyed by field
//! name, so the old file loads: `lower` takes its default (none, which means
//! the symmetric threshold) and the numbers are the ones the file always gave.

use mlx::{Array, StateValue};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/versioning/soft_shrink_v1.mlxfn"
);

/// `2 * soft_shrink(x, 0.5) + 1`, the function in the file, in f64.
fn closed_form(x: f64) -> f64 {
    let s = if x > 0.5 {
        x - 0.5
    } else if x < -0.5 {
        x + 0.5
    } else {
        0.0
    };
    2.0 * s + 1.0
}

#[test]
fn a_file_from_before_a_state_field_was_added_still_loads() {
    let f = mlx::import_function(FIXTURE).unwrap();
    assert_eq!(f.table().functions.len(), 1);
    let shrink = f.table().functions[0]
        .entries
        .iter()
        .find(|e| e.primitive.name() == "SoftShrink")
        .expect("the file holds a SoftShrink entry");
    assert_eq!(shrink.primitive.state_names(), &["lambda", "lower"]);
    assert_eq!(
        shrink.primitive.state(),
        vec![StateValue::Float(0.5), StateValue::Optional(None)]
    );
    // The file was exported shapeless: other lengths work too.
    for n in [6usize, 1, 33] {
        let xs: Vec<f32> = (0..n).map(|i| (i as f32 - n as f32 / 2.0) * 0.3).collect();
        let out = f
            .call(&[Array::from_slice(&xs, &[n as i32]).unwrap()])
            .unwrap();
        let got = out[0].to_vec::<f32>().unwrap();
        for (x, g) in xs.iter().zip(&got) {
            let want = closed_form(f64::from(*x));
            assert!((f64::from(*g) - want).abs() <= 1e-6, "x={x}: {g} vs {want}");
        }
    }
}

#[test]
fn the_new_field_is_written_and_read_back() {
    // What a current writer produces: the asymmetric form round-trips.
    let path = std::env::temp_dir().join(format!("soft-shrink-v2-{}.mlxfn", std::process::id()));
    mlx::export_function(
        &path,
        |a| {
            Ok(vec![user_primitive::soft_shrink_asymmetric(
                &a[0], 0.5, 2.0,
            )?])
        },
        &[Array::from_slice(&[0.0f32; 5], &[5]).unwrap()],
        &mlx::ExportOptions::default(),
    )
    .unwrap();
    let f = mlx::import_function(&path).unwrap();
    let x = Array::from_slice(&[-3.0f32, -1.0, 0.25, 0.75, 2.0], &[5]).unwrap();
    // Above 0.5: x - 0.5; below -2: x + 2; else 0.
    assert_eq!(
        f.call(&[x]).unwrap()[0].to_vec::<f32>().unwrap(),
        vec![-1.0, 0.0, 0.0, 0.25, 1.5]
    );
    std::fs::remove_file(&path).ok();
}
