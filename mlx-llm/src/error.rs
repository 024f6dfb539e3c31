//! One error type for loading and generating, each variant saying what was
//! expected and what was found.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum LlmError {
    /// A file the folder must hold is absent.
    MissingFile {
        dir: PathBuf,
        file: &'static str,
        why: &'static str,
    },
    /// model.mlxfn is not an export of tools/export_llm.py.
    NotAnLlmExport {
        path: PathBuf,
        msg: String,
    },
    /// The prompt does not fit the context.
    PromptTooLong {
        tokens: usize,
        limit: usize,
    },
    /// The prompt has no tokens.
    EmptyPrompt,
    /// A sampling parameter out of range.
    BadSampling(String),
    /// The tokenizer or the chat template failed.
    Tokenizer(String),
    /// The engine failed (import or evaluation).
    Mlx(mlx::Error),
    Io {
        path: PathBuf,
        err: std::io::Error,
    },
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LlmError::MissingFile { dir, file, why } => write!(
                f,
                "{}: no {file} ({why}); expected a folder written by tools/export_llm.py",
                dir.display()
            ),
            LlmError::NotAnLlmExport { path, msg } => write!(
                f,
                "{}: not a language-model export of tools/export_llm.py: {msg}",
                path.display()
            ),
            LlmError::PromptTooLong { tokens, limit } => write!(
                f,
                "the prompt has {tokens} tokens but the model's context limit is {limit}; \
                 shorten the prompt or export with a larger --max-kv"
            ),
            LlmError::EmptyPrompt => write!(f, "the prompt has no tokens"),
            LlmError::BadSampling(m) => write!(f, "bad sampling parameter: {m}"),
            LlmError::Tokenizer(m) => write!(f, "tokenizer: {m}"),
            LlmError::Mlx(e) => write!(f, "{e}"),
            LlmError::Io { path, err } => write!(f, "{}: {err}", path.display()),
        }
    }
}

impl std::error::Error for LlmError {}

impl From<mlx::Error> for LlmError {
    fn from(e: mlx::Error) -> Self {
        LlmError::Mlx(e)
    }
}

pub type Result<T> = std::result::Result<T, LlmError>;
