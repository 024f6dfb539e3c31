//! A whole checked tape run as one node. An imported function called
//! outside a trace used to rebuild its graph on every call (a node, its
//! output arrays and their locks per entry, then a topological walk of
//! them) before any kernel ran: for a llama's decode step, ~1,500 nodes and
//! ~0.6 ms on the calling thread while the pool waited. A [`TapeCall`] is
//! one node whose kernel runs the entries in their recorded order on the
//! recorded specs, which a checked tape is known to follow.
//!
//! Values are freed after their last reader, as the graph walk frees
//! them, and a value's last reader gets it as the only reference, so a
//! kernel may still reuse its buffer (an input the caller gave away, such
//! as a KV cache, is updated in place).
//!
//! The node has no registry entry, so no file can hold it: exports and
//! transforms use its fallback, the plain graph the file recorded.

use super::eval::{on_pool, run_kernel, with_pool_awake};
use super::tape::{spec_of_ref, Tape, ValueRef};
use super::tracing::replay_recorded;
use crate::array::Data;
use crate::primitive::{Primitive, Spec};
use crate::{Array, Error, Result};
use std::sync::Arc;

/// A tape ready to run: where each value lives while it runs, and which
/// read of a value is its last.
pub struct CallPlan {
    tape: Tape,
    constants: Vec<Array>,
    /// The file's own graph (plain primitives) and constants: the fallback.
    plain: Arc<(Tape, Vec<Array>)>,
    /// Slot of each entry's first output; slots `0..inputs` hold the inputs.
    first_slot: Vec<usize>,
    slots: usize,
    /// Per entry, per input: this read is the value's last (it is moved
    /// to the kernel, not shared).
    last_read: Vec<Vec<bool>>,
    /// Per slot: some entry or output reads it (others are dropped at once).
    read: Vec<bool>,
    outputs: Vec<Spec>,
}

impl CallPlan {
    /// Plans `tape` (which must replay with its recorded specs) over
    /// `constants`; `plain` is the same function as plain primitives.
    pub fn new(tape: Tape, constants: Vec<Array>, plain: Arc<(Tape, Vec<Array>)>) -> CallPlan {
        let mut first_slot = Vec::with_capacity(tape.entries.len());
        let mut slots = tape.inputs.len();
        for e in &tape.entries {
            first_slot.push(slots);
            slots += e.outputs.len();
        }
        let outputs = tape
            .outputs
            .iter()
            .map(|r| spec_of_ref(&tape, &constants, r))
            .collect();
        let mut plan = CallPlan {
            last_read: tape
                .entries
                .iter()
                .map(|e| vec![false; e.inputs.len()])
                .collect(),
            read: vec![false; slots],
            tape,
            constants,
            plain,
            first_slot,
            slots,
            outputs,
        };
        // The last (entry, input) reading each slot; outputs read last of all.
        let mut last = vec![None; slots];
        for (k, e) in plan.tape.entries.iter().enumerate() {
            for (j, r) in e.inputs.iter().enumerate() {
                if let Some(s) = plan.slot(r) {
                    last[s] = Some((k, j));
                    plan.read[s] = true;
                }
            }
        }
        for r in &plan.tape.outputs {
            if let Some(s) = plan.slot(r) {
                last[s] = None;
                plan.read[s] = true;
            }
        }
        for &(k, j) in last.iter().flatten() {
            plan.last_read[k][j] = true;
        }
        plan
    }

    /// The tape the plan runs.
    pub fn tape(&self) -> &Tape {
        &self.tape
    }

    /// The constants its tape reads.
    pub fn constants(&self) -> &[Array] {
        &self.constants
    }

    /// The tape's outputs on `inputs` as pending arrays of one node.
    /// Inputs must have the tape's recorded specs.
    pub fn call(self: &Arc<Self>, inputs: Vec<Array>) -> Result<Vec<Array>> {
        check_inputs(&self.tape, &inputs)?;
        Ok(Array::with_specs(
            Box::new(TapeCall { plan: self.clone() }),
            inputs,
            self.outputs.clone(),
        ))
    }

    fn slot(&self, r: &ValueRef) -> Option<usize> {
        match *r {
            ValueRef::Input(i) => Some(i),
            ValueRef::Entry { entry, output } => self.first_slot.get(entry).map(|s| s + output),
            ValueRef::Constant(_) => None,
        }
        .filter(|&s| s < self.slots)
    }

    /// The value `r` names at this point of the run; moved out of its slot
    /// when `last`.
    fn take(&self, slots: &mut [Option<Array>], r: &ValueRef, last: bool) -> Result<Array> {
        let v = match (*r, self.slot(r)) {
            (ValueRef::Constant(c), _) => self.constants.get(c).cloned(),
            (_, Some(s)) if last => slots.get_mut(s).and_then(Option::take),
            (_, Some(s)) => slots.get(s).cloned().flatten(),
            (_, None) => None,
        };
        v.ok_or_else(|| Error::Export(format!("tape refers to a missing value {r:?}")))
    }

    /// Runs every entry in order; returns the outputs' data.
    fn run(&self, inputs: &[Array]) -> Result<Vec<Data>> {
        let mut slots: Vec<Option<Array>> = Vec::with_capacity(self.slots);
        for (a, spec) in inputs.iter().zip(&self.tape.inputs) {
            // An input nothing else holds becomes the run's own, so that
            // its last reader may write into its buffer.
            slots.push(Some(match a.take_data() {
                Some(d) => Array::from_data_unchecked(d, spec.clone()),
                None => a.clone(),
            }));
        }
        slots.resize(self.slots, None);
        let mut args: Vec<Array> = Vec::with_capacity(8);
        for (k, e) in self.tape.entries.iter().enumerate() {
            for (r, &last) in e.inputs.iter().zip(&self.last_read[k]) {
                args.push(self.take(&mut slots, r, last)?);
            }
            let datas = run_kernel(&*e.primitive, &e.outputs, &args)?;
            args.clear();
            for (o, (d, spec)) in datas.into_iter().zip(&e.outputs).enumerate() {
                let s = self.first_slot[k] + o;
                if self.read[s] {
                    slots[s] = Some(Array::from_data_unchecked(d, spec.clone()));
                }
            }
        }
        self.tape
            .outputs
            .iter()
            .map(|r| self.take(&mut slots, r, false)?.data())
            .collect()
    }
}

/// Errors unless `inputs` have exactly the tape's recorded specs.
pub(crate) fn check_inputs(tape: &Tape, inputs: &[Array]) -> Result<()> {
    super::tracing::check_input_count(tape, inputs)?;
    match inputs
        .iter()
        .zip(&tape.inputs)
        .position(|(a, s)| a.spec() != s)
    {
        Some(i) => Err(Error::invalid(
            "replay",
            format!(
                "input {i} is {} {:?}; the trace was recorded for other shapes",
                inputs[i].dtype(),
                inputs[i].shape()
            ),
        )),
        None => Ok(()),
    }
}

/// One call of a planned tape (see the module docs).
#[derive(Clone)]
pub struct TapeCall {
    plan: Arc<CallPlan>,
}

impl std::fmt::Debug for TapeCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TapeCall({} entries)", self.plan.tape.entries.len())
    }
}

run_time_node_state!(TapeCall, "an imported function's call", |_c| "TapeCall");

impl Primitive for TapeCall {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        if inputs != self.plan.tape.inputs.as_slice() {
            return Err(Error::invalid(
                "TapeCall",
                "the inputs' specs differ from the recorded ones",
            ));
        }
        Ok(self.plan.outputs.clone())
    }

    fn eval(&self, inputs: &[Array], _outputs: &[Spec]) -> Result<Vec<Data>> {
        on_pool(|| with_pool_awake(|| self.plan.run(inputs)))
    }

    /// The file's own graph: what transforms differentiate and exports record.
    fn fallback(&self, inputs: &[Array]) -> Option<Result<Vec<Array>>> {
        let (tape, constants) = &*self.plan.plain;
        Some(replay_recorded(tape, constants, inputs))
    }

    fn is_equivalent(&self, _other: &dyn Primitive) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use crate::{ops, Array, Dtype};

    /// Exports `f` on `args` and imports it back.
    fn round_trip(
        name: &str,
        f: impl Fn(&[Array]) -> crate::Result<Vec<Array>>,
        args: &[Array],
    ) -> crate::ImportedFunction {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let file = format!("tape-call-{name}-{}-{n}.mlxfn", std::process::id());
        let path = std::env::temp_dir().join(file);
        crate::export_function(&path, f, args, &Default::default()).unwrap();
        let g = crate::import_function(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        g
    }

    /// `cache` with row `at` set to `x` plus one, as an exported function.
    fn cache_update() -> crate::ImportedFunction {
        let (x, at, cache) = (
            ops::zeros(&[1, 4], Dtype::Float32).unwrap(),
            Array::from_slice(&[0i32], &[1]).unwrap(),
            ops::zeros(&[3, 4], Dtype::Float32).unwrap(),
        );
        round_trip(
            "update",
            |a| {
                let one = Array::scalar(1.0f32);
                let row = ops::add(&a[0], &one)?;
                Ok(vec![ops::slice_update_dynamic(&a[2], &row, &a[1], &[0])?])
            },
            &[x, at, cache],
        )
    }

    fn inputs(cache: Array) -> Vec<Array> {
        vec![
            Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[1, 4]).unwrap(),
            Array::from_slice(&[1i32], &[1]).unwrap(),
            cache,
        ]
    }

    const WANT: [f32; 12] = [0., 0., 0., 0., 2., 3., 4., 5., 0., 0., 0., 0.];

    /// A cache the caller gives away is updated in its own buffer; one the
    /// caller keeps is left as it was.
    #[test]
    fn an_input_given_away_is_updated_in_place_and_a_kept_one_is_not() {
        let g = cache_update();
        let cache = ops::zeros(&[3, 4], Dtype::Float32).unwrap();
        cache.eval().unwrap();
        let at = cache.data().unwrap().buffer.bytes().as_ptr();
        let out = g.call(&inputs(cache)).unwrap();
        assert_eq!(out[0].node().unwrap().0.primitive().name(), "TapeCall");
        out[0].eval().unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), WANT);
        assert_eq!(out[0].data().unwrap().buffer.bytes().as_ptr(), at);

        let kept = ops::zeros(&[3, 4], Dtype::Float32).unwrap();
        let out = g.call(&inputs(kept.clone())).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), WANT);
        assert_eq!(kept.to_vec::<f32>().unwrap(), [0.0; 12]);
    }

    /// A call's lazy output captured by another export is recorded as the
    /// file's graph (the call node has no file form), and the new file
    /// computes the same values.
    #[test]
    fn a_calls_lazy_output_exports_as_the_files_graph() {
        let g = cache_update();
        let out = g
            .call(&inputs(ops::zeros(&[3, 4], Dtype::Float32).unwrap()))
            .unwrap();
        let y = out[0].clone();
        let z = ops::zeros(&[3, 4], Dtype::Float32).unwrap();
        let h = round_trip(
            "capture",
            move |a| Ok(vec![ops::multiply(&a[0], &y)?]),
            std::slice::from_ref(&z),
        );
        let two = ops::full(&[3, 4], &Array::scalar(2.0f32), None).unwrap();
        let got = h.call(&[two]).unwrap()[0].to_vec::<f32>().unwrap();
        assert_eq!(got, WANT.map(|v| 2.0 * v));
    }
}
