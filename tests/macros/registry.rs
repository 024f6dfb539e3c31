//! The primitive table: every primitive of the crate is registered (the
//! defence against inventory's "silently empty table"), no two share a name
//! or an alias, and lookups resolve names and aliases or list the known ones.

use mlx::primitive::{lookup, registered, registry_problems};
use mlx::Error;

/// MLX 0.32.4 registry names (mlxfn-format.md §9) implemented so far.
/// Extend this list as primitive families land.
const EXPECTED: &[&str] = &[
    "Add",
    "Subtract",
    "Multiply",
    "Divide",
    "Maximum",
    "Minimum",
    "AsType",
    "Broadcast",
    "Reshape",
    "Transpose",
    "Squeeze",
    "ExpandDims",
    "Cholesky",
    "Inverse",
    "QRF",
    "SVD",
    "Eigh",
    "Eig",
    "SearchSorted",
    "GatherMM",
    "BlockMaskedMM",
    "Hadamard",
    "LayerNormVJP",
    "RMSNormVJP",
    "CustomKernel",
];

#[test]
fn every_implemented_primitive_is_registered() {
    let names: Vec<&str> = registered().iter().map(|e| e.name).collect();
    let missing: Vec<&str> = EXPECTED
        .iter()
        .copied()
        .filter(|n| !names.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "not registered: {missing:?}; registered: {names:?}"
    );
}

#[test]
fn no_name_or_alias_is_registered_twice() {
    assert_eq!(registry_problems(), Vec::<String>::new());
}

#[test]
fn registered_is_sorted_and_names_are_well_formed() {
    let entries = registered();
    assert!(entries.windows(2).all(|w| w[0].name <= w[1].name));
    for e in &entries {
        for n in std::iter::once(&e.name).chain(e.aliases) {
            assert!(
                !n.is_empty() && !n.contains(char::is_whitespace),
                "bad name {n:?}"
            );
        }
    }
}

#[test]
fn lookup_resolves_every_name_and_alias() {
    for e in registered() {
        for n in std::iter::once(&e.name).chain(e.aliases) {
            let found = lookup(n).unwrap();
            assert!(std::ptr::eq(found, e), "`{n}` resolves to {}", found.name);
        }
    }
}

#[test]
fn lookup_of_unknown_name_lists_known_names() {
    let err = lookup("NoSuchPrimitive").unwrap_err();
    let Error::UnknownPrimitive { name, known, .. } = &err else {
        panic!("expected UnknownPrimitive, got {err}");
    };
    assert_eq!(name, "NoSuchPrimitive");
    for n in EXPECTED {
        assert!(
            known.split(", ").any(|k| k == *n),
            "{n} missing from: {known}"
        );
    }
    let msg = err.to_string();
    assert!(msg.contains("unknown primitive `NoSuchPrimitive`"), "{msg}");
    assert!(msg.contains("Add"), "{msg}");
    // Names are case-sensitive, as in MLX files.
    assert!(lookup("add").is_err());
    assert!(lookup("").is_err());
}
