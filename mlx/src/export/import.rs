//! Importing: reading a file into an [`ImportedFunction`] that can be called.

use super::checks::{check_recorded_specs, check_table, Cost};
use super::native::{self, ConstantRecord, Source};
use super::signature::{list, Signature};
use super::tape::{FunctionTable, Tape, ValueRef};
use super::Format;
use crate::trace_flag::is_tracing;
use crate::transforms::fuse::fuse;
use crate::transforms::hoist::hoist;
use crate::transforms::recognize::recognize;
use crate::transforms::shared_input::merge_shared_input;
use crate::transforms::simplify::merge_repeated;
use crate::transforms::tape_call::CallPlan;
use crate::transforms::tracing::{replay, replay_recorded};
use crate::{Array, Error, Kwargs, Result};
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// How to import a file.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Map the file (default): native constants are used in place, MLX
    /// constants in place when aligned, else copied on first use, so an
    /// import reads only the records. The file must not change while the function
    /// is alive: a file truncated or rewritten underneath a live mapping
    /// gives wrong values or a SIGBUS. With `false` the file is read into
    /// memory at import (and native checksums all verified).
    pub mmap: bool,
    /// Reject MLX files with bytes after the last function (MLX ignores them).
    pub strict: bool,
    /// Check native constants against their checksums (default). `false`
    /// trusts the file, as MLX (whose files carry no checksums) does: it
    /// saves one pass over every constant on first use, about as long as a
    /// batch-1 product with those constants, but damage goes unnoticed.
    pub verify_checksums: bool,
    /// Caps on what a file may make this process hold or do, for servers
    /// that import strangers' files: each is checked before anything is
    /// allocated or run, and an error names the cap it would pass. The
    /// defaults are far above what real models need (a 7B-parameter model
    /// in float32 holds 28 GB of constants and a few thousand nodes).
    ///
    /// Largest single constant, in bytes (default 64 GiB).
    pub max_constant_bytes: u64,
    /// All constants of the file together, in bytes (default 1 TiB).
    pub max_total_constant_bytes: u64,
    /// Tape entries over all the file's functions (default 2^22).
    pub max_nodes: u64,
    /// Largest array one entry of a call may produce, in bytes (default
    /// 16 GiB). Views (broadcasts) count at their full size: whoever reads
    /// the result materialises it.
    pub max_intermediate_bytes: u64,
    /// Elementary operations of one call, summed over its entries as
    /// [`Primitive::work`](crate::Primitive::work) counts them: elements
    /// touched, multiply-adds for products (default 2^47, a 7B-parameter
    /// model over some 10,000 tokens).
    pub max_work: u64,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            mmap: true,
            strict: true,
            verify_checksums: true,
            max_constant_bytes: 1 << 36,
            max_total_constant_bytes: 1 << 40,
            max_nodes: 1 << 22,
            max_intermediate_bytes: 1 << 34,
            max_work: 1 << 47,
        }
    }
}

/// A function read from a file. `Send + Sync`; calls build lazy graphs.
pub struct ImportedFunction {
    table: FunctionTable,
    signatures: Vec<Signature>,
    format: Format,
    path: String,
    /// Native files: each constant's record and whether it has been checked.
    checks: Vec<(ConstantRecord, OnceLock<std::result::Result<(), String>>)>,
    version: String,
    /// What calls replay: each trace with its element-wise chains fused, as
    /// `compile` does (fixed-shape files only: a shapeless call may
    /// broadcast where the trace did not). The table keeps the file's graph.
    runnable: Vec<Tape>,
    /// For each runnable trace, whether its recorded specs follow from its
    /// inputs' (checked at import): its calls then take them as recorded
    /// ([`replay_recorded`]) instead of inferring every node's again.
    checked: Vec<bool>,
    /// For each checked trace, once its first call outside a trace has
    /// made it: the plan its calls run as one node, on the tape that reads
    /// its constant-only values computed ([`hoist`]; the whole tape when
    /// there are none, or computing them failed).
    plans: Vec<OnceLock<Arc<CallPlan>>>,
    /// For each trace, the constants what a call replays reads: the ones
    /// checked before the call (walked once here, not on every call).
    constants_used: Vec<Vec<usize>>,
    /// The caps calls are held to (see [`ImportOptions`]).
    caps: ImportOptions,
    /// Fixed-shape files: what a call of each trace allocates and computes,
    /// from the recorded specs (shapeless calls are measured as they come).
    costs: Vec<Cost>,
}

/// The constants a tape reads, each once, in order.
fn constants_of(tape: &Tape) -> Vec<usize> {
    let mut used: Vec<usize> = tape
        .entries
        .iter()
        .flat_map(|e| e.inputs.iter())
        .chain(tape.outputs.iter())
        .filter_map(|r| match *r {
            ValueRef::Constant(c) => Some(c),
            _ => None,
        })
        .collect();
    used.sort_unstable();
    used.dedup();
    used
}

/// Imports the function(s) in `path`, detecting the format from the first bytes.
pub fn import_function(path: impl AsRef<Path>) -> Result<ImportedFunction> {
    import_function_with(path, &ImportOptions::default())
}

/// Imports with explicit options (e.g. `mmap: false`).
pub fn import_function_with(
    path: impl AsRef<Path>,
    opts: &ImportOptions,
) -> Result<ImportedFunction> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let (src, file) = if opts.mmap {
        // SAFETY: the mapping is read-only; see `ImportOptions::mmap` for the
        // caveat of a file modified while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        (Source::Mapped(std::sync::Arc::new(map)), Some(file))
    } else {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        (Source::Bytes(bytes), None)
    };
    import_source(src, file, name, opts)
}

/// Imports a file already in memory (embedded with `include_bytes!`, received
/// over a network). Constants are copied out and all checksums verified here.
/// `name` stands for the file in error messages.
pub fn import_function_from_bytes(
    bytes: Vec<u8>,
    name: &str,
    opts: &ImportOptions,
) -> Result<ImportedFunction> {
    import_source(Source::Bytes(bytes), None, name.to_string(), opts)
}

/// `file`: the open file `src` maps, if any (MLX files' misaligned
/// constants are read from it on first use).
fn import_source(
    src: Source,
    file: Option<std::fs::File>,
    name: String,
    opts: &ImportOptions,
) -> Result<ImportedFunction> {
    if !src.bytes().starts_with(native::MAGIC) {
        let table = match &src {
            Source::Mapped(map) => super::mlx::decode_mapped(map, file, &name, opts.strict)?,
            Source::Bytes(b) => super::mlx::decode(b, &name, opts.strict)?,
        };
        check_table(&table, opts)?;
        return Ok(ImportedFunction::new(table, Format::Mlx, name, Vec::new()).with_caps(opts));
    }
    let verify_now = matches!(src, Source::Bytes(_));
    let decoded = native::decode(&src, &name)?;
    check_table(&decoded.table, opts)?;
    let checks = if opts.verify_checksums {
        decoded
            .records
            .into_iter()
            .map(|r| (r, OnceLock::new()))
            .collect()
    } else {
        Vec::new()
    };
    let f = ImportedFunction::new(decoded.table, Format::Native, name, checks).with_caps(opts);
    if verify_now {
        for i in 0..f.checks.len() {
            f.verify(i)?;
        }
    }
    Ok(f)
}

impl ImportedFunction {
    pub(crate) fn new(
        table: FunctionTable,
        format: Format,
        path: String,
        checks: Vec<(ConstantRecord, OnceLock<std::result::Result<(), String>>)>,
    ) -> ImportedFunction {
        let signatures = table
            .functions
            .iter()
            .map(|t| Signature::of_tape(t, table.shapeless))
            .collect();
        let version = table.writer_version.clone();
        // A trace whose recorded specs do not follow is not fused: its
        // calls replay the file's own graph and fail where `verify` does.
        // A fused trace is checked again: a pass means its calls take the
        // recorded specs (`checked`).
        let (runnable, checked): (Vec<Tape>, Vec<bool>) = if table.shapeless {
            (Vec::new(), Vec::new())
        } else {
            table
                .functions
                .iter()
                .map(|t| {
                    let mut t = t.clone();
                    if check_recorded_specs(&t, &table.constants).is_err() {
                        return (t, false);
                    }
                    // Files MLX writes repeat work per layer (a llama's
                    // rope tables: 3006 entries, 2182 once merged);
                    // merging it is what `compile` does before fusing
                    // (without reading constants: imports stay lazy).
                    merge_repeated(&mut t);
                    recognize(&mut t, &table.constants);
                    merge_shared_input(&mut t, &table.constants);
                    fuse(&mut t, &table.constants);
                    let checked = check_recorded_specs(&t, &table.constants).is_ok();
                    (t, checked)
                })
                .unzip()
        };
        let costs = if table.shapeless {
            Vec::new()
        } else {
            table
                .functions
                .iter()
                .map(|t| Cost::of_tape(t, &table.constants))
                .collect()
        };
        let constants_used = (0..table.functions.len())
            .map(|i| constants_of(runnable.get(i).unwrap_or(&table.functions[i])))
            .collect();
        ImportedFunction {
            table,
            signatures,
            format,
            path,
            checks,
            version,
            plans: checked.iter().map(|_| OnceLock::new()).collect(),
            runnable,
            checked,
            constants_used,
            caps: ImportOptions::default(),
            costs,
        }
    }

    fn with_caps(mut self, opts: &ImportOptions) -> ImportedFunction {
        self.caps = opts.clone();
        self
    }

    /// Calls the trace whose signature matches `args`.
    pub fn call(&self, args: &[Array]) -> Result<Vec<Array>> {
        self.call_kwargs(args, &Kwargs::new())
    }

    /// Calls the trace whose signature matches `args` and `kwargs` (keyword
    /// names must match the trace's exactly).
    pub fn call_kwargs(&self, args: &[Array], kwargs: &Kwargs) -> Result<Vec<Array>> {
        let call = Signature::of_call(args, kwargs);
        let Some(i) = self.signatures.iter().position(|s| s.accepts(&call)) else {
            return Err(Error::NoMatchingSignature {
                call: call.to_string(),
                signatures: list(&self.signatures),
            });
        };
        if let Some(cost) = self.costs.get(i) {
            cost.check(&self.caps)?;
        }
        for &c in &self.constants_used[i] {
            self.verify(c)?;
        }
        let tape = self.runnable.get(i).unwrap_or(&self.table.functions[i]);
        let inputs: Vec<Array> = args
            .iter()
            .cloned()
            .chain(kwargs.values().cloned())
            .collect();
        let outputs = if let Some(plan) = self.plan(i) {
            plan.call(inputs)?
        } else if self.checked.get(i) == Some(&true) {
            replay_recorded(tape, &self.table.constants, &inputs)?
        } else {
            replay(tape, &self.table.constants, &inputs, self.table.shapeless)?
        };
        if self.table.shapeless {
            Cost::of_graph(&outputs).check(&self.caps)?;
        }
        Ok(outputs)
    }

    /// The plan checked trace `i`'s calls run, made on its first call
    /// outside a trace (a call inside one replays the tape: a trace cannot
    /// evaluate, and hoisting does). Hoisting that fails is not an error
    /// here: the plan runs the whole tape and the call fails where it would
    /// have.
    ///
    /// The plan is made without holding the cell: a thread waiting on a
    /// kernel's parallel tasks may take up another call of this function
    /// meanwhile (see `transforms::eval`), which would wait on itself. Two
    /// first calls at once may both make one; one stays.
    fn plan(&self, i: usize) -> Option<&Arc<CallPlan>> {
        let cell = self.plans.get(i).filter(|_| self.checked[i])?;
        if cell.get().is_none() {
            if is_tracing() {
                return None;
            }
            let constants = &self.table.constants;
            let plain = Arc::new((self.table.functions[i].clone(), constants.clone()));
            let plan = match hoist(&self.runnable[i], constants).ok().flatten() {
                Some(h) => CallPlan::new(h.tape, h.constants, plain),
                None => CallPlan::new(self.runnable[i].clone(), constants.clone(), plain),
            };
            let _ = cell.set(Arc::new(plan));
        }
        cell.get()
    }

    /// Checks constant `i` against its checksum once; later calls reuse the verdict.
    fn verify(&self, i: usize) -> Result<()> {
        let Some((record, verdict)) = self.checks.get(i) else {
            return Ok(());
        };
        let v = verdict.get_or_init(|| {
            native::verify_constant(&self.table.constants[i], record, i, &self.path)
                .map_err(|e| e.to_string())
        });
        v.clone().map_err(|_| Error::Checksum {
            path: self.path.clone(),
            what: format!("constant {i} ({} {:?})", record.dtype, record.shape),
        })
    }

    /// The metadata string given at export.
    pub fn metadata(&self) -> &str {
        &self.table.metadata
    }

    /// One signature per exported trace, in file order.
    pub fn signatures(&self) -> &[Signature] {
        &self.signatures
    }

    /// The file's format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the traces accept any input sizes (ranks and dtypes bind).
    pub fn shapeless(&self) -> bool {
        self.table.shapeless
    }

    /// The version string of the library that wrote the file.
    pub fn writer_version(&self) -> &str {
        &self.version
    }

    /// Output shapes and dtypes of trace `i`, as traced.
    pub fn output_specs(&self, i: usize) -> Vec<crate::Spec> {
        let t = &self.table.functions[i];
        t.outputs
            .iter()
            .map(|r| super::spec_of_ref(t, &self.table.constants, r))
            .collect()
    }

    /// Checks every constant against its checksum now (native files).
    pub fn verify_all(&self, mut progress: impl FnMut(usize, usize)) -> Result<()> {
        for i in 0..self.checks.len() {
            self.verify(i)?;
            progress(i + 1, self.checks.len());
        }
        Ok(())
    }

    /// The whole decoded table (traces and constants), for tools.
    pub fn table(&self) -> &FunctionTable {
        &self.table
    }
}

#[cfg(test)]
mod tests {
    use crate::transforms::fused::Fused;

    /// mlx-lm's llama as MLX writes it (a committed fixture).
    const LLAMA: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/llm/llama_f32/model.mlxfn"
    );

    /// Primitive names a tape runs, counting each step of a fused chain.
    fn names(tape: &super::Tape) -> Vec<&'static str> {
        let mut out = Vec::new();
        for e in &tape.entries {
            match e.primitive.as_any().downcast_ref::<Fused>() {
                Some(f) => out.extend(f.steps.iter().map(|(p, _)| p.name())),
                None => out.push(e.primitive.name()),
            }
        }
        out
    }

    /// A trace whose recorded specs were checked at import replays with
    /// them: the same specs and values as inferring each node's, and
    /// inputs of other specs are refused.
    #[test]
    fn checked_traces_replay_with_their_recorded_specs() {
        use crate::transforms::tracing::{replay, replay_recorded};
        use crate::{ops, Dtype};
        let f = super::import_function(LLAMA).unwrap();
        assert!(f.checked.len() == 4 && f.checked.iter().all(|&c| c));
        let (tape, constants) = (&f.runnable[0], &f.table.constants);
        let args: Vec<crate::Array> = tape
            .inputs
            .iter()
            .map(|s| ops::zeros(&s.shape, s.dtype).unwrap())
            .collect();
        let recorded = replay_recorded(tape, constants, &args).unwrap();
        let inferred = replay(tape, constants, &args, false).unwrap();
        crate::eval(&recorded).unwrap();
        crate::eval(&inferred).unwrap();
        for (r, i) in recorded.iter().zip(&inferred) {
            assert_eq!(r.spec(), i.spec());
            let bits = |a: &crate::Array| -> Vec<u32> {
                let v = ops::astype(a, Dtype::Float32)
                    .unwrap()
                    .to_vec::<f32>()
                    .unwrap();
                v.iter().map(|x| x.to_bits()).collect()
            };
            assert_eq!(bits(r), bits(i));
        }
        let mut other = args.clone();
        let s = &tape.inputs[0];
        let longer: Vec<i32> = s.shape.iter().map(|&d| d + 1).collect();
        other[0] = ops::zeros(&longer, s.dtype).unwrap();
        let err = replay_recorded(tape, constants, &other).unwrap_err();
        assert!(err.to_string().contains("input 0"), "{err}");
    }

    /// A call computes the llama's constant-only values once and replays
    /// the rest: fewer entries, the same bits as the whole trace. A call
    /// inside a trace (which cannot evaluate) replays the whole trace.
    #[test]
    fn calls_compute_constant_only_values_once() {
        use crate::ops;
        use crate::transforms::tracing::{replay_recorded, trace, ConstantPool};
        let f = super::import_function(LLAMA).unwrap();
        let tape = &f.runnable[0];
        let args: Vec<crate::Array> = tape
            .inputs
            .iter()
            .map(|s| ops::ones(&s.shape, s.dtype).unwrap())
            .collect();
        let mut pool = ConstantPool::default();
        let traced = trace(|xs, _| f.call(xs), &tape.inputs, &[], &mut pool).unwrap();
        assert!(f.plans[0].get().is_none());
        assert!(traced.entries.len() >= tape.entries.len());
        let got = f.call(&args).unwrap();
        let plan = f.plans[0].get().unwrap();
        assert!(plan.tape().entries.len() < tape.entries.len());
        let whole = replay_recorded(tape, &f.table.constants, &args).unwrap();
        crate::eval(&got).unwrap();
        crate::eval(&whole).unwrap();
        for (g, w) in got.iter().zip(&whole) {
            assert_eq!(g.spec(), w.spec());
            let (g, w) = (
                ops::view(g, crate::Dtype::Uint8),
                ops::view(w, crate::Dtype::Uint8),
            );
            assert_eq!(
                g.unwrap().to_vec::<u8>().unwrap(),
                w.unwrap().to_vec::<u8>().unwrap()
            );
        }
    }

    /// First calls from many pool tasks at once, whose hoisted value takes
    /// a parallel kernel (a sum over 4M ones): every call gives 4M + 1 and
    /// one hoisting stays. (Whether a waiting thread takes up another
    /// call depends on scheduling; `hoisted` holds no lock while it
    /// computes, so such a call computes again instead of waiting.)
    #[test]
    fn first_calls_that_hoist_parallel_work_do_not_wait_on_themselves() {
        use crate::ops;
        use rayon::prelude::*;
        let big = ops::ones(&[1 << 22], crate::Dtype::Float32).unwrap();
        let path = std::env::temp_dir().join(format!("hoist-par-{}.mlxfn", std::process::id()));
        let x = crate::Array::from_slice(&[1.0f32], &[1]).unwrap();
        let f = |a: &[crate::Array]| Ok(vec![ops::add(&a[0], &ops::sum(&big, &[0], false)?)?]);
        crate::export_function(&path, f, std::slice::from_ref(&x), &Default::default()).unwrap();
        let g = super::import_function(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let sums: Vec<f32> = (0..16)
            .into_par_iter()
            .map(|_| {
                g.call(std::slice::from_ref(&x)).unwrap()[0]
                    .item::<f32>()
                    .unwrap()
            })
            .collect();
        assert!(
            sums.iter().all(|&s| s == (1 << 22) as f32 + 1.0),
            "{sums:?}"
        );
        let plan = g.plans[0].get().unwrap();
        assert!(plan.constants().len() > g.table.constants.len());
    }

    /// The bytes of `a`, to compare results bit for bit.
    fn bytes(a: &crate::Array) -> Vec<u8> {
        let v = crate::ops::view(a, crate::Dtype::Uint8).unwrap();
        v.to_vec::<u8>().unwrap()
    }

    /// The llama's rms norms (2 layers x 2 and the final one) and ropes (2
    /// layers x q and k), decomposed as MLX's CPU build records them in
    /// float32 and bfloat16, run as recognised kernels in every trace, and
    /// each call gives the bits of the file's own graph.
    #[test]
    fn recognised_norms_and_ropes_give_the_bits_of_the_files_graph() {
        let bf16 = LLAMA.replace("llama_f32", "llama_bf16");
        for path in [LLAMA, &bf16] {
            let f = super::import_function(path).unwrap();
            for (i, tape) in f.runnable.iter().enumerate() {
                let run = names(tape);
                let count = |name: &str| run.iter().filter(|&&n| n == name).count();
                assert_eq!(count("RecognizedRMSNorm"), 5, "{path} trace {i}");
                assert_eq!(count("RecognizedRoPE"), 4, "{path} trace {i}");
                assert_eq!(count("Square") + count("Sqrt") + count("Concatenate"), 0);
                assert_file_bytes(&f, i);
            }
        }
    }

    /// Calls trace `i` of `f` on fixed arguments (token ids below 300, an
    /// offset of 3, floats from a sine) and asserts that each output's
    /// bytes are those of the file's own graph replayed on them.
    fn assert_file_bytes(f: &super::ImportedFunction, i: usize) {
        use crate::transforms::tracing::replay_recorded;
        let args: Vec<crate::Array> = f.runnable[i]
            .inputs
            .iter()
            .map(|s| {
                let n = s.size();
                if s.dtype == crate::Dtype::Int32 {
                    let v: Vec<i32> = (0..n as i32).map(|j| (j * 37 + 5) % 300).collect();
                    let v = if s.shape.is_empty() { vec![3] } else { v };
                    crate::Array::from_slice(&v, &s.shape).unwrap()
                } else {
                    let v: Vec<f32> = (0..n).map(|j| (j as f32 * 0.37).sin()).collect();
                    let a = crate::Array::from_slice(&v, &s.shape).unwrap();
                    crate::ops::astype(&a, s.dtype).unwrap()
                }
            })
            .collect();
        let got = f.call(&args).unwrap();
        let file = replay_recorded(&f.table.functions[i], &f.table.constants, &args).unwrap();
        crate::eval(&got).unwrap();
        crate::eval(&file).unwrap();
        for (g, w) in got.iter().zip(&file) {
            assert_eq!(g.spec(), w.spec());
            assert_eq!(bytes(g), bytes(w), "trace {i}");
        }
    }

    /// The 4-bit llama's one-row projections that share an input (per
    /// layer: queries, keys and values; gate and up) run as one entry each
    /// in its decode traces, and every trace gives the bytes of the file's
    /// own graph, which runs each product on its own.
    #[test]
    fn quantized_projections_of_one_row_run_together_with_the_same_bits() {
        let q4 = LLAMA.replace("llama_f32", "llama_q4");
        let f = super::import_function(&q4).unwrap();
        let mut merged = 0;
        for (i, tape) in f.runnable.iter().enumerate() {
            merged += names(tape)
                .iter()
                .filter(|&&n| n == "QuantizedMatmuls")
                .count();
            assert_file_bytes(&f, i);
        }
        // Two layers, two groups each, in at least one (decode) trace.
        assert!(merged >= 4, "{merged} merged entries");
    }

    /// Normal random values of `shape`, drawn in float32 and cast to `dtype`.
    fn normal_in(dtype: crate::Dtype, seed: u64, shape: &[i32]) -> crate::Array {
        let k = crate::random::key(seed);
        let a = crate::random::normal(shape, crate::Dtype::Float32, None, None, Some(&k)).unwrap();
        crate::ops::astype(&a, dtype).unwrap()
    }

    /// `f` exported in MLX's format with its fast ops decomposed (the
    /// graphs MLX's CPU build records) and imported; with the import's
    /// outputs for `args` and those of the file's graph replayed plain,
    /// both evaluated.
    fn decomposed_round_trip(
        name: &str,
        f: impl Fn(&[crate::Array]) -> crate::Result<Vec<crate::Array>>,
        args: &[crate::Array],
    ) -> (
        super::ImportedFunction,
        Vec<crate::Array>,
        Vec<crate::Array>,
    ) {
        let path =
            std::env::temp_dir().join(format!("recognise-{name}-{}.mlxfn", std::process::id()));
        let opts = crate::ExportOptions {
            format: crate::Format::Mlx,
            decompose_fast: true,
            ..Default::default()
        };
        crate::export_function(&path, f, args, &opts).unwrap();
        let g = super::import_function(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let got = g.call(args).unwrap();
        let file = crate::transforms::tracing::replay_recorded(
            &g.table.functions[0],
            &g.table.constants,
            args,
        )
        .unwrap();
        crate::eval(&got).unwrap();
        crate::eval(&file).unwrap();
        (g, got, file)
    }

    /// The same with a weight that is not all ones and several rows (the
    /// llama fixture's norm weights are ones), in float32, bfloat16 and
    /// float16: the graphs MLX's CPU build records for rms_norm and rope,
    /// exported, imported, recognised, and equal to the file's graph bit
    /// for bit.
    #[test]
    fn recognised_kernels_follow_the_graph_with_any_weight() {
        use crate::{fast, ops, Dtype};
        for dtype in [Dtype::Float32, Dtype::Bfloat16, Dtype::Float16] {
            // MLX's rms_norm fallback, op for op: statistics in float32,
            // `x · rsqrt(..)` cast back before the weight.
            let f = |a: &[crate::Array]| {
                let x = match dtype {
                    Dtype::Float32 => a[0].clone(),
                    _ => ops::astype(&a[0], Dtype::Float32)?,
                };
                let s = ops::sum(&ops::square(&x)?, &[-1], true)?;
                let m = ops::multiply(&s, &crate::Array::scalar(1.0f32 / 16.0))?;
                let r = ops::rsqrt(&ops::add(&m, &crate::Array::scalar(1e-5f32))?)?;
                let y = ops::multiply(&x, &r)?;
                let y = match dtype {
                    Dtype::Float32 => y,
                    _ => ops::astype(&y, dtype)?,
                };
                let n = ops::multiply(&y, &a[1])?;
                Ok(vec![fast::rope(
                    &n,
                    16,
                    false,
                    Some(10000.0),
                    1.0,
                    5,
                    None,
                )?])
            };
            let args = [
                normal_in(dtype, 1, &[2, 3, 7, 16]),
                normal_in(dtype, 2, &[16]),
            ];
            let (g, got, file) = decomposed_round_trip(&format!("{dtype}"), f, &args);
            let run = names(&g.runnable[0]);
            assert!(run.contains(&"RecognizedRMSNorm"), "{dtype}: {run:?}");
            assert!(run.contains(&"RecognizedRoPE"), "{dtype}: {run:?}");
            assert_eq!(got[0].dtype(), dtype);
            assert_eq!(bytes(&got[0]), bytes(&file[0]), "{dtype}");
        }
    }

    /// `fast.rms_norm` and ropes exported decomposed (the graphs MLX's CPU
    /// build records, no cast where the type is already right) import as
    /// one kernel each, in every kernel dtype, and give the file graph's
    /// bits: with a weight that is not all ones; `traditional` ropes over a
    /// transposed view (as attention's heads are) and over one whose last
    /// axis is strided; both kinds over part of the last axis.
    #[test]
    fn recognised_library_norms_and_ropes_give_the_graphs_bits() {
        use crate::{fast, ops, Dtype};
        for dtype in [Dtype::Float32, Dtype::Bfloat16, Dtype::Float16] {
            let f = |a: &[crate::Array]| {
                let n = fast::rms_norm(&a[0], Some(&a[1]), 1e-5)?;
                let heads = ops::transpose(&n, &[0, 2, 1, 3])?;
                // And over a view whose last axis is strided.
                let cols = ops::swapaxes(&heads, 2, 3)?;
                // Its own x: the partial ropes' pass-through slices of one
                // x would be one entry, read by both.
                let twice = ops::add(&heads, &heads)?;
                Ok(vec![
                    fast::rope(&heads, 16, true, Some(10000.0), 1.0, 3, None)?,
                    fast::rope(&cols, 6, true, Some(10000.0), 1.0, 0, None)?,
                    fast::rope(&heads, 8, true, Some(10000.0), 1.0, 1, None)?,
                    fast::rope(&twice, 8, false, Some(10000.0), 1.0, 2, None)?,
                ])
            };
            let args = [
                normal_in(dtype, 3, &[1, 6, 2, 16]),
                normal_in(dtype, 4, &[16]),
            ];
            let (g, got, file) = decomposed_round_trip(&format!("lib-{dtype}"), f, &args);
            let run = names(&g.runnable[0]);
            assert!(run.contains(&"RecognizedRMSNorm"), "{dtype}: {run:?}");
            let count = |name| run.iter().filter(|&&n| n == name).count();
            assert_eq!(count("RecognizedRoPEPairs"), 3, "{dtype}: {run:?}");
            assert_eq!(count("RecognizedRoPE"), 1, "{dtype}: {run:?}");
            assert_eq!(got[0].shape(), &[1, 2, 6, 16]);
            assert_eq!(got[1].shape(), &[1, 2, 16, 6]);
            assert_eq!(got.len(), 4);
            for (g, f) in got.iter().zip(&file) {
                assert_eq!(g.dtype(), dtype);
                assert_eq!(bytes(g), bytes(f), "{dtype}");
            }
        }
    }

    /// Ropes with given frequencies (`freqs`, as Llama 3's scaled rope
    /// passes them) differ from base ropes only in their tables: their
    /// rotations are recognised too, with the file graph's bits.
    #[test]
    fn recognised_ropes_with_given_frequencies_give_the_graphs_bits() {
        use crate::{fast, Dtype};
        for dtype in [Dtype::Float32, Dtype::Bfloat16, Dtype::Float16] {
            let f = |a: &[crate::Array]| {
                Ok(vec![
                    fast::rope(&a[0], 16, false, None, 1.0, 5, Some(&a[1]))?,
                    fast::rope(&a[0], 16, true, None, 0.5, 2, Some(&a[1]))?,
                ])
            };
            // Positive frequencies, as a rope's are.
            let freqs: Vec<f32> = (0..8).map(|i| 1.0 + i as f32 * 0.75).collect();
            let args = [
                normal_in(dtype, 7, &[1, 2, 6, 16]),
                crate::Array::from_slice(&freqs, &[8]).unwrap(),
            ];
            let (g, got, file) = decomposed_round_trip(&format!("freqs-{dtype}"), f, &args);
            let run = names(&g.runnable[0]);
            let count = |name| run.iter().filter(|&&n| n == name).count();
            assert_eq!(count("RecognizedRoPE"), 1, "{dtype}: {run:?}");
            assert_eq!(count("RecognizedRoPEPairs"), 1, "{dtype}: {run:?}");
            assert_eq!(got.len(), 2);
            for (g, f) in got.iter().zip(&file) {
                assert_eq!(g.dtype(), dtype);
                assert_eq!(bytes(g), bytes(f), "{dtype}");
            }
        }
    }

    /// mlx-lm's llama as MLX writes it computes the rope's sine table once
    /// per rope (2 layers x q and k: 4 Sin); the imported graph computes it
    /// once, and each other entry the file repeats on the same inputs.
    #[test]
    fn imported_graph_computes_repeated_work_once() {
        let f = super::import_function(LLAMA).unwrap();
        let file = names(&f.table.functions[0]);
        let run = names(&f.runnable[0]);
        let count = |v: &[&str], name: &str| v.iter().filter(|&&n| n == name).count();
        assert_eq!(count(&file, "Sin"), 4);
        assert_eq!(count(&run, "Sin"), 1);
        assert_eq!(count(&run, "Cos"), 1);
        // The layers' own work stays: one product per projection.
        assert_eq!(count(&run, "Matmul"), count(&file, "Matmul"));
    }
}
