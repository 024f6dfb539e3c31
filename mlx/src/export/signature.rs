//! Signatures of exported functions and how calls are matched to them.

use super::tape::Tape;
use crate::primitive::Spec;
use crate::{Array, Kwargs};
use std::fmt;

/// The inputs one exported trace accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    pub positional: Vec<Spec>,
    /// Keyword inputs, sorted by name.
    pub keyword: Vec<(String, Spec)>,
    /// Only dtype and rank bind (any sizes).
    pub shapeless: bool,
}

impl Signature {
    pub(crate) fn of_tape(t: &Tape, shapeless: bool) -> Signature {
        Signature {
            positional: t.inputs[..t.positional].to_vec(),
            keyword: t
                .kwarg_names
                .iter()
                .cloned()
                .zip(t.inputs[t.positional..].iter().cloned())
                .collect(),
            shapeless,
        }
    }

    /// The signature of a call with these arrays (exact shapes).
    pub fn of_call(args: &[Array], kwargs: &Kwargs) -> Signature {
        Signature {
            positional: args.iter().map(|a| a.spec().clone()).collect(),
            keyword: kwargs
                .iter()
                .map(|(k, a)| (k.clone(), a.spec().clone()))
                .collect(),
            shapeless: false,
        }
    }

    /// Whether a call with `call`'s inputs runs this trace: same count,
    /// same keyword names (exactly), same dtypes and ranks, and the same
    /// shapes unless shapeless.
    pub fn accepts(&self, call: &Signature) -> bool {
        let fits = |want: &Spec, got: &Spec| {
            want.dtype == got.dtype
                && want.shape.len() == got.shape.len()
                && (self.shapeless || want.shape == got.shape)
        };
        self.positional.len() == call.positional.len()
            && self.keyword.len() == call.keyword.len()
            && self
                .positional
                .iter()
                .zip(&call.positional)
                .all(|(w, g)| fits(w, g))
            && self
                .keyword
                .iter()
                .zip(&call.keyword)
                .all(|((kw, w), (kg, g))| kw == kg && fits(w, g))
    }

    /// Whether two traces could not be told apart by a call.
    pub(crate) fn clashes(&self, other: &Signature) -> bool {
        self.accepts(other) || other.accepts(self)
    }
}

fn spec_text(s: &Spec, shapeless: bool) -> String {
    if shapeless {
        format!("{}[rank {}]", s.dtype, s.shape.len())
    } else {
        format!("{}{:?}", s.dtype, s.shape)
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self
            .positional
            .iter()
            .map(|s| spec_text(s, self.shapeless))
            .collect();
        parts.extend(
            self.keyword
                .iter()
                .map(|(k, s)| format!("{k}={}", spec_text(s, self.shapeless))),
        );
        write!(f, "({})", parts.join(", "))
    }
}

/// One signature per line, for error messages.
pub(crate) fn list(sigs: &[Signature]) -> String {
    sigs.iter()
        .enumerate()
        .map(|(i, s)| format!("  {i}: {s}"))
        .collect::<Vec<_>>()
        .join("\n")
}
