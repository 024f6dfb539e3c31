//! Files written by Python MLX 0.32.4 (tests/fixtures/mlx/, see its README)
//! run here with MLX's results. Each case is also converted to the native
//! format and re-written in MLX's format by us, and must give the same
//! results from those files.

use crate::common::mlx_cases;

macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            mlx_cases::run_case("mlx", stringify!($name));
        }
    )*};
}

cases!(
    scalar_add,
    kwargs,
    multi_trace,
    eval_mlp,
    multi_output,
    no_inputs,
    shapeless,
    elementwise_zoo,
    gather_scatter,
    cumsum,
    shape_zoo,
    sort_argmax
);

/// Every MLX-written file (tests/fixtures/mlx and tests/fixtures/mlx_models)
/// cut short is an error, never a panic; whole, it parses.
#[test]
fn truncation_sweep_over_every_mlx_fixture() {
    let mut files = 0;
    for root in ["mlx", "mlx_models"] {
        for path in mlx_cases::mlxfn_files(root) {
            let bytes = std::fs::read(&path).unwrap();
            let name = path.display().to_string();
            if let Err(e) = mlx::export::mlx::decode(&bytes, &name, true) {
                panic!("{name}: {e}");
            }
            // Every cut of small files; of big ones every cut near both ends
            // and every 7th between (all residues mod 8, so every field of
            // every kind is cut somewhere), which keeps the test fast.
            let n = bytes.len();
            let cuts =
                (0..n).filter(|&len| n <= 4096 || len < 1024 || n - len < 1024 || len % 7 == 0);
            for len in cuts {
                assert!(
                    mlx::export::mlx::decode(&bytes[..len], &name, true).is_err(),
                    "{name} truncated to {len} bytes parsed"
                );
            }
            files += 1;
        }
    }
    assert!(files >= 35, "only {files} fixture files found");
}
