//! Exporting: tracing functions and writing them to a file.

use super::decompose::{decompose_tape, Expand};
use super::signature::{list, Signature};
use super::tape::{FunctionTable, Tape};
use super::{write_table, write_table_for_mlx, ExportOptions, Format, MlxVersion};
use crate::primitive::{Spec, StateValue};
use crate::trace_flag::ShapelessGuard;
use crate::transforms::simplify::simplify;
use crate::transforms::tracing::{trace, ConstantPool};
use crate::{Array, Error, Kwargs, Result};
use std::path::{Path, PathBuf};

/// Traces `f` on `args` and writes it to `path`.
pub fn export_function<F>(
    path: impl AsRef<Path>,
    f: F,
    args: &[Array],
    opts: &ExportOptions,
) -> Result<()>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let mut ex = exporter(path, move |a: &[Array], _: &Kwargs| f(a), opts)?;
    ex.export(args, &Kwargs::new())?;
    ex.finish()
}

/// Traces `f` on positional and keyword inputs and writes it to `path`.
pub fn export_function_kwargs<G>(
    path: impl AsRef<Path>,
    f: G,
    args: &[Array],
    kwargs: &Kwargs,
    opts: &ExportOptions,
) -> Result<()>
where
    G: Fn(&[Array], &Kwargs) -> Result<Vec<Array>>,
{
    let mut ex = exporter(path, f, opts)?;
    ex.export(args, kwargs)?;
    ex.finish()
}

/// An exporter that writes several traces of `f` (different input
/// signatures) to one file, sharing constants. The file is written by
/// [`FunctionExporter::finish`] (or, best effort, on drop).
pub fn exporter<G>(
    path: impl AsRef<Path>,
    f: G,
    opts: &ExportOptions,
) -> Result<FunctionExporter<G>>
where
    G: Fn(&[Array], &Kwargs) -> Result<Vec<Array>>,
{
    Ok(FunctionExporter {
        path: path.as_ref().to_path_buf(),
        f,
        opts: opts.clone(),
        traces: Traces::new(opts),
        finished: false,
        mlx_release: None,
    })
}

/// Several traces of one function, written to one file. See [`exporter`].
pub struct FunctionExporter<G> {
    path: PathBuf,
    f: G,
    opts: ExportOptions,
    traces: Traces,
    finished: bool,
    /// Set by [`FunctionExporter::for_mlx`].
    mlx_release: Option<MlxVersion>,
}

impl<G> FunctionExporter<G>
where
    G: Fn(&[Array], &Kwargs) -> Result<Vec<Array>>,
{
    /// Traces the function on inputs shaped like `args` and `kwargs`.
    /// A signature that an earlier trace already covers is an error.
    pub fn export(&mut self, args: &[Array], kwargs: &Kwargs) -> Result<()> {
        if self.finished {
            return Err(Error::Export("export after finish".into()));
        }
        self.traces.add(&self.f, args, kwargs).map(|_| ())
    }

    /// Writes the file in MLX's format for MLX `release` (see
    /// [`write_table_for_mlx`](super::write_table_for_mlx)), whatever the
    /// options' format says.
    pub fn for_mlx(mut self, release: MlxVersion) -> Self {
        self.mlx_release = Some(release);
        self.opts.format = Format::Mlx;
        self
    }

    /// Writes the file (atomically) and closes the exporter.
    pub fn finish(mut self) -> Result<()> {
        self.finished = true;
        self.write()
    }

    fn write(&self) -> Result<()> {
        if self.traces.table.functions.is_empty() {
            return Err(Error::Export(
                "nothing to write: no function was traced".into(),
            ));
        }
        self.write_file()
    }
}

impl<G> FunctionExporter<G> {
    fn write_file(&self) -> Result<()> {
        match self.mlx_release {
            Some(r) => write_table_for_mlx(&self.path, &self.traces.table, r),
            None => write_table(&self.path, &self.traces.table, self.opts.format),
        }
    }
}

impl<G> Drop for FunctionExporter<G> {
    fn drop(&mut self) {
        if !self.finished && !self.traces.table.functions.is_empty() {
            let _ = self.write_file();
        }
    }
}

/// The traces collected so far, with their shared constants.
pub(crate) struct Traces {
    pub table: FunctionTable,
    pool: ConstantPool,
    signatures: Vec<Signature>,
    decompose_fast: bool,
}

impl Traces {
    pub fn new(opts: &ExportOptions) -> Traces {
        Traces {
            table: FunctionTable {
                shapeless: opts.shapeless,
                metadata: opts.metadata.clone(),
                writer_version: env!("CARGO_PKG_VERSION").to_string(),
                ..FunctionTable::default()
            },
            pool: ConstantPool::default(),
            signatures: Vec::new(),
            decompose_fast: opts.decompose_fast,
        }
    }

    /// Traces `f` and adds the trace; returns its index.
    pub fn add<G>(&mut self, f: &G, args: &[Array], kwargs: &Kwargs) -> Result<usize>
    where
        G: Fn(&[Array], &Kwargs) -> Result<Vec<Array>>,
    {
        let shapeless = self.table.shapeless;
        let mut sig = Signature::of_call(args, kwargs);
        sig.shapeless = shapeless;
        if let Some(prev) = self.signatures.iter().find(|s| s.clashes(&sig)) {
            return Err(Error::Export(format!(
                "a trace with signature {prev} is already exported; {sig} would be ambiguous. Traces so far:\n{}",
                list(&self.signatures)
            )));
        }
        let arg_specs: Vec<Spec> = args.iter().map(|a| a.spec().clone()).collect();
        let kw_specs: Vec<(String, Spec)> = kwargs
            .iter()
            .map(|(k, a)| (k.clone(), a.spec().clone()))
            .collect();
        let mut tape = {
            let _shapeless = shapeless.then(ShapelessGuard::enter);
            trace(|a, k| f(a, k), &arg_specs, &kw_specs, &mut self.pool)?
        };
        // Nodes a file cannot hold (a fused chain of an imported function)
        // are always recorded as their fallbacks; with `decompose_fast`,
        // every primitive that has one is.
        let expand = if self.decompose_fast {
            Expand::AllFallbacks
        } else {
            Expand::Unwritable
        };
        if tape.entries.iter().any(|e| expand.applies(&*e.primitive)) {
            let constants = self.pool.arrays.clone();
            tape = decompose_tape(&tape, &constants, &mut self.pool, shapeless, expand)?;
        }
        self.table.constants = self.pool.arrays.clone();
        simplify(&mut tape, &self.table.constants);
        if shapeless {
            check_shapeless(&tape, &self.table.constants)?;
        }
        self.table.functions.push(tape);
        self.signatures.push(sig);
        Ok(self.table.functions.len() - 1)
    }
}

/// Every primitive must keep its meaning at other input shapes.
fn check_shapeless(tape: &Tape, constants: &[Array]) -> Result<()> {
    for (k, e) in tape.entries.iter().enumerate() {
        let ins: Vec<Spec> = e
            .inputs
            .iter()
            .map(|r| super::spec_of_ref(tape, constants, r))
            .collect();
        e.primitive.check_shapeless(&ins).map_err(|err| {
            Error::Export(format!(
                "shapeless export: entry {k} ({}) cannot adapt to other input shapes: {err}",
                e.primitive.name()
            ))
        })?;
    }
    Ok(())
}

/// What [`export_with_callback`] reports, in order: inputs, keyword inputs,
/// constants, each primitive in tape order, outputs.
#[derive(Clone, Debug, PartialEq)]
pub enum ExportEvent {
    Inputs(Vec<Spec>),
    KeywordInputs(Vec<(String, Spec)>),
    Constant {
        index: usize,
        spec: Spec,
    },
    Primitive {
        name: String,
        state: Vec<(String, StateValue)>,
        inputs: Vec<Spec>,
        outputs: Vec<Spec>,
    },
    Outputs(Vec<Spec>),
}

/// Traces `f` like an export and reports what would be written, without writing.
pub fn export_with_callback<G>(
    mut cb: impl FnMut(ExportEvent),
    f: G,
    args: &[Array],
    kwargs: &Kwargs,
    opts: &ExportOptions,
) -> Result<()>
where
    G: Fn(&[Array], &Kwargs) -> Result<Vec<Array>>,
{
    let mut traces = Traces::new(opts);
    let i = traces.add(&f, args, kwargs)?;
    let t = &traces.table.functions[i];
    cb(ExportEvent::Inputs(t.inputs[..t.positional].to_vec()));
    cb(ExportEvent::KeywordInputs(
        t.kwarg_names
            .iter()
            .cloned()
            .zip(t.inputs[t.positional..].iter().cloned())
            .collect(),
    ));
    let mut seen = std::collections::BTreeSet::new();
    for r in t
        .entries
        .iter()
        .flat_map(|e| e.inputs.iter())
        .chain(t.outputs.iter())
    {
        if let super::ValueRef::Constant(c) = *r {
            if seen.insert(c) {
                cb(ExportEvent::Constant {
                    index: c,
                    spec: traces.table.constants[c].spec().clone(),
                });
            }
        }
    }
    for e in &t.entries {
        cb(ExportEvent::Primitive {
            name: e.primitive.name().to_string(),
            state: e
                .primitive
                .state_names()
                .iter()
                .map(|s| s.to_string())
                .zip(e.primitive.state())
                .collect(),
            inputs: e
                .inputs
                .iter()
                .map(|r| super::spec_of_ref(t, &traces.table.constants, r))
                .collect(),
            outputs: e.outputs.clone(),
        });
    }
    cb(ExportEvent::Outputs(
        t.outputs
            .iter()
            .map(|r| super::spec_of_ref(t, &traces.table.constants, r))
            .collect(),
    ));
    Ok(())
}
