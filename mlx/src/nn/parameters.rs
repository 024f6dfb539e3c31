//! [`Parameters`]: the flat, ordered `name → Array` map of a model's weights
//! (or an optimizer's state).

use crate::{Array, Error, Result};

/// A flat, insertion-ordered map from dotted names (`"layers.0.weight"`) to
/// arrays.
///
/// The order is the order a module lists its parameters in (MLX's
/// `tree_flatten` order: `weight` before `bias`, `layers.2` before
/// `layers.10`), so [`Parameters::arrays`] and [`Parameters::from_arrays`]
/// turn a model into the flat argument list of an exported function and back.
#[derive(Clone, Debug, Default)]
pub struct Parameters {
    entries: Vec<(String, Array)>,
}

impl Parameters {
    /// An empty map.
    pub fn new() -> Parameters {
        Parameters::default()
    }

    /// Rebuilds a map from its names and a flat list of arrays in the same
    /// order (for example the outputs of an imported function).
    pub fn from_arrays<S: AsRef<str>>(names: &[S], arrays: &[Array]) -> Result<Parameters> {
        if names.len() != arrays.len() {
            return Err(Error::invalid(
                "Parameters::from_arrays",
                format!("{} names for {} arrays", names.len(), arrays.len()),
            ));
        }
        let mut out = Parameters::new();
        for (n, a) in names.iter().zip(arrays) {
            let n = n.as_ref();
            if out.contains(n) {
                return Err(Error::invalid(
                    "Parameters::from_arrays",
                    format!("duplicate name {n:?}"),
                ));
            }
            out.entries.push((n.to_string(), a.clone()));
        }
        Ok(out)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sets `name` to `value`: replaced in place if present (keeping its
    /// position), else appended. Returns the previous value.
    pub fn insert(&mut self, name: impl Into<String>, value: Array) -> Option<Array> {
        let name = name.into();
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => Some(std::mem::replace(v, value)),
            None => {
                self.entries.push((name, value));
                None
            }
        }
    }

    /// The array called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Array> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }

    /// The array called `name`, or an error naming `op` and the known names.
    pub fn require(&self, op: &str, name: &str) -> Result<&Array> {
        self.get(name).ok_or_else(|| {
            Error::invalid(
                op,
                format!(
                    "no entry named {name:?}; the entries are {:?}",
                    self.names().collect::<Vec<_>>()
                ),
            )
        })
    }

    /// Whether there is an entry called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// The arrays, in order (cheap clones): the flat argument list of an
    /// exported function.
    pub fn arrays(&self) -> Vec<Array> {
        self.entries.iter().map(|(_, a)| a.clone()).collect()
    }

    /// `(name, array)` pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Array)> {
        self.entries.iter().map(|(n, a)| (n.as_str(), a))
    }

    /// Appends every entry of `other` under `prefix.` (nesting a child
    /// module's parameters). Existing names are replaced in place.
    pub fn extend_prefixed(&mut self, prefix: &str, other: Parameters) {
        for (n, a) in other.entries {
            self.insert(join(prefix, &n), a);
        }
    }

    /// The entries under `prefix.`, with the prefix removed (a child
    /// module's view of its parent's map).
    pub fn under(&self, prefix: &str) -> Parameters {
        let head = format!("{prefix}.");
        let entries = self
            .entries
            .iter()
            .filter_map(|(n, a)| n.strip_prefix(&head).map(|r| (r.to_string(), a.clone())))
            .collect();
        Parameters { entries }
    }

    /// A map with the same names whose arrays are `f(name, array)`.
    pub fn map(&self, mut f: impl FnMut(&str, &Array) -> Result<Array>) -> Result<Parameters> {
        let entries = self
            .entries
            .iter()
            .map(|(n, a)| Ok((n.clone(), f(n, a)?)))
            .collect::<Result<_>>()?;
        Ok(Parameters { entries })
    }

    /// Evaluates every array (shared work is done once).
    pub fn eval(&self) -> Result<()> {
        crate::eval(&self.arrays())
    }
}

/// `prefix.name`, or `name` when the prefix is empty.
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

impl FromIterator<(String, Array)> for Parameters {
    /// Later duplicates replace earlier entries in place.
    fn from_iter<I: IntoIterator<Item = (String, Array)>>(iter: I) -> Parameters {
        let mut out = Parameters::new();
        for (n, a) in iter {
            out.insert(n, a);
        }
        out
    }
}

impl IntoIterator for Parameters {
    type Item = (String, Array);
    type IntoIter = std::vec::IntoIter<(String, Array)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a Parameters {
    type Item = (&'a str, &'a Array);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a Array)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}
