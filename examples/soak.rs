//! soak: long runs of imported functions (issue 21). Not a test: it takes
//! minutes and its RSS figures depend on the machine.
//!
//! - `threads`: a small transformer block (layer norm, causal multi-head
//!   attention, gelu MLP, residuals) exported and imported once; `--threads`
//!   threads each make `--calls` calls of the same `ImportedFunction` with
//!   their own inputs, and every result must equal, bit for bit, a
//!   single-threaded call on the same inputs.
//! - `train`: train_mlp's `init` and SGD `step` exported, imported and run
//!   for `--steps` steps; current and peak RSS (`VmRSS`, `VmHWM`) at a tenth,
//!   half and all of the steps, and neither may grow more than 5% from the
//!   first to the last.
//! - `kill`: `--kills` times, a child process (this binary, re-run with
//!   `child-export`) exports a function with a `--mb` MB constant over an
//!   existing good file and is sent `SIGKILL` at a random moment of its
//!   export, in turn: anywhere from the start of the export (tracing,
//!   encoding, writing), anywhere once its temporary file exists (writing,
//!   syncing, renaming), or once the temporary holds a random number of
//!   the file's bytes (always mid-write). After each kill the file must import and give the values of
//!   either the previous file or the child's (when it finished first), and
//!   the directory may hold nothing but the file and the killed child's own
//!   temporary (`.NAME.tmp-PID-N`, which the atomic writer documents a killed
//!   writer leaves behind; the soak removes it as a janitor would).
//!
//! Run: `cargo run --release --example soak [-- [all|threads|train|kill]
//! [--threads 8] [--calls 10000] [--steps 10000] [--kills 100] [--mb 32]
//! [--seed N]]`. Prints a summary; exits 1 on any violation.

#[allow(dead_code)]
#[path = "train_mlp.rs"]
mod train_mlp;

use mlx::fast::Mask;
use mlx::nn::{gelu, LayerNorm, Linear, Module, MultiHeadAttention};
use mlx::{ops, random, Array, Dtype, ExportOptions, Result};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Run sizes; the defaults are issue 21's.
#[derive(Clone, Debug)]
struct Config {
    threads: usize,
    calls: usize,
    steps: usize,
    kills: usize,
    mb: usize,
    seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            threads: 8,
            calls: 10_000,
            steps: 10_000,
            kills: 100,
            mb: 32,
            seed: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                ^ u64::from(std::process::id()),
        }
    }
}

/// What a part found: lines for the summary and any violations.
#[derive(Default)]
struct Report {
    figures: Vec<String>,
    violations: Vec<String>,
}

impl Report {
    fn figure(&mut self, s: String) {
        println!("  {s}");
        self.figures.push(s);
    }

    fn violation(&mut self, s: String) {
        eprintln!("  VIOLATION: {s}");
        self.violations.push(s);
    }
}

// ---------------------------------------------------------------- threads --

/// Batch, sequence length, model width, heads, MLP width.
const B: i32 = 2;
const L: i32 = 16;
const D: i32 = 64;
const HEADS: i32 = 4;
const HIDDEN: i32 = 256;
/// Distinct inputs each thread cycles through.
const INPUTS_PER_THREAD: usize = 4;

/// A pre-norm transformer block: `x + attn(ln1(x))`, then `+ mlp(ln2(·))`.
struct Block {
    ln1: LayerNorm,
    attn: MultiHeadAttention,
    ln2: LayerNorm,
    fc1: Linear,
    fc2: Linear,
}

impl Block {
    fn new() -> Result<Block> {
        random::seed(21);
        Ok(Block {
            ln1: LayerNorm::new(D, 1e-5, true, true)?,
            attn: MultiHeadAttention::new(D, HEADS, true)?,
            ln2: LayerNorm::new(D, 1e-5, true, true)?,
            fc1: Linear::new(D, HIDDEN, true)?,
            fc2: Linear::new(HIDDEN, D, true)?,
        })
    }

    fn forward(&self, x: &Array) -> Result<Array> {
        let h = self.ln1.forward(x)?;
        let x = ops::add(x, &self.attn.attend(&h, &h, &h, Some(Mask::Causal))?)?;
        let h = gelu(&self.fc1.forward(&self.ln2.forward(&x)?)?)?;
        ops::add(&x, &self.fc2.forward(&h)?)
    }
}

/// An array's elements as bit patterns (so NaNs and signed zeros compare).
fn bits(a: &Array) -> Result<Vec<u32>> {
    Ok(a.to_vec::<f32>()?.into_iter().map(f32::to_bits).collect())
}

fn soak_threads(cfg: &Config, dir: &Path, report: &mut Report) -> Result<()> {
    println!("threads: {} threads x {} calls", cfg.threads, cfg.calls);
    let block = Block::new()?;
    let example = random::normal(&[B, L, D], Dtype::Float32, None, None, None)?;
    let path = dir.join("block.mlxfn");
    mlx::export_function(
        &path,
        |a: &[Array]| Ok(vec![block.forward(&a[0])?]),
        &[example],
        &ExportOptions::default(),
    )?;
    let f = mlx::import_function(&path)?;

    // Per-thread inputs and their single-threaded results.
    random::seed(cfg.seed);
    let mut inputs = Vec::new();
    for _ in 0..cfg.threads {
        let mine = (0..INPUTS_PER_THREAD)
            .map(|_| random::normal(&[B, L, D], Dtype::Float32, None, None, None))
            .collect::<Result<Vec<_>>>()?;
        mlx::eval(&mine)?;
        inputs.push(mine);
    }
    let mut expected = Vec::new();
    for mine in &inputs {
        let want = mine
            .iter()
            .map(|x| bits(&f.call(std::slice::from_ref(x))?[0]))
            .collect::<Result<Vec<_>>>()?;
        expected.push(want);
    }
    // The imported block computes what the block does (a sanity check of
    // the reference itself; fusion may reorder, so not bit for bit).
    let direct = block.forward(&inputs[0][0])?.to_vec::<f32>()?;
    let max_diff = expected[0][0]
        .iter()
        .zip(&direct)
        .map(|(&b, &d)| (f32::from_bits(b) - d).abs())
        .fold(0.0f32, f32::max);
    if max_diff.is_nan() || max_diff > 1e-4 {
        report.violation(format!(
            "threads: the imported block differs from the block by {max_diff}"
        ));
    }

    let start = Instant::now();
    let results: Vec<std::result::Result<(usize, usize), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..cfg.threads)
            .map(|t| {
                let (f, mine, want) = (&f, &inputs[t], &expected[t]);
                s.spawn(move || {
                    let (mut calls, mut mismatches) = (0usize, 0usize);
                    for c in 0..cfg.calls {
                        let k = c % INPUTS_PER_THREAD;
                        let out = f
                            .call(std::slice::from_ref(&mine[k]))
                            .and_then(|o| bits(&o[0]))
                            .map_err(|e| format!("thread {t} call {c}: {e}"))?;
                        calls += 1;
                        if out != want[k] {
                            if mismatches == 0 {
                                eprintln!("  thread {t} call {c}: result differs");
                            }
                            mismatches += 1;
                        }
                    }
                    Ok((calls, mismatches))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let elapsed = start.elapsed();
    let (mut calls, mut mismatches) = (0, 0);
    for r in results {
        match r {
            Ok((c, m)) => {
                calls += c;
                mismatches += m;
            }
            Err(e) => report.violation(format!("threads: {e}")),
        }
    }
    if mismatches > 0 {
        report.violation(format!(
            "threads: {mismatches} of {calls} results differ from the single-threaded run"
        ));
    }
    report.figure(format!(
        "threads: {} x {} calls = {calls} done, {mismatches} mismatches, {:.1} s ({:.0} calls/s); imported vs direct max |diff| {max_diff:.2e}",
        cfg.threads,
        cfg.calls,
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64()
    ));
    Ok(())
}

// ------------------------------------------------------------------ train --

/// `VmRSS` and `VmHWM` of this process in KiB.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn soak_train(cfg: &Config, dir: &Path, report: &mut Report) -> Result<()> {
    println!("train: {} steps through imported init/step", cfg.steps);
    let setup = train_mlp::init()?;
    mlx::eval(&setup.state)?;
    let opts = ExportOptions::default();
    let init_path = dir.join("init_mlp.mlxfn");
    mlx::export_function(
        &init_path,
        |_: &[Array]| Ok(train_mlp::init()?.state),
        &[],
        &opts,
    )?;
    let (x, y) = train_mlp::example_data()?;
    let mut example = setup.state.clone();
    example.push(x.clone());
    example.push(y.clone());
    let step_path = dir.join("train_mlp.mlxfn");
    mlx::export_function(
        &step_path,
        |a: &[Array]| train_mlp::step(&setup, a),
        &example,
        &opts,
    )?;
    drop(example);

    let mut state = mlx::import_function(&init_path)?.call(&[])?;
    let step = mlx::import_function(&step_path)?;
    let checkpoints = [(cfg.steps / 10).max(1), (cfg.steps / 2).max(1), cfg.steps];
    let mut seen = Vec::new();
    let (mut first_loss, mut last_loss) = (f32::NAN, f32::NAN);
    let start = Instant::now();
    for it in 1..=cfg.steps {
        let mut inputs = state;
        inputs.push(x.clone());
        inputs.push(y.clone());
        let mut out = step.call(&inputs)?;
        let loss = out.pop().expect("the step returns the loss last");
        mlx::eval(&out)?;
        last_loss = loss.item::<f32>()?;
        if it == 1 {
            first_loss = last_loss;
        }
        state = out;
        if checkpoints.contains(&it) && seen.last().map(|&(s, _, _)| s) != Some(it) {
            let (rss, hwm) = rss_kib();
            report.figure(format!(
                "train: step {it:>6}: RSS {:.1} MiB, peak {:.1} MiB, loss {last_loss:.6}",
                rss as f64 / 1024.0,
                hwm as f64 / 1024.0
            ));
            seen.push((it, rss, hwm));
        }
    }
    let elapsed = start.elapsed();
    if !last_loss.is_finite() || last_loss >= first_loss {
        report.violation(format!(
            "train: the loss went from {first_loss} to {last_loss}"
        ));
    }
    if let (Some(&(s0, rss0, hwm0)), Some(&(s1, rss1, hwm1))) = (seen.first(), seen.last()) {
        for (what, a, b) in [("RSS", rss0, rss1), ("peak RSS", hwm0, hwm1)] {
            let growth = (b as f64 - a as f64) / a as f64 * 100.0;
            report.figure(format!("train: {what} step {s0} -> {s1}: {growth:+.2}%"));
            if growth.abs() > 5.0 {
                report.violation(format!(
                    "train: {what} changed {growth:+.2}% between step {s0} and step {s1} (limit 5%)"
                ));
            }
        }
    }
    report.figure(format!(
        "train: {} steps in {:.1} s, loss {first_loss:.6} -> {last_loss:.6}",
        cfg.steps,
        elapsed.as_secs_f64()
    ));
    Ok(())
}

// ------------------------------------------------------------------- kill --

/// Elements of the constant a `child-export` writes.
fn kill_elements(mb: usize) -> usize {
    mb * (1 << 20) / 4
}

/// Element `i` of generation `gen`'s constant (exact in f32).
fn kill_value(i: usize, gen: u32) -> f32 {
    (i % 1000) as f32 + gen as f32 * 1000.0
}

/// The child: exports `x ↦ x + C(gen)` to `path`, telling the parent on
/// stdout when the export starts.
fn child_export(path: &Path, gen: u32, mb: usize) -> Result<()> {
    let n = kill_elements(mb);
    let c: Vec<f32> = (0..n).map(|i| kill_value(i, gen)).collect();
    let c = Array::from_slice(&c, &[n as i32])?;
    c.eval()?;
    println!("ready");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    mlx::export_function(
        path,
        |a: &[Array]| Ok(vec![ops::add(&a[0], &c)?]),
        &[Array::scalar(0.0f32)],
        &ExportOptions::default(),
    )?;
    println!("done");
    Ok(())
}

/// The generation whose values the file at `path` gives, if any.
fn file_generation(path: &Path, mb: usize, candidates: &[u32]) -> std::result::Result<u32, String> {
    let f = mlx::import_function(path).map_err(|e| format!("import: {e}"))?;
    let out = f
        .call(&[Array::scalar(0.0f32)])
        .and_then(|o| o[0].to_vec::<f32>())
        .map_err(|e| format!("call: {e}"))?;
    if out.len() != kill_elements(mb) {
        return Err(format!(
            "{} elements, expected {}",
            out.len(),
            kill_elements(mb)
        ));
    }
    candidates
        .iter()
        .copied()
        .find(|&g| out.iter().enumerate().all(|(i, &v)| v == kill_value(i, g)))
        .ok_or_else(|| format!("values of none of the generations {candidates:?}"))
}

/// A small xorshift generator (no dependency for one random delay).
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// When the parent kills a child export.
#[derive(Clone, Copy, Debug)]
enum KillAt {
    /// Never: the child runs to the end.
    Never,
    /// This long after the child says it is ready (tracing, encoding or
    /// writing).
    AfterReady(Duration),
    /// This long after its temporary file appears (writing, syncing or
    /// renaming).
    AfterTemp(Duration),
    /// Once its temporary file holds at least this many bytes (mid-write
    /// whatever the machine's speed).
    AtBytes(u64),
}

/// What became of one child export.
struct ChildRun {
    pid: u32,
    /// It exited successfully (the kill, if any, came too late).
    finished: bool,
    /// From "ready" to its temporary file appearing, when the parent saw it.
    to_temp: Option<Duration>,
    /// From "ready" to its exit.
    to_exit: Duration,
    /// Its temporary file was on disk when the kill was sent.
    temp_at_kill: bool,
}

/// Runs a child export of generation `gen`, killing it (`SIGKILL`) as `at` says.
fn run_child(
    exe: &Path,
    path: &Path,
    gen: u32,
    mb: usize,
    at: KillAt,
) -> std::result::Result<ChildRun, String> {
    let mut child = Command::new(exe)
        .arg("child-export")
        .arg(path)
        .arg(gen.to_string())
        .arg(mb.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let pid = child.id();
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    out.read_line(&mut line)
        .map_err(|e| format!("reading the child: {e}"))?;
    if line.trim() != "ready" {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("child said {line:?} instead of ready"));
    }
    let ready = Instant::now();
    let temp_exists = || temporaries(path, Some(pid)).is_ok_and(|t| !t.is_empty());
    let temp_bytes = || {
        temporaries(path, Some(pid))
            .ok()
            .and_then(|t| t.first().and_then(|p| std::fs::metadata(p).ok()))
            .map_or(0, |m| m.len())
    };
    let mut to_temp = None;
    let mut exited = None;
    // Watch for the temporary until the kill is due or the child exits.
    let deadline = match at {
        KillAt::AfterReady(d) => Some(ready + d),
        _ => None,
    };
    loop {
        if to_temp.is_none() && temp_exists() {
            to_temp = Some(ready.elapsed());
        }
        if let Some(s) = child.try_wait().map_err(|e| format!("wait: {e}"))? {
            exited = Some(s);
            break;
        }
        let now = Instant::now();
        let due = match (at, to_temp) {
            (KillAt::Never, _) => None,
            (KillAt::AfterReady(_), _) => deadline,
            (KillAt::AfterTemp(d), Some(t)) => Some(ready + t + d),
            (KillAt::AfterTemp(_), None) => None,
            (KillAt::AtBytes(n), _) => (temp_bytes() >= n).then_some(now),
        };
        if due.is_some_and(|due| now >= due) {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut temp_at_kill = false;
    if exited.is_none() {
        temp_at_kill = temp_exists();
        // SIGKILL on Unix; an error means the child exited meanwhile.
        let _ = child.kill();
    }
    let status = match exited {
        Some(s) => s,
        None => child.wait().map_err(|e| format!("wait: {e}"))?,
    };
    Ok(ChildRun {
        pid,
        finished: status.success(),
        to_temp,
        to_exit: ready.elapsed(),
        temp_at_kill,
    })
}

/// Files in `path`'s directory other than `path` itself: `Ok` with the
/// temporaries the atomic writer names `.NAME.tmp-PID-N` (of `pid` when
/// given), `Err` naming anything else.
fn temporaries(path: &Path, pid: Option<u32>) -> std::result::Result<Vec<PathBuf>, String> {
    let dir = path.parent().expect("a file in a directory");
    let name = path.file_name().expect("a file name").to_string_lossy();
    let prefix = match pid {
        Some(p) => format!(".{name}.tmp-{p}-"),
        None => format!(".{name}.tmp-"),
    };
    let mut tmps = Vec::new();
    let mut other = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| format!("read_dir: {e}"))? {
        let e = e.map_err(|e| format!("read_dir: {e}"))?;
        let n = e.file_name().to_string_lossy().into_owned();
        if n == name {
            continue;
        }
        if n.starts_with(&prefix) {
            tmps.push(e.path());
        } else {
            other.push(n);
        }
    }
    if other.is_empty() {
        Ok(tmps)
    } else {
        Err(format!("unexpected files: {other:?}"))
    }
}

fn soak_kill(cfg: &Config, dir: &Path, report: &mut Report) -> Result<()> {
    println!(
        "kill: {} kills of a child exporting a {} MB constant over a good file",
        cfg.kills, cfg.mb
    );
    let exe = std::env::current_exe().map_err(|e| mlx::Error::io("current_exe", e))?;
    let dir = dir.join("kill");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| mlx::Error::io(&dir, e))?;
    let path = dir.join("big.mlxfn");

    // The first file, and two more, written by children left to finish:
    // they time an export and its write.
    let mut current = 0u32;
    let (mut export_time, mut write_time) = (Duration::ZERO, Duration::ZERO);
    for i in 0..3 {
        let run = run_child(&exe, &path, current, cfg.mb, KillAt::Never)
            .map_err(|e| mlx::Error::Export(format!("an uncut export: {e}")))?;
        if !run.finished {
            return Err(mlx::Error::Export("an uncut export failed".into()));
        }
        if i == 0 {
            continue; // creating the file is slower than replacing it
        }
        export_time = export_time.max(run.to_exit);
        write_time = write_time.max(run.to_exit - run.to_temp.unwrap_or(Duration::ZERO));
    }
    if let Err(e) = file_generation(&path, cfg.mb, &[current]) {
        return Err(mlx::Error::Export(format!("the first file: {e}")));
    }
    let file_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    report.figure(format!(
        "kill: an export ({:.1} MB file) takes up to {:.0} ms after the child is ready, {:.0} ms of it from the temporary's creation; kills land uniformly in the first, the second, or the bytes written",
        file_bytes as f64 / 1e6,
        export_time.as_secs_f64() * 1e3,
        write_time.as_secs_f64() * 1e3
    ));

    let mut rng = Rng(cfg.seed | 1);
    let (mut survived, mut completed, mut mid_write, mut litter, mut replaced) = (0, 0, 0, 0, 0);
    for k in 0..cfg.kills {
        let gen = k as u32 + 1;
        let at = match k % 3 {
            0 => KillAt::AfterReady(export_time.mul_f64(rng.next_f64())),
            1 => KillAt::AfterTemp(write_time.mul_f64(rng.next_f64())),
            _ => KillAt::AtBytes(1 + (rng.next_f64() * (file_bytes - 1) as f64) as u64),
        };
        let run = match run_child(&exe, &path, gen, cfg.mb, at) {
            Ok(r) => r,
            Err(e) => {
                report.violation(format!("kill {k}: {e}"));
                continue;
            }
        };
        let (pid, finished, tmp_seen) = (run.pid, run.finished, run.temp_at_kill);
        let delay = at;
        let mut ok = true;
        match file_generation(&path, cfg.mb, &[current, gen]) {
            // The old file, or the new one whole when the kill came after
            // the rename.
            Ok(g) => {
                replaced += usize::from(g != current);
                current = g;
            }
            Err(e) => {
                report.violation(format!("kill {k} ({delay:?}): the file is bad: {e}"));
                ok = false;
            }
        }
        if finished {
            completed += 1;
            if current != gen {
                report.violation(format!(
                    "kill {k}: the child finished but the file holds generation {current}"
                ));
                ok = false;
            }
        }
        if tmp_seen {
            mid_write += 1;
        }
        match temporaries(&path, Some(pid)) {
            Ok(tmps) => {
                if finished && !tmps.is_empty() {
                    report.violation(format!("kill {k}: a finished export left {tmps:?}"));
                    ok = false;
                }
                if tmps.len() > 1 {
                    report.violation(format!("kill {k}: several temporaries {tmps:?}"));
                    ok = false;
                }
                litter += tmps.len();
                for t in tmps {
                    let _ = std::fs::remove_file(t);
                }
            }
            Err(e) => {
                report.violation(format!("kill {k}: {e}"));
                ok = false;
            }
        }
        if ok {
            survived += 1;
        }
        if (k + 1) % 10 == 0 {
            println!(
                "  {} kills: {survived} survived, {completed} finished before the kill, {mid_write} killed with their temporary on disk",
                k + 1
            );
        }
    }
    match temporaries(&path, None) {
        Ok(t) if t.is_empty() => {}
        Ok(t) => report.violation(format!("kill: temporaries left at the end: {t:?}")),
        Err(e) => report.violation(format!("kill: at the end: {e}")),
    }
    report.figure(format!(
        "kill: {survived}/{} kills survived ({mid_write} killed with their temporary on disk, {} before it existed or after the rename, {completed} finished before the kill; {replaced} left the new file); {litter} killed writers' temporaries removed",
        cfg.kills,
        cfg.kills - mid_write - completed,
    ));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

// ------------------------------------------------------------------- main --

fn parse(args: &[String]) -> std::result::Result<(String, Config), String> {
    let mut cfg = Config::default();
    let mut part = "all".to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = |name: &str| -> std::result::Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match a.as_str() {
            "--threads" => cfg.threads = num(a)? as usize,
            "--calls" => cfg.calls = num(a)? as usize,
            "--steps" => cfg.steps = num(a)? as usize,
            "--kills" => cfg.kills = num(a)? as usize,
            "--mb" => cfg.mb = num(a)? as usize,
            "--seed" => cfg.seed = num(a)?,
            "all" | "threads" | "train" | "kill" => part = a.clone(),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok((part, cfg))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child-export") {
        let (path, gen, mb) = match &args[1..] {
            [p, g, m] => (
                PathBuf::from(p),
                g.parse().unwrap_or(0),
                m.parse().unwrap_or(1),
            ),
            _ => return ExitCode::from(2),
        };
        return match child_export(&path, gen, mb) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("child-export: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let (part, cfg) = match parse(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    println!("soak: {part} {cfg:?}");
    let dir = std::env::temp_dir().join(format!("mlx-soak-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("soak: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let mut report = Report::default();
    // Training first, so its peak RSS is its own and not the threads'.
    type Part = fn(&Config, &Path, &mut Report) -> Result<()>;
    let parts: [(&str, Part); 3] = [
        ("train", soak_train),
        ("threads", soak_threads),
        ("kill", soak_kill),
    ];
    let start = Instant::now();
    for (name, run) in parts {
        if part == "all" || part == name {
            if let Err(e) = run(&cfg, &dir, &mut report) {
                report.violation(format!("{name}: {e}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("\nsoak summary ({:.1} s):", start.elapsed().as_secs_f64());
    for f in &report.figures {
        println!("  {f}");
    }
    if report.violations.is_empty() {
        println!("no violations");
        ExitCode::SUCCESS
    } else {
        println!("{} violations:", report.violations.len());
        for v in &report.violations {
            println!("  {v}");
        }
        ExitCode::FAILURE
    }
}
