//! The JSON metadata string of an LLM export (docs/llm-convention.md): what
//! the traces expect, read once at load and checked before any call.

use crate::error::{LlmError, Result};
use mlx::Dtype;
use serde::Deserialize;
use std::path::Path;

/// The `format` value every LLM export carries.
pub const FORMAT: &str = "mlxfn-llm";
/// The newest convention version this crate reads.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, Deserialize)]
pub struct Metadata {
    pub format: String,
    pub version: u32,
    pub architecture: Option<String>,
    pub vocab_size: Option<usize>,
    #[serde(default)]
    pub eos_token_ids: Vec<u32>,
    pub context_limit: usize,
    pub dtype: Option<String>,
    /// Prompt block lengths with a trace (ascending, holds 1).
    pub prefill_blocks: Vec<usize>,
    /// Full-cache slot counts with a trace (ascending; `[0]` when no layer has a KV cache).
    pub slot_sizes: Vec<usize>,
    pub cache: Vec<CacheEntry>,
}

/// One layer's cache, in input order.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum CacheEntry {
    /// mlx-lm's KVCache: keys `[1, heads, slots, dim]`, values likewise; slots grow.
    Kv {
        key_shape: [i32; 2],
        value_shape: [i32; 2],
        dtype: String,
    },
    /// mlx-lm's RotatingKVCache: a ring of `slots` positions (the sliding window).
    Ring {
        key_shape: [i32; 2],
        value_shape: [i32; 2],
        dtype: String,
        window: usize,
        slots: usize,
    },
    /// mlx-lm's ArraysCache / MambaCache: fixed state arrays `[1, ..shape]`.
    Arrays {
        shapes: Vec<Vec<i32>>,
        dtypes: Vec<String>,
    },
}

impl Metadata {
    /// Parses and checks the metadata string of `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Metadata> {
        let bad = |msg: String| LlmError::NotAnLlmExport {
            path: path.to_path_buf(),
            msg,
        };
        if text.is_empty() {
            return Err(bad(
                "its metadata string is empty (expected the JSON export_llm.py writes)".into(),
            ));
        }
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| bad(format!("its metadata is not JSON ({e})")))?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            other => {
                return Err(bad(format!(
                    "metadata format is {other:?}, expected \"{FORMAT}\""
                )))
            }
        }
        let meta: Metadata = serde_json::from_value(value)
            .map_err(|e| bad(format!("metadata does not follow the convention: {e}")))?;
        if meta.version > VERSION {
            return Err(bad(format!(
                "convention version {} is newer than this reader's {VERSION}",
                meta.version
            )));
        }
        if meta.prefill_blocks.first() != Some(&1) {
            return Err(bad(format!(
                "prefill_blocks {:?} must start with 1",
                meta.prefill_blocks
            )));
        }
        if meta.slot_sizes.is_empty() || meta.cache.is_empty() {
            return Err(bad("no slot sizes or no cache layers".into()));
        }
        for c in &meta.cache {
            for d in c.dtypes() {
                if Dtype::from_name(d).is_none() {
                    return Err(bad(format!("unknown cache dtype {d:?}")));
                }
            }
        }
        Ok(meta)
    }

    /// Whether some layer keeps a growing KV cache.
    pub fn has_kv(&self) -> bool {
        self.cache
            .iter()
            .any(|c| matches!(c, CacheEntry::Kv { .. }))
    }
}

impl CacheEntry {
    fn dtypes(&self) -> Vec<&str> {
        match self {
            CacheEntry::Kv { dtype, .. } | CacheEntry::Ring { dtype, .. } => vec![dtype],
            CacheEntry::Arrays { dtypes, .. } => dtypes.iter().map(|s| s.as_str()).collect(),
        }
    }
}
