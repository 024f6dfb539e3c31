//! `mlxfn generate` on the tiny fixture models: the JSON object carries
//! mlx-lm's greedy ids (stopping at the end-of-sequence id as mlx-lm does) and
//! the chat-templated prompt ids transformers makes; bad folders fail with
//! exit code 1 and a message.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn llm(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/llm")
        .join(name)
}

fn mlxfn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mlxfn"))
        .args(args)
        .output()
        .expect("run mlxfn")
}

fn json(path: PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ids(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn json_output_has_mlx_lm_greedy_ids() {
    let tok = json(llm("tokenizer/expected.json"));
    let want = json(llm("llama_f32/expected.json"));
    let dir = llm("llama_f32");
    let o = mlxfn(&[
        "generate",
        dir.to_str().unwrap(),
        "--prompt",
        tok["prompt"].as_str().unwrap(),
        "--max-tokens",
        "20",
        "--json",
        "--no-chat-template",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(ids(&v["prompt_tokens"]), ids(&tok["prompt_ids"]));
    // mlx-lm stops before the end-of-sequence id (0 in these tokenizers)
    let greedy: Vec<u64> = ids(&want["greedy"])
        .into_iter()
        .take_while(|&t| t != 0)
        .take(20)
        .collect();
    assert_eq!(ids(&v["tokens"]), greedy);
    assert!(v["text"].is_string());
    assert!(v["prompt_tps"].as_f64().unwrap() > 0.0);
    assert!(v["generation_tps"].as_f64().unwrap() >= 0.0);
}

#[test]
fn chat_template_applies_by_default() {
    let tok = json(llm("tokenizer/expected.json"));
    let dir = llm("qwen2_f32");
    let o = mlxfn(&[
        "generate",
        dir.to_str().unwrap(),
        "--prompt",
        tok["prompt"].as_str().unwrap(),
        "--max-tokens",
        "2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(ids(&v["prompt_tokens"]), ids(&tok["chat_ids"]));
}

#[test]
fn text_mode_prints_speeds_on_stderr() {
    let dir = llm("mamba_f32");
    let o = mlxfn(&[
        "generate",
        dir.to_str().unwrap(),
        "--prompt",
        "run it",
        "--max-tokens",
        "5",
        "--temp",
        "0.8",
        "--seed",
        "3",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Prompt:") && err.contains("tokens-per-sec"),
        "{err}"
    );
    assert!(err.contains("Generation:"), "{err}");
}

#[test]
fn missing_folder_fails_with_a_message() {
    let o = mlxfn(&["generate", "/nonexistent/model", "--prompt", "x"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a directory"), "{err}");
}

/// The README's first command, on the committed model: greedy and seeded
/// sampling (temperature 0.7, seed 1, as the README runs it) give the token
/// ids mlx-lm generates from the model's source weights
/// (tests/fixtures/tiny_story/generate.py).
#[test]
fn readme_model_generates_mlx_lm_tokens() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let want = json(root.join("tests/fixtures/tiny_story/expected.json"));
    let model = root.join("models/tiny-story");
    for (key, extra) in [
        ("greedy", vec![]),
        (
            "sampled_temp_0.7_seed_1",
            vec!["--temp", "0.7", "--seed", "1"],
        ),
    ] {
        let mut args = vec![
            "generate",
            model.to_str().unwrap(),
            "--prompt",
            want["prompt"].as_str().unwrap(),
            "--max-tokens",
            "80",
            "--json",
        ];
        args.extend(extra);
        let o = mlxfn(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(ids(&v["prompt_tokens"]), ids(&want["prompt_ids"]), "{key}");
        assert_eq!(ids(&v["tokens"]), ids(&want[key]), "{key}");
    }
    let greedy = mlxfn(&[
        "generate",
        model.to_str().unwrap(),
        "--prompt",
        "Phileas Fogg",
        "--max-tokens",
        "80",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&greedy.stdout).trim_end(),
        want["greedy_text"].as_str().unwrap().trim_end()
    );
}
