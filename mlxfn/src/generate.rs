//! `mlxfn generate`: text from a folder written by tools/export_llm.py.
//! Text goes to stdout as it is generated, speeds to stderr; `--json` prints
//! one object instead.

use crate::Failure;
use mlx_llm::{GenerateOptions, Llm, LlmError, Sampling, StreamDecoder};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

pub struct Args {
    pub max_tokens: usize,
    pub sampling: Sampling,
    pub json: bool,
    pub chat_template: bool,
}

fn fail(e: LlmError) -> Failure {
    Failure {
        code: 1,
        msg: e.to_string(),
    }
}

/// Prompts at least this long show a progress line while they are processed.
const PROGRESS_FROM: usize = 256;

pub fn generate(dir: &Path, prompt: &str, args: Args) -> Result<(), Failure> {
    let llm = Llm::load(dir).map_err(fail)?;
    let tok = llm.tokenizer();
    let prompt_ids = tok
        .encode_prompt(prompt, args.chat_template)
        .map_err(fail)?;
    let options = GenerateOptions {
        max_tokens: args.max_tokens,
        sampling: args.sampling,
        ignore_eos: false,
    };
    let n_prompt = prompt_ids.len();
    let show_progress = n_prompt >= PROGRESS_FROM && std::io::stderr().is_terminal();
    let start = Instant::now();
    let gen = llm
        .generate(prompt_ids.clone(), options)
        .map_err(fail)?
        .on_prompt_progress(move |done, total| {
            if show_progress {
                eprint!("\rprompt: {done}/{total} tokens");
                if done + 1 >= total {
                    eprint!("\r\x1b[K");
                }
            }
        });

    let mut tokens = Vec::new();
    let mut text = String::new();
    let mut stream = StreamDecoder::new();
    let mut first_at = None;
    let stdout = std::io::stdout();
    for id in gen {
        let id = id.map_err(fail)?;
        if first_at.is_none() {
            first_at = Some(Instant::now());
        }
        tokens.push(id);
        let piece = stream.push(tok, id).map_err(fail)?;
        if !args.json && !piece.is_empty() {
            let mut out = stdout.lock();
            let _ = out.write_all(piece.as_bytes());
            let _ = out.flush();
        }
        text.push_str(&piece);
    }
    let rest = stream.finish(tok).map_err(fail)?;
    text.push_str(&rest);
    let end = Instant::now();

    // The prompt phase ends with the first token (mlx-lm counts it there too).
    let first = first_at.unwrap_or(end);
    let prompt_s = (first - start).as_secs_f64();
    let gen_s = (end - first).as_secs_f64();
    let prompt_tps = n_prompt as f64 / prompt_s.max(1e-9);
    let generation_tps = if tokens.len() > 1 {
        (tokens.len() - 1) as f64 / gen_s.max(1e-9)
    } else {
        0.0
    };
    if args.json {
        let v = serde_json::json!({
            "prompt_tokens": prompt_ids,
            "tokens": tokens,
            "text": text,
            "prompt_tps": prompt_tps,
            "generation_tps": generation_tps,
        });
        println!("{v}");
    } else {
        println!("{rest}");
        eprintln!("==========");
        eprintln!("Prompt: {n_prompt} tokens, {prompt_tps:.3} tokens-per-sec");
        eprintln!(
            "Generation: {} tokens, {generation_tps:.3} tokens-per-sec",
            tokens.len()
        );
    }
    Ok(())
}
