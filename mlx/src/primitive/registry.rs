//! The global primitive table, filled at link time through `inventory`.

use super::{MlxReader, MlxVersion, Primitive};
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::OnceLock;

/// One registered primitive: its names and its decoders.
///
/// Only `&'static` data and fn pointers, so `#[derive(Primitive)]` can build
/// it in a constant and `inventory` can collect it at link time.
pub struct PrimitiveEntry {
    /// The registry name written into files.
    pub name: &'static str,
    /// Other names that resolve to this entry.
    pub aliases: &'static [&'static str],
    /// Decodes the native (CBOR map) state.
    pub decode_cbor: fn(&ciborium::Value) -> Result<Box<dyn Primitive>>,
    /// Decodes MLX's positional wire state.
    pub decode_mlx: fn(&mut MlxReader<'_>) -> Result<Box<dyn Primitive>>,
    /// The first MLX release that has this primitive; `None` if MLX has no
    /// such primitive (MLX files cannot hold it).
    pub mlx_since: Option<MlxVersion>,
    /// Names older MLX releases write for it: `(name, before)` is the name
    /// of every release before `before`. They resolve to this entry too.
    pub mlx_old_names: &'static [(&'static str, MlxVersion)],
    /// Releases in which MLX changed this primitive's state layout (a
    /// field was added), ascending.
    pub mlx_layout_changes: &'static [MlxVersion],
    /// Releases from which MLX computes this primitive as this library
    /// does, and how the releases before compute it: `(since, why)`. Files
    /// holding it are not written for releases before `since`.
    pub mlx_meaning_changes: &'static [(MlxVersion, &'static str)],
}

impl PrimitiveEntry {
    /// The name MLX `release` writes for this primitive, or `None` if that
    /// release does not have it.
    pub fn mlx_name(&self, release: MlxVersion) -> Option<&'static str> {
        if self.mlx_since? > release {
            return None;
        }
        let mut name = self.name;
        let mut best: Option<MlxVersion> = None;
        for &(old, before) in self.mlx_old_names {
            if release < before && best.is_none_or(|b| before < b) {
                (name, best) = (old, Some(before));
            }
        }
        Some(name)
    }

    /// Releases at which a file holding this primitive stops being readable
    /// by the releases on the other side: its state layout changes and its
    /// renames.
    pub fn mlx_breakpoints(&self) -> impl Iterator<Item = MlxVersion> + '_ {
        self.mlx_layout_changes
            .iter()
            .copied()
            .chain(self.mlx_old_names.iter().map(|&(_, before)| before))
            .chain(self.mlx_meaning_changes.iter().map(|&(since, _)| since))
    }

    /// Why MLX `release` would compute this primitive differently from
    /// this library (the newest such change after it), or `None`.
    pub fn mlx_meaning_before(&self, release: MlxVersion) -> Option<(MlxVersion, &'static str)> {
        self.mlx_meaning_changes
            .iter()
            .filter(|&&(since, _)| release < since)
            .max_by_key(|&&(since, _)| since)
            .copied()
    }

    /// Every name that resolves to this entry.
    fn all_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        std::iter::once(self.name)
            .chain(self.aliases.iter().copied())
            .chain(self.mlx_old_names.iter().map(|&(n, _)| n))
    }
}

/// The primitive names MLX `release` can import (its serialization
/// registry, as far as this library implements it), sorted. Derived from
/// the registered primitives' `mlx` attributes.
pub fn mlx_names(release: MlxVersion) -> Vec<&'static str> {
    let mut v: Vec<_> = inventory::iter::<PrimitiveEntry>
        .into_iter()
        .filter_map(|e| e.mlx_name(release))
        .collect();
    v.sort_unstable();
    v
}

impl std::fmt::Debug for PrimitiveEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrimitiveEntry")
            .field("name", &self.name)
            .field("aliases", &self.aliases)
            .field("mlx_since", &self.mlx_since)
            .field("mlx_old_names", &self.mlx_old_names)
            .field("mlx_meaning_changes", &self.mlx_meaning_changes)
            .finish_non_exhaustive()
    }
}

inventory::collect!(PrimitiveEntry);

fn table() -> &'static HashMap<&'static str, &'static PrimitiveEntry> {
    static TABLE: OnceLock<HashMap<&'static str, &'static PrimitiveEntry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut map = HashMap::new();
        for e in inventory::iter::<PrimitiveEntry> {
            for n in e.all_names() {
                // First registration wins; `registry_problems` reports the clash.
                map.entry(n).or_insert(e);
            }
        }
        map
    })
}

/// All registered primitives, sorted by name.
pub fn registered() -> Vec<&'static PrimitiveEntry> {
    let mut v: Vec<_> = inventory::iter::<PrimitiveEntry>.into_iter().collect();
    v.sort_by_key(|e| e.name);
    v
}

/// Looks a primitive up by name or alias.
pub fn lookup(name: &str) -> Result<&'static PrimitiveEntry> {
    table()
        .get(name)
        .copied()
        .ok_or_else(|| Error::UnknownPrimitive {
            name: name.to_string(),
            at: String::new(),
            known: registered()
                .iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Names or aliases registered more than once (empty when the table is sound).
pub fn registry_problems() -> Vec<String> {
    let mut seen: HashMap<&str, &str> = HashMap::new();
    let mut problems = Vec::new();
    for e in inventory::iter::<PrimitiveEntry> {
        for n in e.all_names() {
            if let Some(prev) = seen.insert(n, e.name) {
                problems.push(format!("`{n}` is registered by both {prev} and {}", e.name));
            }
        }
    }
    problems
}
