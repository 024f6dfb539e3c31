//! Tiny random-weight models of mlx-lm's architectures, exported by
//! tools/export_llm.py (tests/fixtures/llm/generate.py): the token ids
//! generated here equal mlx_lm's `generate_step` ids stored beside each model,
//! greedy for f32/bf16/4-bit and seeded sampling for f32. The prompt spans
//! more than one prefill block and generation passes the first cache size.

use mlx_llm::{GenerateOptions, Llm, Sampling};
use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/llm")
        .join(name)
}

fn expected(dir: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

fn run(name: &str, key: &str, sampling: Sampling) {
    let dir = fixture(name);
    let want = expected(&dir);
    let llm = Llm::load(&dir).unwrap();
    let prompt = ids(&want["prompt_ids"]);
    let want = ids(&want[key]);
    assert!(want.len() >= 64);
    let options = GenerateOptions {
        max_tokens: want.len(),
        sampling,
        ignore_eos: true,
    };
    let got: Vec<u32> = llm
        .generate(prompt, options)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let first_diff = got.iter().zip(&want).position(|(a, b)| a != b);
    assert_eq!(
        got, want,
        "{name} {key}: first difference at {first_diff:?}"
    );
}

macro_rules! greedy {
    ($($test:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            run($name, "greedy", Sampling::greedy());
        }
    )*};
}

macro_rules! sampled {
    ($($test:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            let s = Sampling { temp: 0.8, top_p: 0.9, seed: Some(7), ..Sampling::default() };
            run($name, "sampled", s);
        }
    )*};
}

greedy!(
    gemma2_bf16 => "gemma2_bf16",
    gemma2_f32 => "gemma2_f32",
    gemma2_q4 => "gemma2_q4",
    gemma3_text_bf16 => "gemma3_text_bf16",
    gemma3_text_f32 => "gemma3_text_f32",
    gemma3_text_q4 => "gemma3_text_q4",
    llama_bf16 => "llama_bf16",
    llama_f32 => "llama_f32",
    llama_q4 => "llama_q4",
    mamba_bf16 => "mamba_bf16",
    mamba_f32 => "mamba_f32",
    mamba_q4 => "mamba_q4",
    mistral_bf16 => "mistral_bf16",
    mistral_f32 => "mistral_f32",
    mistral_q4 => "mistral_q4",
    mixtral_f32 => "mixtral_f32",
    mixtral_q4 => "mixtral_q4",
    olmo2_bf16 => "olmo2_bf16",
    olmo2_f32 => "olmo2_f32",
    olmo2_q4 => "olmo2_q4",
    phi3_bf16 => "phi3_bf16",
    phi3_f32 => "phi3_f32",
    phi3_q4 => "phi3_q4",
    qwen2_bf16 => "qwen2_bf16",
    qwen2_f32 => "qwen2_f32",
    qwen2_q4 => "qwen2_q4",
    qwen3_bf16 => "qwen3_bf16",
    qwen3_f32 => "qwen3_f32",
    qwen3_moe_f32 => "qwen3_moe_f32",
    qwen3_moe_q4 => "qwen3_moe_q4",
    qwen3_q4 => "qwen3_q4",
);

sampled!(
    gemma2_f32_sampled => "gemma2_f32",
    gemma3_text_f32_sampled => "gemma3_text_f32",
    llama_f32_sampled => "llama_f32",
    mamba_f32_sampled => "mamba_f32",
    mistral_f32_sampled => "mistral_f32",
    mixtral_f32_sampled => "mixtral_f32",
    olmo2_f32_sampled => "olmo2_f32",
    phi3_f32_sampled => "phi3_f32",
    qwen2_f32_sampled => "qwen2_f32",
    qwen3_f32_sampled => "qwen3_f32",
    qwen3_moe_f32_sampled => "qwen3_moe_f32",
);

/// Every fixture folder has a greedy test above (a new one cannot be missed).
#[test]
fn every_fixture_has_a_test() {
    let src = include_str!("generate.rs");
    for entry in std::fs::read_dir(fixture("")).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if p.is_dir() && name != "tokenizer" {
            assert!(
                src.contains(&format!("    {name} => ")) || src.contains(&format!("fn {name}()")),
                "fixture {name} has no test"
            );
        }
    }
}

/// A decode step moves the session's cache into the call, so the step's
/// cache update writes into the previous step's buffer: the KV arrays after
/// a step start at the same addresses as before it (a copy would not).
#[test]
fn a_decode_step_updates_the_kv_cache_in_place() {
    let llm = Llm::load(&fixture("llama_f32")).unwrap();
    let model = llm.model();
    let mut s = model.new_session().unwrap();
    let address = |a: &mlx::Array| a.data().unwrap().buffer.bytes().as_ptr() as usize;
    // Two steps first: the session's initial zeros may be shared or broadcast.
    model.step(&mut s, &[3, 5, 7, 2, 4, 6, 8, 9]).unwrap();
    model.step(&mut s, &[11]).unwrap();
    let before: Vec<usize> = s.cache().iter().map(address).collect();
    let logits = model.step(&mut s, &[13]).unwrap();
    assert_eq!(s.offset(), 10);
    assert!(logits
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| v.is_finite()));
    let after: Vec<usize> = s.cache().iter().map(address).collect();
    assert!(!before.is_empty());
    assert_eq!(
        before, after,
        "every cache array was copied, not updated in place"
    );
}
