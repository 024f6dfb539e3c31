//! Shared by the benchmarks: timing and the Python reference runs.
#![allow(dead_code)]

pub mod memory;

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

/// Best wall time of `reps` runs of `f` (after one warm-up run).
pub fn best(reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The project's `.venv` Python (mlx + numpy, see README) if present, else `python3`.
pub fn python() -> &'static str {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python");
    if std::path::Path::new(venv).exists() {
        venv
    } else {
        "python3"
    }
}

/// Runs `script` with `args` and collects its `name value` lines. An empty
/// map (and a note on stderr saying why) when Python or a module is missing.
pub fn python_figures(what: &str, script: &str, args: &[&str]) -> HashMap<String, f64> {
    let py = python();
    let out = Command::new(py).arg("-c").arg(script).args(args).output();
    let mut figures = HashMap::new();
    match out {
        Ok(o) if o.status.success() => {
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                let mut it = line.split_whitespace();
                if let (Some(k), Some(v)) = (it.next(), it.next().and_then(|v| v.parse().ok())) {
                    figures.insert(k.to_string(), v);
                }
            }
        }
        Ok(o) => eprintln!(
            "{what} reference skipped: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ),
        Err(e) => eprintln!("{what} reference skipped: cannot run {py}: {e}"),
    }
    figures
}
