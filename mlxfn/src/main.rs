//! `mlxfn`: inspect, run, convert, verify and draw exported functions
//! (native files and MLX `.mlxfn` files alike).
//!
//! Exit codes: 0 success, 1 failure, 2 usage error.

mod generate;
mod inputs;
mod inspect;
mod run;

use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// Replaying an imported graph allocates thousands of small objects a
/// call; mimalloc serves them faster than glibc (see Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "mlxfn",
    version,
    about = "Inspect, run, convert, verify and draw exported functions"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Show the format, versions, metadata, signatures, outputs, primitives and constants.
    Inspect {
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run the signature matching the inputs and write each output as .npy.
    Run {
        file: PathBuf,
        /// An input: FILE (next positional), N=FILE (positional N), NAME=FILE
        /// (keyword). FILE is .npy, or .safetensors[:KEY].
        #[arg(short = 'i', long = "input")]
        inputs: Vec<String>,
        /// Directory for out0.npy, out1.npy, ...
        #[arg(short = 'o', long = "out")]
        out: Option<PathBuf>,
    },
    /// Convert between the native format and MLX's.
    Convert {
        input: PathBuf,
        output: PathBuf,
        #[arg(long = "to", value_enum)]
        to: Target,
        /// Rewrite fused mx.fast primitives (RMSNorm, LayerNorm, RoPE,
        /// ScaledDotProductAttention) as MLX's CPU decompositions, so that
        /// Python MLX on CPU can run e.g. a Metal export.
        #[arg(long)]
        decompose_fast: bool,
        /// With `--to mlx`: write for this MLX release (e.g. 0.28.0), which
        /// may be older than the newest; refused if the graph uses a
        /// primitive or state the release lacks.
        #[arg(long = "mlx-version", value_name = "V")]
        mlx_version: Option<String>,
        /// Leave the file's metadata out (MLX files before 0.32.1 cannot
        /// hold it, so writing one for them otherwise refuses).
        #[arg(long)]
        drop_metadata: bool,
    },
    /// Parse everything and check every checksum; exit 0 if sound, 1 if not.
    Verify { file: PathBuf },
    /// Generate text with a language model exported by tools/export_llm.py.
    Generate {
        /// The export folder (model.mlxfn + tokenizer files).
        dir: PathBuf,
        #[arg(long)]
        prompt: String,
        #[arg(long, default_value_t = 256)]
        max_tokens: usize,
        /// Sampling temperature; 0 is greedy.
        #[arg(long, default_value_t = 0.0)]
        temp: f64,
        #[arg(long, default_value_t = 0.0)]
        top_p: f64,
        #[arg(long, default_value_t = 0)]
        top_k: usize,
        #[arg(long, default_value_t = 0.0)]
        min_p: f64,
        /// Seed of the random draws (the same seed gives mlx-lm's tokens).
        #[arg(long)]
        seed: Option<u64>,
        /// Print one JSON object (prompt_tokens, tokens, text, prompt_tps, generation_tps).
        #[arg(long)]
        json: bool,
        /// Encode the prompt as plain text even when the tokenizer has a chat template.
        #[arg(long)]
        no_chat_template: bool,
    },
    /// Write a trace's graph as Graphviz DOT (or SVG through Graphviz's `dot`).
    Dot {
        file: PathBuf,
        /// Output path (.dot or .svg); standard output when absent.
        #[arg(short = 'o', long = "out")]
        out: Option<PathBuf>,
        /// Which trace of the file.
        #[arg(long, default_value_t = 0)]
        function: usize,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Target {
    Native,
    Mlx,
}

/// A failure with the exit code it maps to.
pub struct Failure {
    pub code: u8,
    pub msg: String,
}

impl From<mlx::Error> for Failure {
    fn from(e: mlx::Error) -> Self {
        Failure {
            code: 1,
            msg: e.to_string(),
        }
    }
}

/// A usage error (exit code 2).
pub fn usage(msg: impl Into<String>) -> Failure {
    Failure {
        code: 2,
        msg: msg.into(),
    }
}

/// A progress bar on stderr when it is a terminal, hidden otherwise.
pub fn progress(len: u64, what: &str) -> indicatif::ProgressBar {
    if std::io::stderr().is_terminal() {
        let pb = indicatif::ProgressBar::new(len);
        pb.set_message(what.to_string());
        pb
    } else {
        indicatif::ProgressBar::hidden()
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Inspect { file, json } => inspect::inspect(&file, json),
        Cmd::Run { file, inputs, out } => run::run(&file, &inputs, out.as_deref()),
        Cmd::Convert {
            input,
            output,
            to,
            decompose_fast,
            mlx_version,
            drop_metadata,
        } => convert(
            &input,
            &output,
            to,
            decompose_fast,
            mlx_version.as_deref(),
            drop_metadata,
        ),
        Cmd::Verify { file } => verify(&file),
        Cmd::Generate {
            dir,
            prompt,
            max_tokens,
            temp,
            top_p,
            top_k,
            min_p,
            seed,
            json,
            no_chat_template,
        } => generate::generate(
            &dir,
            &prompt,
            generate::Args {
                max_tokens,
                sampling: mlx_llm::Sampling {
                    temp,
                    top_p,
                    min_p,
                    top_k,
                    seed,
                },
                json,
                chat_template: !no_chat_template,
            },
        ),
        Cmd::Dot {
            file,
            out,
            function,
        } => dot(&file, out.as_deref(), function),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let first = f.msg.lines().next().unwrap_or("");
            eprintln!("mlxfn: {first}");
            for line in f.msg.lines().skip(1) {
                eprintln!("  {line}");
            }
            ExitCode::from(f.code)
        }
    }
}

fn convert(
    input: &std::path::Path,
    output: &std::path::Path,
    to: Target,
    decompose_fast: bool,
    mlx_version: Option<&str>,
    drop_metadata: bool,
) -> Result<(), Failure> {
    let release = match (mlx_version, &to) {
        (None, _) => None,
        (Some(v), Target::Mlx) => Some(v.parse::<mlx::export::MlxVersion>()?),
        (Some(_), Target::Native) => {
            return Err(Failure {
                code: 2,
                msg: "--mlx-version needs --to mlx (the native format has no MLX release)".into(),
            })
        }
    };
    let pb = progress(3, "converting");
    let f = mlx::import_function(input)?;
    pb.inc(1);
    if let mlx::Format::Native = f.format() {
        f.verify_all(|_, _| {})?;
    }
    pb.inc(1);
    let format = match to {
        Target::Native => mlx::Format::Native,
        Target::Mlx => mlx::Format::Mlx,
    };
    let mut changed = None;
    if decompose_fast {
        changed = Some(mlx::export::decompose_fast(f.table())?);
    }
    if drop_metadata && !f.metadata().is_empty() {
        let mut t = changed.unwrap_or_else(|| f.table().clone());
        t.metadata.clear();
        changed = Some(t);
    }
    let table = changed.as_ref().unwrap_or(f.table());
    match release {
        Some(r) => mlx::export::write_table_for_mlx(output, table, r)?,
        None => mlx::export::write_table(output, table, format)?,
    }
    pb.finish_and_clear();
    println!(
        "converted {} ({:?}) -> {} ({format:?}): {} function(s), {} constant(s)",
        input.display(),
        f.format(),
        output.display(),
        f.signatures().len(),
        f.table().constants.len()
    );
    Ok(())
}

fn verify(file: &std::path::Path) -> Result<(), Failure> {
    let f = mlx::import_function(file)?;
    let pb = progress(f.table().constants.len() as u64, "checking constants");
    f.verify_all(|done, _| pb.set_position(done as u64))?;
    pb.finish_and_clear();
    // Rebuild every trace on placeholders: every entry's recorded shapes must follow.
    for (i, sig) in f.signatures().iter().enumerate() {
        let t = &f.table().functions[i];
        let ph = mlx::transforms::tracing::placeholders(&t.inputs);
        mlx::transforms::tracing::replay(t, &f.table().constants, &ph, f.shapeless()).map_err(
            |e| Failure {
                code: 1,
                msg: format!("function {i} {sig}: {e}"),
            },
        )?;
    }
    println!(
        "ok: {} ({:?}), {} function(s), {} constant(s) checked",
        file.display(),
        f.format(),
        f.signatures().len(),
        f.table().constants.len()
    );
    Ok(())
}

fn dot(
    file: &std::path::Path,
    out: Option<&std::path::Path>,
    function: usize,
) -> Result<(), Failure> {
    let f = mlx::import_function(file)?;
    let t = f.table().functions.get(function).ok_or_else(|| {
        usage(format!(
            "--function {function}: the file has {} function(s)",
            f.signatures().len()
        ))
    })?;
    let ph = mlx::transforms::tracing::placeholders(&t.inputs);
    let outs = mlx::transforms::tracing::replay(t, &f.table().constants, &ph, f.shapeless())?;
    let mut text = Vec::new();
    mlx::export_to_dot(&mut text, &outs)?;
    match out {
        None => {
            print!("{}", String::from_utf8_lossy(&text));
            Ok(())
        }
        Some(p) if p.extension().is_some_and(|e| e == "svg") => {
            use std::io::Write;
            let mut child = std::process::Command::new("dot")
                .arg("-Tsvg")
                .arg("-o")
                .arg(p)
                .stdin(std::process::Stdio::piped())
                .spawn()
                .map_err(|_| Failure {
                    code: 1,
                    msg: "SVG output needs Graphviz's `dot`, which was not found; install graphviz or write a .dot file"
                        .into(),
                })?;
            child
                .stdin
                .take()
                .expect("piped")
                .write_all(&text)
                .map_err(|e| Failure {
                    code: 1,
                    msg: e.to_string(),
                })?;
            let status = child.wait().map_err(|e| Failure {
                code: 1,
                msg: e.to_string(),
            })?;
            if !status.success() {
                return Err(Failure {
                    code: 1,
                    msg: format!("`dot` failed with {status}"),
                });
            }
            println!("wrote {}", p.display());
            Ok(())
        }
        Some(p) => {
            std::fs::write(p, &text).map_err(|e| Failure {
                code: 1,
                msg: format!("{}: {e}", p.display()),
            })?;
            println!("wrote {}", p.display());
            Ok(())
        }
    }
}
