//! train_mlp: MLX's `examples/export/train_mlp.py` in Rust.
//!
//! Builds an MLP, exports `init` (no inputs → model parameters and SGD
//! state) and one SGD training `step` ((state…, X, y) → (state…, loss), the
//! backward pass included as ordinary primitives), imports both and trains
//! for 100 steps on one fixed batch, printing the loss every 10 steps.
//!
//! Run: `cargo run --release --example train_mlp`

use mlx::nn::losses::{cross_entropy, Reduction};
use mlx::nn::optimizers::{Optimizer, SGD};
use mlx::nn::{relu, visit_child, visit_child_mut, Linear, Module, Parameters};
use mlx::transforms::value_and_grad;
use mlx::{random, Array, Dtype, ExportOptions, Result};
use std::path::Path;

/// Batch size, input features and classes, as in the Python example.
pub const BATCH_SIZE: i32 = 8;
/// Input features.
pub const INPUT_DIM: i32 = 32;
/// Number of classes.
pub const OUTPUT_DIM: i32 = 10;
/// Training steps.
pub const STEPS: usize = 100;

/// A simple MLP: `num_layers` hidden layers of `hidden_dim` with relu.
#[derive(Clone, Debug)]
pub struct Mlp {
    /// input → hidden → … → output.
    pub layers: Vec<Linear>,
}

impl Mlp {
    /// Layers drawn in order from the global random key (as MLX's `MLP`).
    pub fn new(num_layers: usize, input_dim: i32, hidden_dim: i32, output_dim: i32) -> Result<Mlp> {
        let mut sizes = vec![input_dim];
        sizes.extend(vec![hidden_dim; num_layers]);
        sizes.push(output_dim);
        let layers = sizes
            .windows(2)
            .map(|w| Linear::new(w[0], w[1], true))
            .collect::<Result<_>>()?;
        Ok(Mlp { layers })
    }
}

impl Module for Mlp {
    fn visit_parameters(&self, f: &mut dyn FnMut(&str, &Array)) {
        for (i, l) in self.layers.iter().enumerate() {
            visit_child(&format!("layers.{i}"), l, f);
        }
    }

    fn visit_parameters_mut(&mut self, f: &mut dyn FnMut(&str, &mut Array)) {
        for (i, l) in self.layers.iter_mut().enumerate() {
            visit_child_mut(&format!("layers.{i}"), l, f);
        }
    }

    fn forward(&self, x: &Array) -> Result<Array> {
        let (last, hidden) = self.layers.split_last().expect("at least one layer");
        let mut x = x.clone();
        for l in hidden {
            x = relu(&l.forward(&x)?)?;
        }
        last.forward(&x)
    }
}

/// The model, its optimizer, and the flat training state (model parameters
/// then optimizer state, as MLX's `tree_flatten([params, opt.state])`).
pub struct Setup {
    /// The model (its parameters are replaced inside the step).
    pub model: Mlp,
    /// SGD with learning rate 0.1.
    pub optimizer: SGD,
    /// Names of the model parameters (the first entries of the state).
    pub param_names: Vec<String>,
    /// Names of the optimizer state entries (the rest of the state).
    pub opt_names: Vec<String>,
    /// The state arrays: parameters, then optimizer state.
    pub state: Vec<Array>,
}

/// Seeds the generator with 0 and builds the model and optimizer.
pub fn init() -> Result<Setup> {
    random::seed(0);
    let model = Mlp::new(3, INPUT_DIM, 64, OUTPUT_DIM)?;
    let optimizer = SGD::new(0.1);
    let params = model.parameters();
    let opt_state = optimizer.init(&params)?;
    let mut state = params.arrays();
    state.extend(opt_state.arrays());
    Ok(Setup {
        param_names: params.names().map(String::from).collect(),
        opt_names: opt_state.names().map(String::from).collect(),
        model,
        optimizer,
        state,
    })
}

/// One SGD step: `(params…, opt_state…, X, y) → (params…, opt_state…, loss)`.
pub fn step(setup: &Setup, inputs: &[Array]) -> Result<Vec<Array>> {
    let (np, no) = (setup.param_names.len(), setup.opt_names.len());
    if inputs.len() != np + no + 2 {
        return Err(mlx::Error::invalid(
            "train_mlp step",
            format!("expected {} inputs, found {}", np + no + 2, inputs.len()),
        ));
    }
    let params = Parameters::from_arrays(&setup.param_names, &inputs[..np])?;
    let opt_state = Parameters::from_arrays(&setup.opt_names, &inputs[np..np + no])?;
    let (x, y) = (&inputs[np + no], &inputs[np + no + 1]);

    // loss(params…, X, y): the model with `params` swapped in.
    let loss_fn = |args: &[Array]| -> Result<Vec<Array>> {
        let mut model = setup.model.clone();
        model.update(&Parameters::from_arrays(&setup.param_names, &args[..np])?)?;
        let logits = model.forward(&args[np])?;
        Ok(vec![cross_entropy(
            &logits,
            &args[np + 1],
            None,
            -1,
            0.0,
            Reduction::Mean,
        )?])
    };
    let mut args = params.arrays();
    args.push(x.clone());
    args.push(y.clone());
    let argnums: Vec<usize> = (0..np).collect();
    let (values, grads) = value_and_grad(loss_fn, &argnums)(&args)?;
    let grads = Parameters::from_arrays(&setup.param_names, &grads)?;
    let (params, opt_state) = setup
        .optimizer
        .apply_gradients(&grads, &params, &opt_state)?;
    let mut out = params.arrays();
    out.extend(opt_state.arrays());
    out.push(values[0].clone());
    Ok(out)
}

/// The example's fixed batch: `seed(42)`, normal X (8, 32), integer
/// labels y in [0, 10).
pub fn example_data() -> Result<(Array, Array)> {
    random::seed(42);
    let x = random::normal(&[BATCH_SIZE, INPUT_DIM], Dtype::Float32, None, None, None)?;
    let y = random::randint(
        &Array::scalar(0i32),
        &Array::scalar(OUTPUT_DIM),
        &[BATCH_SIZE],
        Dtype::Int32,
        None,
    )?;
    Ok((x, y))
}

/// Exports `init` and `step` into `dir`, imports both, trains for
/// [`STEPS`] steps and returns every step's loss (`report` sees each).
pub fn run(dir: &Path, report: impl FnMut(usize, f32)) -> Result<Vec<f32>> {
    run_steps(dir, STEPS, report)
}

/// [`run`] for `steps` steps (the soak example runs thousands).
pub fn run_steps(dir: &Path, steps: usize, mut report: impl FnMut(usize, f32)) -> Result<Vec<f32>> {
    let setup = init()?;
    mlx::eval(&setup.state)?;
    let opts = ExportOptions::default();
    let init_path = dir.join("init_mlp.mlxfn");
    mlx::export_function(&init_path, |_: &[Array]| Ok(init()?.state), &[], &opts)?;

    let (x, y) = example_data()?;
    let mut example = setup.state.clone();
    example.push(x.clone());
    example.push(y.clone());
    let step_path = dir.join("train_mlp.mlxfn");
    mlx::export_function(&step_path, |a: &[Array]| step(&setup, a), &example, &opts)?;

    // From here on only the two files are used, as another program would.
    let mut state = mlx::import_function(&init_path)?.call(&[])?;
    let imported_step = mlx::import_function(&step_path)?;
    let mut losses = Vec::with_capacity(steps);
    for it in 0..steps {
        let mut inputs = state;
        inputs.push(x.clone());
        inputs.push(y.clone());
        let mut out = imported_step.call(&inputs)?;
        let loss = out.pop().expect("the step returns the loss last");
        mlx::eval(&out)?;
        let loss = loss.item::<f32>()?;
        report(it, loss);
        losses.push(loss);
        state = out;
    }
    Ok(losses)
}

#[allow(dead_code)]
fn main() -> Result<()> {
    let dir = std::env::temp_dir().join("mlx-train-mlp");
    std::fs::create_dir_all(&dir).map_err(|e| mlx::Error::io(&dir, e))?;
    run(&dir, |it, loss| {
        if it % 10 == 0 {
            println!("Loss {loss:.6}");
        }
    })?;
    Ok(())
}
