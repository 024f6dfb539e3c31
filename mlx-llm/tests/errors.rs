//! Each way a folder or a prompt can be wrong gives a message naming the
//! problem (no panic).

use mlx_llm::{GenerateOptions, Llm, LlmError, Sampling};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mlx-llm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap();
}

fn load_err(dir: &Path) -> String {
    match Llm::load(dir) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn folder_without_model_file() {
    let d = tmp("nomodel");
    copy(
        &fixtures().join("llm/tokenizer/tokenizer.json"),
        &d.join("tokenizer.json"),
    );
    let msg = load_err(&d);
    assert!(msg.contains("no model.mlxfn"), "{msg}");
}

#[test]
fn folder_without_tokenizer() {
    let d = tmp("notok");
    copy(
        &fixtures().join("llm/llama_f32/model.mlxfn"),
        &d.join("model.mlxfn"),
    );
    let msg = load_err(&d);
    assert!(msg.contains("no tokenizer.json"), "{msg}");
}

#[test]
fn path_that_is_not_a_folder() {
    let msg = load_err(&fixtures().join("llm/llama_f32/model.mlxfn"));
    assert!(msg.contains("not a directory"), "{msg}");
}

#[test]
fn mlxfn_file_that_is_not_an_llm_export() {
    let d = tmp("notllm");
    // an MLX export of a transformer block: no metadata
    copy(
        &fixtures().join("mlx_models/transformer_float32/fn.mlxfn"),
        &d.join("model.mlxfn"),
    );
    copy(
        &fixtures().join("llm/tokenizer/tokenizer.json"),
        &d.join("tokenizer.json"),
    );
    let msg = load_err(&d);
    assert!(msg.contains("not a language-model export"), "{msg}");
    assert!(msg.contains("metadata"), "{msg}");
}

#[test]
fn file_that_is_not_mlxfn_at_all() {
    let d = tmp("garbage");
    std::fs::write(d.join("model.mlxfn"), b"this is not a function file").unwrap();
    copy(
        &fixtures().join("llm/tokenizer/tokenizer.json"),
        &d.join("tokenizer.json"),
    );
    let msg = load_err(&d);
    assert!(msg.contains("model.mlxfn"), "{msg}");
}

#[test]
fn prompt_longer_than_the_context() {
    let llm = Llm::load(&fixtures().join("llm/llama_f32")).unwrap();
    let limit = llm.model().metadata().context_limit;
    let prompt = vec![5u32; limit + 3];
    let err = llm
        .generate(prompt, GenerateOptions::default())
        .err()
        .expect("refused");
    assert!(matches!(err, LlmError::PromptTooLong { .. }));
    let msg = err.to_string();
    assert!(msg.contains(&format!("{} tokens", limit + 3)), "{msg}");
    assert!(msg.contains(&format!("context limit is {limit}")), "{msg}");
}

#[test]
fn generation_stops_at_the_context_limit() {
    let llm = Llm::load(&fixtures().join("llm/llama_f32")).unwrap();
    let limit = llm.model().metadata().context_limit;
    let options = GenerateOptions {
        max_tokens: 10 * limit,
        ignore_eos: true,
        ..GenerateOptions::default()
    };
    let mut gen = llm.generate(vec![5, 6, 7], options).unwrap();
    let n = gen
        .by_ref()
        .inspect(|t| assert!(t.is_ok(), "{t:?}"))
        .count();
    // the cache holds the prompt and every fed token; the last sample is not fed
    assert_eq!(n, limit - 3 + 1);
    assert_eq!(gen.finish(), Some(mlx_llm::Finish::Context));
}

#[test]
fn bad_sampling_parameters() {
    let llm = Llm::load(&fixtures().join("llm/llama_f32")).unwrap();
    for s in [
        Sampling {
            temp: -1.0,
            ..Sampling::default()
        },
        Sampling {
            temp: 1.0,
            top_p: 1.5,
            ..Sampling::default()
        },
        Sampling {
            temp: 1.0,
            min_p: -0.1,
            ..Sampling::default()
        },
        Sampling {
            temp: 1.0,
            top_k: 100_000,
            ..Sampling::default()
        },
    ] {
        let options = GenerateOptions {
            sampling: s,
            ..GenerateOptions::default()
        };
        let err = llm.generate(vec![1, 2], options).err().expect("refused");
        assert!(
            err.to_string().starts_with("bad sampling parameter"),
            "{err}"
        );
    }
}

#[test]
fn empty_prompt() {
    let llm = Llm::load(&fixtures().join("llm/llama_f32")).unwrap();
    let err = llm
        .generate(vec![], GenerateOptions::default())
        .err()
        .unwrap();
    assert_eq!(err.to_string(), "the prompt has no tokens");
}
