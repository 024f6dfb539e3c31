//! Error collection: every problem found in the input is recorded with its
//! span and all of them are reported together, so one build shows the user
//! everything that is wrong instead of one error per round trip.

use proc_macro2::Span;
use std::fmt::Display;

/// Accumulates `syn::Error`s while the derive input is parsed and checked.
#[derive(Default)]
pub struct Ctxt {
    errors: Option<syn::Error>,
}

impl Ctxt {
    /// Records an error at `span`.
    pub fn error(&mut self, span: Span, msg: impl Display) {
        self.push(syn::Error::new(span, msg));
    }

    /// Records an error spanning the tokens of `tokens`.
    pub fn error_at(&mut self, tokens: impl quote::ToTokens, msg: impl Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    /// Records an already built error (it may hold several).
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.errors {
            Some(all) => all.combine(e),
            None => self.errors = Some(e),
        }
    }

    /// The collected errors, if any.
    pub fn finish(self) -> Result<(), syn::Error> {
        match self.errors {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
