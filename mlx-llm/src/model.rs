//! The exported step function and its cache: one call per prompt block or
//! decoded token, the cache moved up to the next slot size when it is full.

use crate::error::{LlmError, Result};
use crate::metadata::{CacheEntry, Metadata};
use mlx::{ops, Array, Dtype, ImportedFunction};
use std::path::{Path, PathBuf};

/// An imported `model.mlxfn` with its metadata.
pub struct Model {
    func: ImportedFunction,
    meta: Metadata,
    path: PathBuf,
}

/// The running state of one sequence: the cache arrays and how many tokens they hold.
pub struct Session {
    cache: Vec<Array>,
    offset: usize,
    /// Index into `slot_sizes` of the current full-cache size.
    size: usize,
}

impl Session {
    /// The cache arrays, in the export's input order.
    pub fn cache(&self) -> &[Array] {
        &self.cache
    }

    /// Tokens the cache holds.
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl Model {
    /// Imports `path` and checks that it follows the LLM convention.
    pub fn load(path: &Path) -> Result<Model> {
        let func = mlx::import_function(path)?;
        let meta = Metadata::parse(func.metadata(), path)?;
        let want = 2 + meta
            .cache
            .iter()
            .map(|c| match c {
                CacheEntry::Arrays { shapes, .. } => shapes.len(),
                _ => 2,
            })
            .sum::<usize>();
        for s in func.signatures() {
            if s.positional.len() != want || !s.keyword.is_empty() {
                return Err(LlmError::NotAnLlmExport {
                    path: path.to_path_buf(),
                    msg: format!(
                        "a trace takes {} positional and {} keyword inputs; the metadata's \
                         cache layout needs {want} positional (tokens, offset, cache)",
                        s.positional.len(),
                        s.keyword.len()
                    ),
                });
            }
        }
        Ok(Model {
            func,
            meta,
            path: path.to_path_buf(),
        })
    }

    pub fn metadata(&self) -> &Metadata {
        &self.meta
    }

    /// A session with an empty cache at the smallest slot size.
    pub fn new_session(&self) -> Result<Session> {
        let cache = self.zeros(self.meta.slot_sizes[0])?;
        Ok(Session {
            cache,
            offset: 0,
            size: 0,
        })
    }

    fn zeros(&self, slots: usize) -> Result<Vec<Array>> {
        let mut out = Vec::new();
        for c in &self.meta.cache {
            match c {
                CacheEntry::Kv {
                    key_shape,
                    value_shape,
                    dtype,
                } => {
                    let dt = dtype_of(dtype);
                    out.push(ops::zeros(
                        &[1, key_shape[0], slots as i32, key_shape[1]],
                        dt,
                    )?);
                    out.push(ops::zeros(
                        &[1, value_shape[0], slots as i32, value_shape[1]],
                        dt,
                    )?);
                }
                CacheEntry::Ring {
                    key_shape,
                    value_shape,
                    dtype,
                    slots,
                    ..
                } => {
                    let dt = dtype_of(dtype);
                    let n = *slots as i32;
                    out.push(ops::zeros(&[1, key_shape[0], n, key_shape[1]], dt)?);
                    out.push(ops::zeros(&[1, value_shape[0], n, value_shape[1]], dt)?);
                }
                CacheEntry::Arrays { shapes, dtypes } => {
                    for (s, d) in shapes.iter().zip(dtypes) {
                        let mut shape = vec![1];
                        shape.extend_from_slice(s);
                        out.push(ops::zeros(&shape, dtype_of(d))?);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Moves the full caches of `s` up to the smallest slot size holding
    /// `need` tokens (zeros appended on the slot axis; rings and state arrays
    /// keep their shape).
    fn grow(&self, s: &mut Session, need: usize) -> Result<()> {
        let sizes = &self.meta.slot_sizes;
        if !self.meta.has_kv() || need <= sizes[s.size] {
            return Ok(());
        }
        let Some(next) = sizes.iter().position(|&n| n >= need) else {
            return Err(LlmError::PromptTooLong {
                tokens: need,
                limit: self.meta.context_limit,
            });
        };
        let mut i = 0;
        for c in &self.meta.cache {
            match c {
                CacheEntry::Kv { .. } => {
                    for a in &mut s.cache[i..i + 2] {
                        let add = (sizes[next] - sizes[s.size]) as i32;
                        let zero = Array::scalar_of(0.0, a.dtype());
                        *a = ops::pad(a, &[(0, 0), (0, 0), (0, add), (0, 0)], &zero)?;
                    }
                    i += 2;
                }
                CacheEntry::Ring { .. } => i += 2,
                CacheEntry::Arrays { shapes, .. } => i += shapes.len(),
            }
        }
        s.size = next;
        Ok(())
    }

    /// Runs `tokens` (one block with a trace) through the model at the
    /// session's position; returns the last position's logits `[1, vocab]`.
    pub fn step(&self, s: &mut Session, tokens: &[u32]) -> Result<Array> {
        let end = s.offset + tokens.len();
        if end > self.meta.context_limit {
            return Err(LlmError::PromptTooLong {
                tokens: end,
                limit: self.meta.context_limit,
            });
        }
        self.grow(s, end)?;
        let ids: Vec<i32> = tokens.iter().map(|&t| t as i32).collect();
        let mut args = Vec::with_capacity(2 + s.cache.len());
        args.push(Array::from_slice(&ids, &[1, ids.len() as i32])?);
        args.push(Array::scalar(s.offset as i32));
        // The cache is moved in, not cloned: once `args` is dropped the step's
        // graph holds the only reference, so each cache update writes into
        // the old buffer instead of copying the whole cache every token.
        args.append(&mut s.cache);
        let caches = args.len() - 2;
        let called = self
            .func
            .call(&args)
            .map_err(LlmError::from)
            .and_then(|out| {
                if out.len() == 1 + caches {
                    Ok(out)
                } else {
                    Err(LlmError::NotAnLlmExport {
                        path: self.path.clone(),
                        msg: format!(
                            "a step returned {} arrays, expected logits and {caches} cache arrays",
                            out.len()
                        ),
                    })
                }
            });
        let mut out = match called {
            Ok(out) => out,
            Err(e) => {
                s.cache = args.split_off(2);
                return Err(e);
            }
        };
        drop(args);
        // Held before evaluating, so a failed evaluation leaves the session
        // with the step's arrays rather than none; an input buffer the step
        // wrote in place cannot be read again, so such a session is not
        // resumable: start a new one.
        s.cache = out[1..].to_vec();
        mlx::eval(&out)?;
        s.offset = end;
        Ok(out.swap_remove(0))
    }

    /// The block lengths to feed `n` prompt tokens: largest trace first.
    pub fn blocks(&self, mut n: usize) -> Vec<usize> {
        let mut out = Vec::new();
        while n > 0 {
            let b = *self
                .meta
                .prefill_blocks
                .iter()
                .rev()
                .find(|&&b| b <= n)
                .expect("prefill_blocks holds 1");
            out.push(b);
            n -= b;
        }
        out
    }
}

impl Session {
    /// Tokens held in the cache.
    pub fn len(&self) -> usize {
        self.offset
    }

    pub fn is_empty(&self) -> bool {
        self.offset == 0
    }
}

fn dtype_of(name: &str) -> Dtype {
    // Metadata::parse checked every cache dtype name.
    Dtype::from_name(name).unwrap_or(Dtype::Float32)
}
