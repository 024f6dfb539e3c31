//! The train_mlp example run in-process: export `init` and the SGD `step`,
//! import both, train 100 steps; the losses must fall as MLX's do
//! (MLX's own run of examples/export/train_mlp.py is in
//! tests/fixtures/nn/train_mlp_losses.npy).

use crate::common;

use crate::train_mlp_example as train_mlp;

use common::{assert_bits_eq, npy};
use mlx::nn::Module;

#[test]
fn init_matches_mlx() {
    let _serial = common::random_lock();
    let setup = train_mlp::init().unwrap();
    let params = setup.model.parameters();
    assert_eq!(params.len(), 8);
    for (n, a) in &params {
        assert_bits_eq(a, &npy(&format!("nn/train_mlp_init_{n}.npy")));
    }
    assert_eq!(
        setup.opt_names[..3],
        ["step", "learning_rate", "layers.0.weight.v"]
    );
    let (x, y) = train_mlp::example_data().unwrap();
    assert_bits_eq(&x, &npy("nn/train_mlp_x.npy"));
    assert_bits_eq(&y, &npy("nn/train_mlp_y.npy"));
}

#[test]
fn exported_training_loss_falls_like_mlx() {
    let _serial = common::random_lock();
    let dir = std::env::temp_dir().join(format!("mlx-train-mlp-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let losses = train_mlp::run(&dir, |_, _| {}).unwrap();
    std::fs::remove_dir_all(&dir).ok();

    assert_eq!(losses.len(), train_mlp::STEPS);
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    let (first, last) = (losses[0], losses[losses.len() - 1]);
    assert!(last < first / 20.0, "loss fell from {first} to only {last}");

    let want = npy("nn/train_mlp_losses.npy").to_vec::<f32>().unwrap();
    for (i, (g, w)) in losses.iter().zip(&want).enumerate() {
        let tol = 1e-4 + 1e-3 * w.abs();
        assert!((g - w).abs() <= tol, "step {i}: loss {g}, MLX {w}");
    }
}
