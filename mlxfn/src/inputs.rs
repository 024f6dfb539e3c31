//! Parsing `-i` arguments and loading the arrays they name.

use crate::{usage, Failure};
use mlx::{Array, Dtype, Kwargs, Spec};
use std::collections::BTreeMap;

/// Where one `-i` input goes.
pub enum Slot {
    Next,
    Index(usize),
    Keyword(String),
}

/// Splits `NAME=FILE` / `N=FILE` / `FILE`.
pub fn parse(arg: &str) -> (Slot, &str) {
    if let Some((name, file)) = arg.split_once('=') {
        if !name.is_empty() && !name.contains(['/', '\\', '.']) {
            return match name.parse::<usize>() {
                Ok(i) => (Slot::Index(i), file),
                Err(_) => (Slot::Keyword(name.to_string()), file),
            };
        }
    }
    (Slot::Next, arg)
}

/// Loads `FILE` (.npy) or `FILE.safetensors[:KEY]`.
pub fn load(spec: &str) -> Result<Array, Failure> {
    let (path, key) = match spec.rsplit_once(':') {
        Some((p, k)) if p.ends_with(".safetensors") => (p, Some(k)),
        _ => (spec, None),
    };
    if path.ends_with(".safetensors") {
        let map = mlx::io::load_safetensors(path)?;
        let keys = || map.keys().cloned().collect::<Vec<_>>().join(", ");
        return match key {
            Some(k) => map
                .get(k)
                .cloned()
                .ok_or_else(|| usage(format!("{path} has no tensor `{k}`; it has: {}", keys()))),
            None if map.len() == 1 => Ok(map.into_values().next().expect("one tensor")),
            None => Err(usage(format!(
                "{path} holds {} tensors; pick one with {path}:KEY ({})",
                map.len(),
                keys()
            ))),
        };
    }
    Ok(mlx::io::load_npy(path)?)
}

/// Builds positional and keyword inputs from `-i` arguments.
pub fn collect(args: &[String]) -> Result<(Vec<Array>, Kwargs), Failure> {
    let mut positional: BTreeMap<usize, Array> = BTreeMap::new();
    let mut kwargs = Kwargs::new();
    let mut next = 0usize;
    for a in args {
        let (slot, file) = parse(a);
        let arr = load(file)?;
        match slot {
            Slot::Next => {
                while positional.contains_key(&next) {
                    next += 1;
                }
                positional.insert(next, arr);
            }
            Slot::Index(i) => {
                if positional.insert(i, arr).is_some() {
                    return Err(usage(format!("positional input {i} given twice")));
                }
            }
            Slot::Keyword(k) => {
                if kwargs.insert(k.clone(), arr).is_some() {
                    return Err(usage(format!("keyword input `{k}` given twice")));
                }
            }
        }
    }
    let n = positional.len();
    if let Some((&i, _)) = positional
        .iter()
        .enumerate()
        .find(|(k, (i, _))| *k != **i)
        .map(|(_, p)| p)
    {
        return Err(usage(format!(
            "positional inputs must be 0..{n} without gaps; input {i} is out of place"
        )));
    }
    Ok((positional.into_values().collect(), kwargs))
}

/// bfloat16 inputs stored as uint16 bit patterns (numpy has no bfloat16)
/// are reinterpreted where the expected dtype is bfloat16.
pub fn adopt_bf16(a: &Array, want: &Spec) -> Array {
    if a.dtype() == Dtype::Uint16 && want.dtype == Dtype::Bfloat16 {
        if let Ok(d) = a.data() {
            return Array::from_data(d, Spec::new(a.shape(), Dtype::Bfloat16));
        }
    }
    a.clone()
}
