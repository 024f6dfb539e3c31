//! The global primitive table, filled at link time through `inventory`.

use super::{MlxReader, Primitive};
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
}

impl std::fmt::Debug for PrimitiveEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrimitiveEntry")
            .field("name", &self.name)
            .field("aliases", &self.aliases)
            .finish_non_exhaustive()
    }
}

inventory::collect!(PrimitiveEntry);

fn table() -> &'static HashMap<&'static str, &'static PrimitiveEntry> {
    static TABLE: OnceLock<HashMap<&'static str, &'static PrimitiveEntry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut map = HashMap::new();
        for e in inventory::iter::<PrimitiveEntry> {
            for n in std::iter::once(&e.name).chain(e.aliases.iter()) {
                // First registration wins; `registry_problems` reports the clash.
                map.entry(*n).or_insert(e);
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
        for n in std::iter::once(&e.name).chain(e.aliases.iter()) {
            if let Some(prev) = seen.insert(n, e.name) {
                problems.push(format!("`{n}` is registered by both {prev} and {}", e.name));
            }
        }
    }
    problems
}
