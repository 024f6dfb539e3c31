//! Tokenizing and detokenizing as transformers/mlx-lm do, from the ids
//! tests/fixtures/llm/generate.py stored: plain encoding, the chat template,
//! and streamed text that never splits a UTF-8 character.

use mlx_llm::{StreamDecoder, Tokenizer};
use serde_json::Value;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/llm/tokenizer")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join("expected.json")).unwrap()).unwrap()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

#[test]
fn plain_prompt_ids_equal_transformers() {
    let t = Tokenizer::load(&dir()).unwrap();
    let e = expected();
    let got = t
        .encode_prompt(e["prompt"].as_str().unwrap(), false)
        .unwrap();
    assert_eq!(got, ids(&e["prompt_ids"]));
    assert_eq!(t.decode(&got).unwrap(), e["decoded"].as_str().unwrap());
}

#[test]
fn chat_template_ids_equal_transformers() {
    let t = Tokenizer::load(&dir()).unwrap();
    assert!(t.has_chat_template());
    let e = expected();
    let got = t
        .encode_prompt(e["prompt"].as_str().unwrap(), true)
        .unwrap();
    assert_eq!(got, ids(&e["chat_ids"]));
}

#[test]
fn streamed_text_never_splits_a_character() {
    let t = Tokenizer::load(&dir()).unwrap();
    // byte-level BPE over a vocabulary trained on ASCII text: each of these
    // characters is several byte tokens
    let text = "naïve café — 日本語 🙂 done\nnext line ünïcödé";
    let ids = t.encode(text, false).unwrap();
    assert!(
        ids.len() > text.chars().count(),
        "multi-byte characters span tokens"
    );
    let mut s = StreamDecoder::new();
    let mut out = String::new();
    for &id in &ids {
        let piece = s.push(&t, id).unwrap();
        assert!(!piece.contains('\u{FFFD}'), "half a character in {piece:?}");
        out.push_str(&piece);
    }
    out.push_str(&s.finish(&t).unwrap());
    assert_eq!(out, text);
}
