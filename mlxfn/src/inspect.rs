//! `mlxfn inspect`: what a file holds, as text or JSON.

use crate::Failure;
use mlx::export::{Signature, ValueRef};
use mlx::Spec;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

fn spec_json(s: &Spec) -> serde_json::Value {
    json!({ "shape": s.shape, "dtype": s.dtype.name() })
}

fn spec_text(s: &Spec) -> String {
    format!("{}{:?}", s.dtype, s.shape)
}

fn human_bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

pub fn inspect(file: &Path, as_json: bool) -> Result<(), Failure> {
    let f = mlx::import_function(file)?;
    let table = f.table();
    let mut total: BTreeMap<String, usize> = BTreeMap::new();
    let mut functions = Vec::new();
    let mut used_constants = std::collections::BTreeSet::new();
    for (i, (t, sig)) in table.functions.iter().zip(f.signatures()).enumerate() {
        let mut hist: BTreeMap<String, usize> = BTreeMap::new();
        for e in &t.entries {
            *hist.entry(e.primitive.name().to_string()).or_default() += 1;
            *total.entry(e.primitive.name().to_string()).or_default() += 1;
        }
        for r in t
            .entries
            .iter()
            .flat_map(|e| e.inputs.iter())
            .chain(t.outputs.iter())
        {
            if let ValueRef::Constant(c) = r {
                used_constants.insert(*c);
            }
        }
        functions.push((i, sig.clone(), f.output_specs(i), hist, t.entries.len()));
    }
    let const_bytes: usize = table.constants.iter().map(|a| a.nbytes()).sum();
    let format = match f.format() {
        mlx::Format::Native => "native",
        mlx::Format::Mlx => "mlx",
    };
    let readers = mlx_readers(&f);
    if as_json {
        let fns: Vec<_> = functions
            .iter()
            .map(|(i, sig, outs, hist, n): &(usize, Signature, Vec<Spec>, BTreeMap<String, usize>, usize)| {
                json!({
                    "index": i,
                    "positional": sig.positional.iter().map(spec_json).collect::<Vec<_>>(),
                    "keyword": sig.keyword.iter().map(|(k, s)| (k.clone(), spec_json(s))).collect::<serde_json::Map<_, _>>(),
                    "outputs": outs.iter().map(spec_json).collect::<Vec<_>>(),
                    "primitive_count": n,
                    "primitives": hist,
                })
            })
            .collect();
        let v = json!({
            "file": file.display().to_string(),
            "format": format,
            "writer_version": f.writer_version(),
            "mlx_readers": readers.as_ref().map_or_else(
                |e| json!({ "error": e }),
                |(r, note)| json!({
                    "text": r.to_string(),
                    "first": r.known().map(|k| k.0.to_string()),
                    "last": r.known().map(|k| k.1.to_string()),
                    "before": r.before.map(|b| b.to_string()),
                    "note": note,
                }),
            ),
            "metadata": f.metadata(),
            "shapeless": f.shapeless(),
            "functions": fns,
            "primitives": total,
            "constants": { "count": table.constants.len(), "bytes": const_bytes },
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| Failure {
                code: 1,
                msg: e.to_string()
            })?
        );
        return Ok(());
    }
    println!("file:       {}", file.display());
    println!(
        "format:     {format} (written by version {})",
        f.writer_version()
    );
    match &readers {
        Ok((r, note)) => println!("mlx reads:  {r}{note}"),
        Err(e) => println!("mlx reads:  none ({e})"),
    }
    println!("metadata:   {:?}", f.metadata());
    println!(
        "shapeless:  {}",
        if f.shapeless() {
            "yes (dtypes and ranks bind)"
        } else {
            "no"
        }
    );
    println!("functions:  {}", functions.len());
    for (i, sig, outs, hist, n) in &functions {
        println!(
            "  [{i}] {sig} -> ({})",
            outs.iter().map(spec_text).collect::<Vec<_>>().join(", ")
        );
        let h: Vec<String> = hist.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("      {n} primitives: {}", h.join(", "));
    }
    let h: Vec<String> = total.iter().map(|(k, v)| format!("{k} {v}")).collect();
    println!("primitives: {}", h.join(", "));
    println!(
        "constants:  {} ({})",
        table.constants.len(),
        human_bytes(const_bytes)
    );
    Ok(())
}

/// Which MLX releases can import the file: for an MLX file, those that lay
/// it out as its writer did; for a native file, what `mlxfn convert --to
/// mlx` would write (with the note saying so).
fn mlx_readers(
    f: &mlx::ImportedFunction,
) -> Result<(mlx::export::mlx::ReaderRange, &'static str), String> {
    use mlx::export::mlx::{layout_of, readers};
    let (layout, note) = match f.format() {
        mlx::Format::Mlx => (layout_of(f.writer_version()), ""),
        mlx::Format::Native => (
            mlx::primitive::MlxVersion::NEWEST,
            " (after `mlxfn convert --to mlx`; this native file itself is for this library only)",
        ),
    };
    readers(f.table(), layout)
        .map(|r| (r, note))
        .map_err(|e| e.to_string())
}
