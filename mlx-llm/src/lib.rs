//! Text generation from language models exported by `tools/export_llm.py`
//! (Python MLX + mlx-lm), following the convention of docs/llm-convention.md:
//! one `model.mlxfn` whose traces take `(tokens, offset, *cache)` and return
//! `(logits, *cache)`, the cache layout and limits in its metadata JSON, and
//! the Hugging Face tokenizer files beside it.
//!
//! ```no_run
//! use mlx_llm::{Llm, GenerateOptions};
//! let llm = Llm::load("models/tiny-story".as_ref()).unwrap();
//! let prompt = llm.tokenizer().encode_prompt("Once upon a time", true).unwrap();
//! for id in llm.generate(prompt, GenerateOptions::default()).unwrap() {
//!     print!("{}", id.unwrap());
//! }
//! ```

mod error;
mod generator;
mod metadata;
mod model;
mod sample;
mod tokenizer;

pub use error::{LlmError, Result};
pub use generator::{Finish, GenerateOptions, Generator};
pub use metadata::{CacheEntry, Metadata};
pub use model::{Model, Session};
pub use sample::{log_probs, sample, Sampling};
pub use tokenizer::{StreamDecoder, Tokenizer};

use std::collections::BTreeSet;
use std::path::Path;

/// A loaded export folder: the model and its tokenizer.
pub struct Llm {
    model: Model,
    tokenizer: Tokenizer,
    eos: BTreeSet<u32>,
}

impl Llm {
    /// Loads `dir/model.mlxfn` and `dir/tokenizer.json` (+ tokenizer_config.json).
    pub fn load(dir: &Path) -> Result<Llm> {
        if !dir.is_dir() {
            return Err(LlmError::MissingFile {
                dir: dir.to_path_buf(),
                file: "folder",
                why: "the path is not a directory",
            });
        }
        let file = dir.join("model.mlxfn");
        if !file.exists() {
            return Err(LlmError::MissingFile {
                dir: dir.to_path_buf(),
                file: "model.mlxfn",
                why: "the exported model",
            });
        }
        let tokenizer = Tokenizer::load(dir)?;
        let model = Model::load(&file)?;
        let mut eos: BTreeSet<u32> = model.metadata().eos_token_ids.iter().copied().collect();
        eos.extend(tokenizer.eos_id());
        Ok(Llm {
            model,
            tokenizer,
            eos,
        })
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// End-of-sequence ids: the metadata's and the tokenizer's.
    pub fn eos_ids(&self) -> &BTreeSet<u32> {
        &self.eos
    }

    /// A generator over `prompt`'s continuation.
    pub fn generate(&self, prompt: Vec<u32>, options: GenerateOptions) -> Result<Generator<'_>> {
        Generator::new(&self.model, prompt, options, self.eos.clone())
    }
}
