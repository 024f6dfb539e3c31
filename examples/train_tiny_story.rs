//! train_tiny_story: trains the README's language model through functions
//! Python MLX exported (`tools/train_tiny_story.py` writes them): `init`
//! (no inputs -> the parameters, drawn by MLX's random ops, which run here
//! bit for bit) and one AdamW `step` (backward pass included). Only the
//! loop is Rust: batches, learning-rate schedule, checkpoints.
//!
//!     cargo run --release --example train_tiny_story -- DIR [--steps N] [--seed S] [--resume]
//!
//! DIR holds `init.mlxfn`, `step.mlxfn`, `tokens.npy` and `train.json`. Every
//! 500 steps and at the end it writes `DIR/model.safetensors` (the parameters
//! in bfloat16, for `tools/export_llm.py`) and `DIR/state.safetensors` (f32
//! parameters, AdamW moments and the step, for `--resume`), and prints the
//! mean loss and the process's resident and peak memory: the loop is also a
//! soak test of repeated imported calls (RSS should stay flat).

#[path = "../benches/common/memory.rs"]
mod memory;

use mlx::{ops, Array, Dtype, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What `train.json` says.
struct Plan {
    names: Vec<String>,
    batch: usize,
    context: usize,
    learning_rate: f64,
    warmup_steps: usize,
}

fn read_plan(dir: &Path) -> std::result::Result<Plan, String> {
    let path = dir.join("train.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let num = |k: &str| {
        v[k].as_f64()
            .ok_or_else(|| format!("{}: no number `{k}`", path.display()))
    };
    let names = v["names"]
        .as_array()
        .and_then(|a| a.iter().map(|n| n.as_str().map(String::from)).collect())
        .ok_or_else(|| format!("{}: no list of strings `names`", path.display()))?;
    Ok(Plan {
        names,
        batch: num("batch")? as usize,
        context: num("context")? as usize,
        learning_rate: num("learning_rate")?,
        warmup_steps: num("warmup_steps")? as usize,
    })
}

/// Linear warm-up, then a cosine decay to a tenth of the peak at `total`.
fn learning_rate(plan: &Plan, step: usize, total: usize) -> f32 {
    let warm = ((step + 1) as f64 / plan.warmup_steps.max(1) as f64).min(1.0);
    let frac = step as f64 / total.max(1) as f64;
    let cosine = 0.5 * (1.0 + (std::f64::consts::PI * frac).cos());
    (plan.learning_rate * warm * (0.1 + 0.9 * cosine)) as f32
}

/// xorshift64*: the batch positions (any fixed generator would do).
struct Positions(u64);

impl Positions {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as usize % n
    }
}

/// `batch` random windows of `context + 1` tokens.
fn sample_batch(tokens: &[i32], plan: &Plan, rng: &mut Positions) -> Result<Array> {
    let w = plan.context + 1;
    let mut rows = Vec::with_capacity(plan.batch * w);
    for _ in 0..plan.batch {
        let s = rng.below(tokens.len() - w);
        rows.extend_from_slice(&tokens[s..s + w]);
    }
    Array::from_slice(&rows, &[plan.batch as i32, w as i32])
}

/// `VmRSS` and `VmHWM` of this process in MiB (0 where /proc is missing).
fn memory_mib() -> (f64, f64) {
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    (mib(memory::rss()), mib(memory::peak_rss()))
}

fn save(dir: &Path, plan: &Plan, state: &[Array], step: usize) -> Result<()> {
    let n = plan.names.len();
    let mut model = BTreeMap::new();
    let mut full = BTreeMap::new();
    for (i, name) in plan.names.iter().enumerate() {
        model.insert(name.clone(), ops::astype(&state[i], Dtype::Bfloat16)?);
        full.insert(format!("p.{name}"), state[i].clone());
        full.insert(format!("m.{name}"), state[n + i].clone());
        full.insert(format!("v.{name}"), state[2 * n + i].clone());
    }
    full.insert("step".into(), Array::from_slice(&[step as i32], &[])?);
    mlx::io::save_safetensors(dir.join("model.safetensors"), &model)?;
    mlx::io::save_safetensors(dir.join("state.safetensors"), &full)
}

/// The state saved by [`save`]: parameters, moments, and the next step.
fn resume(dir: &Path, plan: &Plan) -> Result<(Vec<Array>, usize)> {
    let mut saved = mlx::io::load_safetensors(dir.join("state.safetensors"))?;
    let mut take = |k: String| {
        saved
            .remove(&k)
            .ok_or_else(|| mlx::Error::invalid("resume", format!("state.safetensors has no {k}")))
    };
    let mut state = Vec::new();
    for prefix in ["p", "m", "v"] {
        for name in &plan.names {
            state.push(take(format!("{prefix}.{name}"))?);
        }
    }
    let step = take("step".into())?.item::<i32>()? as usize;
    Ok((state, step))
}

struct Args {
    dir: PathBuf,
    steps: usize,
    seed: u64,
    resume: bool,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut args = Args {
        dir: PathBuf::new(),
        steps: 6000,
        seed: 1,
        resume: false,
    };
    let mut dir = None;
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("{flag} needs a whole number"))
        };
        match a.as_str() {
            "--steps" => args.steps = value("--steps")? as usize,
            "--seed" => args.seed = value("--seed")?,
            "--resume" => args.resume = true,
            _ if a.starts_with("--") => return Err(format!("unknown option {a}")),
            _ => dir = Some(PathBuf::from(a)),
        }
    }
    args.dir = dir.ok_or("usage: train_tiny_story DIR [--steps N] [--seed S] [--resume]")?;
    Ok(args)
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let plan = read_plan(&args.dir).unwrap_or_else(|e| {
        eprintln!("{e} (run tools/train_tiny_story.py first)");
        std::process::exit(2);
    });
    if let Err(e) = train(&args, &plan) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn train(args: &Args, plan: &Plan) -> Result<()> {
    let dir = &args.dir;
    let tokens = mlx::io::load_npy(dir.join("tokens.npy"))?.to_vec::<i32>()?;
    let step_fn = mlx::import_function(dir.join("step.mlxfn"))?;
    let (mut state, first) = if args.resume {
        resume(dir, plan)?
    } else {
        let params = mlx::import_function(dir.join("init.mlxfn"))?.call(&[])?;
        let zeros = params
            .iter()
            .map(ops::zeros_like)
            .collect::<Result<Vec<_>>>()?;
        let mut state = params;
        state.extend(zeros.iter().cloned());
        state.extend(zeros);
        (state, 0)
    };
    let n = plan.names.len();
    if state.len() != 3 * n {
        return Err(mlx::Error::invalid(
            "train_tiny_story",
            format!("init gave {} arrays for {n} parameters", state.len() / 3),
        ));
    }
    let mut rng = Positions(args.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    // Skip the batches of the steps already taken, so a resumed run sees the same data.
    for _ in 0..first * plan.batch {
        rng.below(tokens.len() - plan.context - 1);
    }
    let started = Instant::now();
    let (mut loss_sum, mut loss_count) = (0.0f64, 0usize);
    for step in first..args.steps {
        let lr = Array::from_slice(&[learning_rate(plan, step, args.steps)], &[])?;
        let mut inputs = std::mem::take(&mut state);
        inputs.push(lr);
        inputs.push(sample_batch(&tokens, plan, &mut rng)?);
        let mut outs = step_fn.call(&inputs)?;
        drop(inputs);
        mlx::eval(&outs)?;
        loss_sum += outs[0].item::<f32>()? as f64;
        loss_count += 1;
        state = outs.split_off(1);
        let done = step + 1;
        if done % 500 == 0 || done == args.steps {
            save(dir, plan, &state, done)?;
            let (rss, peak) = memory_mib();
            println!(
                "step {done}: loss {:.3} (mean of {loss_count}), {:.0} ms/step, RSS {rss:.1} MiB, peak {peak:.1} MiB",
                loss_sum / loss_count as f64,
                started.elapsed().as_secs_f64() * 1e3 / (done - first) as f64,
            );
            (loss_sum, loss_count) = (0.0, 0);
        }
    }
    println!("wrote {}", dir.join("model.safetensors").display());
    Ok(())
}
