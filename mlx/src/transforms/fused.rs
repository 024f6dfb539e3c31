//! The executor of a fused element-wise chain: a [`Fused`] node walks its
//! output in cache-sized chunks, running every step on chunk-sized views,
//! so no full-size intermediate buffer is ever made. The pass that builds
//! these nodes is `transforms::fuse`.
//!
//! A fused node has no registry entry, so no file can hold it: every
//! export records its steps instead (its [`Primitive::fallback`]), and the
//! writers refuse a node they cannot name.

use crate::array::Data;
use crate::buffer::Buffer;
use crate::layout::gather_range;
use crate::primitive::{ChunkRef, Primitive, Spec};
use crate::{Array, Error, Result};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Elements per chunk: small enough that a chunk of every step stays in cache.
const CHUNK: usize = 8192;

/// Where a fused step reads an operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    /// Input `i` of the fused entry.
    Input(usize),
    /// The result of an earlier step.
    Step(usize),
}

/// Several element-wise primitives run as one pass over the data.
#[derive(Clone, Debug)]
pub struct Fused {
    /// Shared, like every field: replay clones the primitive on each call.
    pub steps: Arc<[Step]>,
    /// For each step, the earlier steps it is the last reader of: their
    /// results are dropped once it has run, so a kernel may reuse them.
    released: Arc<[Vec<usize>]>,
    /// Step specs already inferred, keyed by the chunk's input specs: a
    /// replay sees the same few chunk shapes on every call.
    spec_cache: Arc<Mutex<Vec<SpecsFor>>>,
    /// Set once a step turned out to have no chunk kernel.
    no_chunk_kernel: Arc<AtomicBool>,
}

/// One step of a chain: the primitive and where its operands come from.
pub type Step = (Box<dyn Primitive>, Vec<Operand>);

/// Input specs and the step specs inferred from them.
type SpecsFor = (Vec<Spec>, Arc<Vec<Spec>>);

run_time_node_state!(Fused, "a fused element-wise chain", |_f| "Compiled", steps);

impl Fused {
    pub(super) fn new(steps: Vec<Step>) -> Fused {
        let mut last_reader = vec![usize::MAX; steps.len()];
        for (k, (_, ops)) in steps.iter().enumerate() {
            for o in ops {
                if let Operand::Step(j) = *o {
                    last_reader[j] = k;
                }
            }
        }
        let mut released = vec![Vec::new(); steps.len()];
        for (j, &k) in last_reader.iter().enumerate() {
            if k != usize::MAX {
                released[k].push(j);
            }
        }
        Fused {
            steps: steps.into(),
            released: released.into(),
            spec_cache: Default::default(),
            no_chunk_kernel: Default::default(),
        }
    }

    /// [`Self::step_specs`] through the cache: replays see the same few
    /// input shapes (the whole arrays, a full chunk, the tail) every call.
    fn cached_specs(&self, ins: Vec<Spec>) -> Result<Arc<Vec<Spec>>> {
        let mut cache = self.spec_cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, s)) = cache.iter().find(|(k, _)| *k == ins) {
            return Ok(s.clone());
        }
        let s = Arc::new(self.step_specs(&ins)?);
        if cache.len() < 8 {
            cache.push((ins, s.clone()));
        }
        Ok(s)
    }

    /// One chunk through the steps' [`Primitive::eval_chunk`] kernels, on
    /// scratch buffers recycled once their last reader has run, the last
    /// step writing straight into `dst`. `None` when a step has no such
    /// kernel (the caller then takes the array path).
    fn run_chunk_direct(
        &self,
        inputs: &[Array],
        datas: &[Data],
        specs: &[Spec],
        start: usize,
        dst: &mut [u8],
    ) -> Option<Result<()>> {
        let len = specs.last()?.size();
        // Which inputs are one value, decided once per chunk (each step
        // reading an input asks).
        let scalars: Vec<bool> = inputs
            .iter()
            .zip(datas)
            .map(|(a, d)| one_value(a, d))
            .collect();
        // Strided inputs are gathered first; the others are read in place.
        let mut gathered: Vec<Option<Data>> = Vec::with_capacity(inputs.len());
        for (i, (a, d)) in inputs.iter().zip(datas).enumerate() {
            gathered.push(if scalars[i] || d.is_row_contiguous(a.shape()) {
                None
            } else {
                match chunk_view(a, d, start, len).data() {
                    Ok(g) => Some(g),
                    Err(e) => return Some(Err(e)),
                }
            });
        }
        let input_ref = |i: usize| -> ChunkRef {
            let es = inputs[i].dtype().size();
            let (d, off, scalar) = match &gathered[i] {
                Some(g) => (g, 0, false),
                None if scalars[i] => (&datas[i], datas[i].offset, true),
                None => (&datas[i], datas[i].offset + start, false),
            };
            let n = if scalar { 1 } else { len };
            ChunkRef {
                bytes: &d.buffer.bytes()[off * es..(off + n) * es],
                dtype: inputs[i].dtype(),
                scalar,
            }
        };
        let n = self.steps.len();
        let mut outs: Vec<Option<Buffer>> = (0..n).map(|_| None).collect();
        let mut free: Vec<Buffer> = Vec::new();
        for (k, (p, ops)) in self.steps.iter().enumerate() {
            let dtype = specs[k].dtype;
            if ops.len() > 3 {
                return None;
            }
            let mut scratch =
                (k + 1 < n).then(|| free.pop().unwrap_or_else(|| Buffer::for_overwrite(len * 8)));
            {
                let mut refs = [ChunkRef {
                    bytes: &[],
                    dtype,
                    scalar: true,
                }; 3];
                for (r, o) in refs.iter_mut().zip(ops) {
                    *r = match *o {
                        Operand::Input(i) => input_ref(i),
                        Operand::Step(j) => ChunkRef {
                            bytes: &outs[j].as_ref().expect("steps are in order").bytes()
                                [..len * specs[j].dtype.size()],
                            dtype: specs[j].dtype,
                            scalar: false,
                        },
                    };
                }
                let out: &mut [u8] = match &mut scratch {
                    Some(b) => &mut b.bytes_mut().expect("heap buffer")[..len * dtype.size()],
                    None => &mut *dst,
                };
                if let Err(e) = p.eval_chunk(&refs[..ops.len()], out, dtype)? {
                    return Some(Err(e));
                }
            }
            for &j in &self.released[k] {
                free.extend(outs[j].take());
            }
            outs[k] = scratch;
        }
        Some(Ok(()))
    }

    fn step_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let mut specs: Vec<Spec> = Vec::with_capacity(self.steps.len());
        for (p, ops) in self.steps.iter() {
            let ins: Vec<Spec> = ops
                .iter()
                .map(|o| match *o {
                    Operand::Input(i) => inputs[i].clone(),
                    Operand::Step(j) => specs[j].clone(),
                })
                .collect();
            let mut out = p.output_specs(&ins)?;
            specs.push(out.remove(0));
        }
        Ok(specs)
    }
}

/// Whether `a` (with data `d`) is one value broadcast: every axis longer
/// than 1 has stride 0 (a stride on a length-1 axis never moves).
fn one_value(a: &Array, d: &Data) -> bool {
    a.shape()
        .iter()
        .zip(&d.strides)
        .all(|(&n, &s)| s == 0 || n == 1)
}

/// A 1-D view of elements `[start, start + len)` (row-major order) of `a`,
/// which has the fused output's shape: zero-copy when `a` is dense or a
/// broadcast scalar, else a gathered copy.
fn chunk_view(a: &Array, d: &Data, start: usize, len: usize) -> Array {
    let spec = Spec::new([len as i32], a.dtype());
    if one_value(a, d) {
        return Array::from_data_unchecked(
            Data {
                buffer: d.buffer.clone(),
                strides: vec![0],
                offset: d.offset,
            },
            spec,
        );
    }
    if d.is_row_contiguous(a.shape()) {
        return Array::from_data_unchecked(
            Data {
                buffer: d.buffer.clone(),
                strides: vec![1],
                offset: d.offset + start,
            },
            spec,
        );
    }
    // Strided: gather this chunk's elements (by width: only bytes move).
    let mut buf = Buffer::for_overwrite(len * a.dtype().size());
    let shape = a.shape();
    match a.dtype().size() {
        1 => gather_range::<u8>(d, shape, start, buf.as_mut_slice().expect("heap buffer")),
        2 => gather_range::<u16>(d, shape, start, buf.as_mut_slice().expect("heap buffer")),
        4 => gather_range::<u32>(d, shape, start, buf.as_mut_slice().expect("heap buffer")),
        _ => gather_range::<u64>(d, shape, start, buf.as_mut_slice().expect("heap buffer")),
    }
    Array::from_data_unchecked(Data::contiguous(buf, &[len as i32]), spec)
}

impl Primitive for Fused {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        let specs = self.cached_specs(inputs.to_vec())?;
        Ok(vec![specs
            .last()
            .cloned()
            .ok_or_else(|| Error::invalid("Compiled", "no steps"))?])
    }

    fn eval(&self, inputs: &[Array], outputs: &[Spec]) -> Result<Vec<Data>> {
        let out = &outputs[0];
        let datas = inputs.iter().map(Array::data).collect::<Result<Vec<_>>>()?;
        let esize = out.dtype.size();
        let mut buf = crate::backend::cpu::elementwise::fresh_output(out);
        let bytes = buf.bytes_mut().expect("heap buffer");
        // Step specs depend only on the chunk length: a full chunk or the tail.
        let specs_for = |len: usize| {
            let ins: Vec<Spec> = inputs
                .iter()
                .map(|a| Spec::new([len as i32], a.dtype()))
                .collect();
            self.cached_specs(ins)
        };
        let total = out.size();
        let full_specs = if total >= CHUNK {
            Some(specs_for(CHUNK)?)
        } else {
            None
        };
        let run_chunk = |c: usize, dst: &mut [u8]| -> Result<()> {
            let start = c * CHUNK;
            let len = dst.len() / esize;
            let tail_specs;
            let specs = match &full_specs {
                Some(s) if len == CHUNK => s,
                _ => {
                    tail_specs = specs_for(len)?;
                    &tail_specs
                }
            };
            if !self.no_chunk_kernel.load(Ordering::Relaxed) {
                match self.run_chunk_direct(inputs, &datas, specs, start, dst) {
                    Some(r) => return r,
                    None => self.no_chunk_kernel.store(true, Ordering::Relaxed),
                }
            }
            let mut views: Vec<Option<Array>> = vec![None; inputs.len()];
            let mut results: Vec<Option<Array>> = vec![None; self.steps.len()];
            let mut args: Vec<Array> = Vec::with_capacity(3);
            for (k, (p, ops)) in self.steps.iter().enumerate() {
                args.extend(ops.iter().map(|o| {
                    match *o {
                        Operand::Input(i) => views[i]
                            .get_or_insert_with(|| chunk_view(&inputs[i], &datas[i], start, len))
                            .clone(),
                        Operand::Step(j) => results[j].clone().expect("steps are in order"),
                    }
                }));
                for &j in &self.released[k] {
                    results[j] = None;
                }
                let spec = &specs[k];
                let d = p.eval(&args, std::slice::from_ref(spec))?;
                args.clear();
                results[k] = Some(Array::from_data_unchecked(
                    d.into_iter().next().expect("one output"),
                    spec.clone(),
                ));
            }
            let last = results.pop().flatten().expect("at least one step");
            let d = last.data()?;
            let src = &d.buffer.bytes()[d.offset * esize..(d.offset + len) * esize];
            dst.copy_from_slice(src);
            Ok(())
        };
        let chunks: Vec<(usize, &mut [u8])> = bytes.chunks_mut(CHUNK * esize).enumerate().collect();
        if chunks.len() > 1 {
            chunks
                .into_par_iter()
                .try_for_each(|(c, dst)| run_chunk(c, dst))?;
        } else {
            for (c, dst) in chunks {
                run_chunk(c, dst)?;
            }
        }
        Ok(vec![Data::contiguous(buf, &out.shape)])
    }

    /// The steps as plain primitives: what transforms differentiate.
    fn fallback(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        Some(replay_steps("Compiled", &self.steps, inputs))
    }

    fn is_equivalent(&self, _other: &dyn Primitive) -> bool {
        false
    }
}

/// `steps` rebuilt on `inputs` one plain node per step (the fallback of a
/// node that runs several primitives as one); `name` is the node's, for
/// errors. Returns the last step's result.
pub(super) fn replay_steps(name: &str, steps: &[Step], inputs: &[Array]) -> Result<Vec<Array>> {
    let mut results: Vec<Array> = Vec::with_capacity(steps.len());
    for (p, ops) in steps {
        let args = ops
            .iter()
            .map(|o| match *o {
                Operand::Input(i) => inputs.get(i).cloned().ok_or_else(|| {
                    Error::invalid(name, format!("a step reads input {i} of {}", inputs.len()))
                }),
                Operand::Step(j) => Ok(results[j].clone()),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut out = Array::from_primitive_multi(p.clone(), args)?;
        results.push(out.remove(0));
    }
    Ok(results.pop().into_iter().collect())
}
