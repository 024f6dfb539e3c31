//! [`Array`]: a lazy, reference-counted node of the computation graph.
//!
//! An array is either *ready* (it has data: a shared buffer plus
//! shape/strides/offset, so views share memory), *pending* (it is output
//! `index` of a [`Node`] not yet evaluated), or a *placeholder* (an input of
//! a function being traced). Evaluating a pending array runs its node and
//! the node drops its inputs, so a long loop does not keep its history.

mod bytes;

use crate::buffer::Buffer;
use crate::layout::to_contiguous_vec;
pub use crate::layout::{row_major_strides, Data};
use crate::primitive::{Primitive, Spec};
use crate::{Dtype, Element, Error, Result};
pub use bytes::RowMajor;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// An n-dimensional array. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Array(pub(crate) Arc<ArrayInner>);

pub(crate) struct ArrayInner {
    pub(crate) spec: Spec,
    pub(crate) state: Mutex<State>,
}

pub(crate) enum State {
    Ready(Data),
    Pending {
        node: Arc<Node>,
        index: usize,
    },
    Placeholder,
    /// The buffer was handed to a kernel as its output; nothing else held this array.
    Donated,
}

/// One operation in the graph with its inputs; its outputs point back to it.
pub struct Node {
    pub(crate) primitive: Box<dyn Primitive>,
    pub(crate) inputs: Mutex<Vec<Array>>,
    pub(crate) specs: Vec<Spec>,
    pub(crate) outputs: OnceLock<Vec<Weak<ArrayInner>>>,
}

impl Node {
    /// The operation.
    pub fn primitive(&self) -> &dyn Primitive {
        &*self.primitive
    }
    /// The inputs (empty once the node has been evaluated).
    pub fn inputs(&self) -> Vec<Array> {
        lock(&self.inputs).clone()
    }
    /// Shapes and dtypes of the outputs.
    pub fn specs(&self) -> &[Spec] {
        &self.specs
    }
    /// The outputs still alive (`None` for one that was dropped).
    pub fn outputs(&self) -> Vec<Option<Array>> {
        self.outputs
            .get()
            .map(|v| v.iter().map(|w| w.upgrade().map(Array)).collect())
            .unwrap_or_default()
    }
}

impl Drop for Node {
    /// Unlinks the graph iteratively so that dropping a chain of a million
    /// nodes does not recurse a million frames deep.
    fn drop(&mut self) {
        let mut stack = std::mem::take(self.inputs.get_mut().unwrap_or_else(|e| e.into_inner()));
        while let Some(a) = stack.pop() {
            let Some(inner) = Arc::into_inner(a.0) else {
                continue;
            };
            let state = inner.state.into_inner().unwrap_or_else(|e| e.into_inner());
            if let State::Pending { node, .. } = state {
                if let Some(mut node) = Arc::into_inner(node) {
                    stack.append(node.inputs.get_mut().unwrap_or_else(|e| e.into_inner()));
                }
            }
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Array {
    // ----- construction -------------------------------------------------

    /// An array with a copy of `data`, shaped `shape` (row-major).
    pub fn from_slice<T: Element>(data: &[T], shape: &[i32]) -> Result<Array> {
        check_shape("from_slice", shape)?;
        let n: usize = shape.iter().map(|&d| d as usize).product();
        if n != data.len() {
            return Err(Error::invalid(
                "from_slice",
                format!(
                    "shape {shape:?} holds {n} elements, but {} were given",
                    data.len()
                ),
            ));
        }
        Ok(Array::from_data(
            Data::contiguous(Buffer::from_slice(data), shape),
            Spec::new(shape, T::DTYPE),
        ))
    }

    /// A 0-d array holding `v`.
    pub fn scalar<T: Element>(v: T) -> Array {
        Array::from_data(
            Data::contiguous(Buffer::from_slice(&[v]), &[]),
            Spec::new([], T::DTYPE),
        )
    }

    /// A 0-d array of `dtype` holding `v` converted as a C cast would.
    pub fn scalar_of(v: f64, dtype: Dtype) -> Array {
        crate::dispatch_dtype!(dtype, T => Array::scalar(T::from_f64(v)))
    }

    /// An array over existing data.
    ///
    /// # Panics
    /// If an element of `spec` lies outside the buffer, or a bool buffer
    /// holds a byte other than 0 or 1 (see [`Data::check_fits`]): kernels
    /// rely on both.
    pub fn from_data(data: Data, spec: Spec) -> Array {
        if let Err(e) = data.check_fits(&spec.shape, spec.dtype) {
            panic!("Array::from_data: {e}");
        }
        Array(Arc::new(ArrayInner {
            spec,
            state: Mutex::new(State::Ready(data)),
        }))
    }

    /// [`Array::from_data`] without its check, for data the library built
    /// itself and knows fits (the fused executor's chunk views, where a
    /// bool check would rescan the whole input for every chunk).
    pub(crate) fn from_data_unchecked(data: Data, spec: Spec) -> Array {
        debug_assert!(
            spec.dtype == Dtype::Bool || data.check_fits(&spec.shape, spec.dtype).is_ok()
        );
        Array(Arc::new(ArrayInner {
            spec,
            state: Mutex::new(State::Ready(data)),
        }))
    }

    /// A placeholder standing for a traced function's input.
    pub fn placeholder(shape: &[i32], dtype: Dtype) -> Array {
        Array(Arc::new(ArrayInner {
            spec: Spec::new(shape, dtype),
            state: Mutex::new(State::Placeholder),
        }))
    }

    /// The outputs of `primitive` applied to `inputs`, shapes inferred by the primitive.
    pub fn from_primitive_multi(
        primitive: Box<dyn Primitive>,
        inputs: Vec<Array>,
    ) -> Result<Vec<Array>> {
        let in_specs: Vec<Spec> = inputs.iter().map(|a| a.spec().clone()).collect();
        let specs = primitive.output_specs(&in_specs)?;
        // Shape rules take sizes from files: no output may be unaddressable.
        for s in &specs {
            if s.checked_nbytes().is_none_or(|n| n > isize::MAX as usize) {
                return Err(Error::invalid(
                    primitive.name(),
                    format!(
                        "an output of {} {:?} has a negative dimension or more bytes than memory can address",
                        s.dtype, s.shape
                    ),
                ));
            }
        }
        Ok(Array::with_specs(primitive, inputs, specs))
    }

    /// The single output of `primitive` applied to `inputs`.
    pub fn from_primitive(primitive: impl Primitive, inputs: Vec<Array>) -> Result<Array> {
        let name = primitive.name();
        let mut outs = Array::from_primitive_multi(Box::new(primitive), inputs)?;
        if outs.len() != 1 {
            return Err(Error::invalid(
                name,
                format!("expected one output, the primitive has {}", outs.len()),
            ));
        }
        Ok(outs.pop().expect("one output"))
    }

    /// A node with known output specs (used when replaying a recorded graph).
    pub fn with_specs(
        primitive: Box<dyn Primitive>,
        inputs: Vec<Array>,
        specs: Vec<Spec>,
    ) -> Vec<Array> {
        let node = Arc::new(Node {
            primitive,
            inputs: Mutex::new(inputs),
            specs: specs.clone(),
            outputs: OnceLock::new(),
        });
        let outs: Vec<Array> = specs
            .into_iter()
            .enumerate()
            .map(|(index, spec)| {
                Array(Arc::new(ArrayInner {
                    spec,
                    state: Mutex::new(State::Pending {
                        node: node.clone(),
                        index,
                    }),
                }))
            })
            .collect();
        let _ = node
            .outputs
            .set(outs.iter().map(|a| Arc::downgrade(&a.0)).collect());
        outs
    }

    // ----- metadata -----------------------------------------------------

    pub fn shape(&self) -> &[i32] {
        &self.0.spec.shape
    }
    pub fn dtype(&self) -> Dtype {
        self.0.spec.dtype
    }
    pub fn spec(&self) -> &Spec {
        &self.0.spec
    }
    pub fn ndim(&self) -> usize {
        self.0.spec.shape.len()
    }
    /// Number of elements.
    pub fn size(&self) -> usize {
        self.0.spec.size()
    }
    pub fn nbytes(&self) -> usize {
        self.size() * self.dtype().size()
    }
    /// Size of dimension `axis` (negative counts from the end).
    pub fn dim(&self, axis: i32) -> Result<i32> {
        let ax = crate::shape::normalize_axis("dim", axis, self.ndim())?;
        Ok(self.shape()[ax])
    }

    /// A number that identifies this array while it is alive.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// Whether `self` and `other` are the same array.
    pub fn same(&self, other: &Array) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Whether the array has data (evaluated or created with data).
    pub fn is_ready(&self) -> bool {
        matches!(*lock(&self.0.state), State::Ready(_))
    }

    /// Whether this is a placeholder for a traced input.
    pub fn is_placeholder(&self) -> bool {
        matches!(*lock(&self.0.state), State::Placeholder)
    }

    /// The producing node and output index, while not evaluated.
    pub fn node(&self) -> Option<(Arc<Node>, usize)> {
        match &*lock(&self.0.state) {
            State::Pending { node, index } => Some((node.clone(), *index)),
            _ => None,
        }
    }

    /// The data, if the array is ready.
    pub fn data(&self) -> Result<Data> {
        match &*lock(&self.0.state) {
            State::Ready(d) => Ok(d.clone()),
            State::Placeholder => Err(Error::Placeholder),
            State::Pending { .. } => Err(Error::invalid("data", "array is not evaluated")),
            State::Donated => Err(Error::invalid("data", "array buffer was donated")),
        }
    }

    pub(crate) fn set_data(&self, data: Data) {
        *lock(&self.0.state) = State::Ready(data);
    }

    /// Hands this array's buffer to a kernel for reuse as its output, when
    /// nothing else can observe it: the caller holds the only reference to
    /// the array, the array the only reference to the buffer, and the data is
    /// row-major from offset 0 over the whole (heap) buffer.
    pub fn try_donate(&self) -> Option<Buffer> {
        if Arc::strong_count(&self.0) != 1 {
            return None;
        }
        let mut st = lock(&self.0.state);
        let State::Ready(d) = &*st else { return None };
        if d.offset != 0
            || Arc::strong_count(&d.buffer) != 1
            || d.buffer.is_mapped()
            || d.buffer.len() != self.nbytes()
            || !d.is_row_contiguous(self.shape())
        {
            return None;
        }
        let State::Ready(d) = std::mem::replace(&mut *st, State::Donated) else {
            unreachable!()
        };
        Arc::into_inner(d.buffer)
    }

    /// Moves the data out of an array nothing else references (it is
    /// left donated), so that its new holder is the only one and a kernel
    /// may reuse the buffer; `None` if the array is shared or not ready.
    pub(crate) fn take_data(&self) -> Option<Data> {
        if Arc::strong_count(&self.0) != 1 {
            return None;
        }
        let mut st = lock(&self.0.state);
        match std::mem::replace(&mut *st, State::Donated) {
            State::Ready(d) => Some(d),
            other => {
                *st = other;
                None
            }
        }
    }

    // ----- evaluation and reading --------------------------------------

    /// The elements in row-major order. Evaluates; errors if `T` is not the dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            return Err(Error::DtypeMismatch {
                expected: self.dtype(),
                found: T::DTYPE,
            });
        }
        self.eval()?;
        Ok(to_contiguous_vec::<T>(&self.data()?, self.shape()))
    }

    /// The single element of a one-element array.
    pub fn item<T: Element>(&self) -> Result<T> {
        if self.size() != 1 {
            return Err(Error::invalid(
                "item",
                format!(
                    "array of shape {:?} has {} elements, not 1",
                    self.shape(),
                    self.size()
                ),
            ));
        }
        Ok(self.to_vec::<T>()?[0])
    }
}

/// Shapes must have non-negative dimensions whose product fits in memory.
pub(crate) fn check_shape(op: &str, shape: &[i32]) -> Result<()> {
    let mut n: usize = 1;
    for &d in shape {
        if d < 0 {
            return Err(Error::invalid(
                op,
                format!("negative dimension in shape {shape:?}"),
            ));
        }
        n = n
            .checked_mul(d as usize)
            .ok_or_else(|| Error::invalid(op, format!("shape {shape:?} has too many elements")))?;
    }
    Ok(())
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &*lock(&self.0.state) {
            State::Ready(_) => "ready",
            State::Pending { node, .. } => node.primitive.name(),
            State::Placeholder => "placeholder",
            State::Donated => "donated",
        };
        write!(f, "Array({:?}, {}, {state})", self.shape(), self.dtype())
    }
}
