//! The decode loop as an iterator of token ids, in mlx-lm's order: the prompt
//! but its last token is prefilled in blocks, the last token is the first
//! decode step, each step's logits become log-probabilities and a sample.

use crate::error::{LlmError, Result};
use crate::model::{Model, Session};
use crate::sample::{log_probs, sample, Sampling};
use std::collections::BTreeSet;

/// When generation ends.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    pub max_tokens: usize,
    pub sampling: Sampling,
    /// Keep going past end-of-sequence tokens (tests compare fixed lengths).
    pub ignore_eos: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: 256,
            sampling: Sampling::greedy(),
            ignore_eos: false,
        }
    }
}

/// Why a generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// An end-of-sequence token was sampled (it is not yielded).
    Eos,
    /// `max_tokens` were generated.
    MaxTokens,
    /// The cache reached the model's context limit.
    Context,
}

/// Yields generated token ids; the prompt is processed on the first `next`.
pub struct Generator<'m> {
    model: &'m Model,
    session: Session,
    prompt: Vec<u32>,
    options: GenerateOptions,
    eos: BTreeSet<u32>,
    /// The token to feed next (after the prompt, the last sample).
    pending: Option<u32>,
    produced: usize,
    finish: Option<Finish>,
    progress: Option<Box<dyn FnMut(usize, usize) + 'm>>,
    /// The seeded generation's own random keys.
    keys: Option<mlx::random::KeySequence>,
}

impl<'m> Generator<'m> {
    pub(crate) fn new(
        model: &'m Model,
        prompt: Vec<u32>,
        options: GenerateOptions,
        eos: BTreeSet<u32>,
    ) -> Result<Generator<'m>> {
        if prompt.is_empty() {
            return Err(LlmError::EmptyPrompt);
        }
        let limit = model.metadata().context_limit;
        if prompt.len() > limit {
            return Err(LlmError::PromptTooLong {
                tokens: prompt.len(),
                limit,
            });
        }
        options
            .sampling
            .validate(model.metadata().vocab_size.unwrap_or(usize::MAX))?;
        let seed = options.sampling.seed;
        Ok(Generator {
            model,
            session: model.new_session()?,
            prompt,
            options,
            eos,
            pending: None,
            produced: 0,
            finish: None,
            progress: None,
            keys: seed.map(mlx::random::KeySequence::new),
        })
    }

    /// Called with (tokens processed, prompt tokens) after each prompt block.
    pub fn on_prompt_progress(mut self, f: impl FnMut(usize, usize) + 'm) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// Why generation stopped, once it has.
    pub fn finish(&self) -> Option<Finish> {
        self.finish
    }

    pub fn prompt_len(&self) -> usize {
        self.prompt.len()
    }

    /// Prefills all but the last prompt token; returns that last token.
    fn prefill(&mut self) -> Result<u32> {
        let n = self.prompt.len() - 1;
        let mut done = 0;
        for b in self.model.blocks(n) {
            self.model
                .step(&mut self.session, &self.prompt[done..done + b])?;
            done += b;
            if let Some(p) = self.progress.as_mut() {
                p(done, self.prompt.len());
            }
        }
        Ok(self.prompt[n])
    }

    fn advance(&mut self) -> Result<Option<u32>> {
        if self.finish.is_some() {
            return Ok(None);
        }
        if self.produced >= self.options.max_tokens {
            self.finish = Some(Finish::MaxTokens);
            return Ok(None);
        }
        let feed = match self.pending {
            Some(t) => t,
            None => self.prefill()?,
        };
        if self.session.len() + 1 > self.model.metadata().context_limit {
            self.finish = Some(Finish::Context);
            return Ok(None);
        }
        let logits = self.model.step(&mut self.session, &[feed])?;
        // Greedy steps draw nothing (nor does mlx-lm's argmax).
        let sampled = self.options.sampling.temp != 0.0;
        let key = self.keys.as_mut().filter(|_| sampled).map(|k| k.next_key());
        let id = sample(&log_probs(&logits)?, &self.options.sampling, key.as_ref())?;
        if !self.options.ignore_eos && self.eos.contains(&id) {
            self.finish = Some(Finish::Eos);
            return Ok(None);
        }
        self.pending = Some(id);
        self.produced += 1;
        Ok(Some(id))
    }
}

impl Iterator for Generator<'_> {
    type Item = Result<u32>;

    fn next(&mut self) -> Option<Result<u32>> {
        match self.advance() {
            Ok(Some(id)) => Some(Ok(id)),
            Ok(None) => None,
            Err(e) => {
                self.finish = Some(Finish::Context);
                Some(Err(e))
            }
        }
    }
}
