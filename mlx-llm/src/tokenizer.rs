//! The folder's Hugging Face tokenizer (tokenizer.json) and chat template
//! (tokenizer_config.json's `chat_template`, or chat_template.jinja), applied
//! as mlx-lm does: the template rendered with the user message and a
//! generation prompt, then encoded without special tokens; without a
//! template, the prompt is encoded with them.

use crate::error::{LlmError, Result};
use std::path::Path;

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    chat_template: Option<String>,
    bos_token: Option<String>,
    eos_token: Option<String>,
}

impl Tokenizer {
    /// Reads `dir/tokenizer.json` and, when present, `dir/tokenizer_config.json`
    /// and `dir/chat_template.jinja`.
    pub fn load(dir: &Path) -> Result<Tokenizer> {
        let file = dir.join("tokenizer.json");
        if !file.exists() {
            return Err(LlmError::MissingFile {
                dir: dir.to_path_buf(),
                file: "tokenizer.json",
                why: "the Hugging Face tokenizer export_llm.py copies beside the model",
            });
        }
        let inner = tokenizers::Tokenizer::from_file(&file)
            .map_err(|e| LlmError::Tokenizer(format!("{}: {e}", file.display())))?;
        let mut t = Tokenizer {
            inner,
            chat_template: None,
            bos_token: None,
            eos_token: None,
        };
        let config = dir.join("tokenizer_config.json");
        if config.exists() {
            let text = read(&config)?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| LlmError::Tokenizer(format!("{}: {e}", config.display())))?;
            t.chat_template = template_of(&v);
            t.bos_token = token_of(&v, "bos_token");
            t.eos_token = token_of(&v, "eos_token");
        }
        let jinja = dir.join("chat_template.jinja");
        if jinja.exists() {
            t.chat_template = Some(read(&jinja)?);
        }
        Ok(t)
    }

    pub fn has_chat_template(&self) -> bool {
        self.chat_template.is_some()
    }

    /// The prompt's token ids: through the chat template when `chat` and the
    /// tokenizer has one, else the plain text with special tokens.
    pub fn encode_prompt(&self, prompt: &str, chat: bool) -> Result<Vec<u32>> {
        match (&self.chat_template, chat) {
            (Some(tpl), true) => {
                let text = self.render_chat(tpl, prompt)?;
                self.encode(&text, false)
            }
            _ => self.encode(prompt, true),
        }
    }

    pub fn encode(&self, text: &str, special: bool) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode(text, special)
            .map_err(|e| LlmError::Tokenizer(format!("encoding failed: {e}")))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text of `ids`, special tokens skipped (as mlx-lm's detokenizer does).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, true)
            .map_err(|e| LlmError::Tokenizer(format!("decoding failed: {e}")))
    }

    /// The ids of `tokenizer_config.json`'s eos token, if it names one.
    pub fn eos_id(&self) -> Option<u32> {
        self.eos_token
            .as_deref()
            .and_then(|t| self.inner.token_to_id(t))
    }

    fn render_chat(&self, tpl: &str, prompt: &str) -> Result<String> {
        let mut env = minijinja::Environment::new();
        // transformers renders with trim_blocks and lstrip_blocks
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |msg: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    msg,
                ))
            },
        );
        env.add_template("chat", tpl)
            .map_err(|e| LlmError::Tokenizer(format!("chat template does not parse: {e}")))?;
        let ctx = minijinja::context! {
            messages => vec![minijinja::context! { role => "user", content => prompt }],
            add_generation_prompt => true,
            bos_token => self.bos_token.clone().unwrap_or_default(),
            eos_token => self.eos_token.clone().unwrap_or_default(),
        };
        env.get_template("chat")
            .and_then(|t| t.render(ctx))
            .map_err(|e| LlmError::Tokenizer(format!("chat template failed: {e}")))
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|err| LlmError::Io {
        path: path.to_path_buf(),
        err,
    })
}

/// `chat_template` as a string, or the entry named "default" of a list.
fn template_of(config: &serde_json::Value) -> Option<String> {
    match config.get("chat_template")? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(list) => list
            .iter()
            .find(|e| e.get("name").and_then(|n| n.as_str()) == Some("default"))
            .and_then(|e| e.get("template")?.as_str().map(str::to_string)),
        _ => None,
    }
}

/// A special token given as a string or as `{"content": ...}`.
fn token_of(config: &serde_json::Value, key: &str) -> Option<String> {
    match config.get(key)? {
        serde_json::Value::String(s) => Some(s.clone()),
        v => v.get("content")?.as_str().map(str::to_string),
    }
}

/// Turns a growing list of token ids into text pieces that never end inside a
/// UTF-8 character: the ids since the last line break are decoded each time
/// and only text past what was already emitted, and not ending in U+FFFD (an
/// incomplete byte sequence), is returned.
#[derive(Default)]
pub struct StreamDecoder {
    ids: Vec<u32>,
    emitted: usize,
}

impl StreamDecoder {
    pub fn new() -> StreamDecoder {
        StreamDecoder::default()
    }

    /// Adds one id; returns the text that became complete.
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<String> {
        self.ids.push(id);
        let text = tok.decode(&self.ids)?;
        if text.ends_with('\u{FFFD}') || text.len() < self.emitted {
            return Ok(String::new());
        }
        let piece = text[self.emitted..].to_string();
        if text.ends_with('\n') {
            self.ids.clear();
            self.emitted = 0;
        } else {
            self.emitted = text.len();
        }
        Ok(piece)
    }

    /// Whatever is left (an incomplete character shows as U+FFFD).
    pub fn finish(&mut self, tok: &Tokenizer) -> Result<String> {
        let text = tok.decode(&self.ids)?;
        let piece = text.get(self.emitted..).unwrap_or("").to_string();
        self.ids.clear();
        self.emitted = 0;
        Ok(piece)
    }
}
