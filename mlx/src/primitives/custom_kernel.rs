//! [`CustomKernel`]: a Metal (or CUDA) source kernel from
//! `mx.fast.metal_kernel`. Its state is decoded and written back byte for
//! byte, so files that contain one import and re-export; evaluating it on
//! the CPU is an error that names the kernel.

use crate::primitive::{MlxReader, MlxWriter, Spec, StateField, StateValue};
use crate::{Array, Data, Dtype, Error, Primitive, Result};
use ciborium::Value;

/// One scalar template/argument value of a custom kernel (MLX's
/// `std::variant<int, float, bool>`; wire tag 0 int, 1 float, 2 bool).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarArg {
    /// An `int` argument.
    Int(i32),
    /// A `float` argument.
    Float(f32),
    /// A `bool` argument.
    Bool(bool),
}

impl StateField for ScalarArg {
    const MLX_MIN_BYTES: usize = 5;
    fn to_state(&self) -> StateValue {
        match *self {
            ScalarArg::Int(i) => StateValue::Int(i as i64),
            ScalarArg::Float(f) => StateValue::Float(f as f64),
            ScalarArg::Bool(b) => StateValue::Bool(b),
        }
    }
    fn to_cbor(&self) -> Value {
        let (tag, v) = match *self {
            ScalarArg::Int(i) => ("int", i.to_cbor()),
            ScalarArg::Float(f) => ("float", f.to_cbor()),
            ScalarArg::Bool(b) => ("bool", b.to_cbor()),
        };
        Value::Array(vec![Value::Text(tag.to_string()), v])
    }
    fn from_cbor(v: &Value) -> std::result::Result<Self, String> {
        let items = v
            .as_array()
            .filter(|a| a.len() == 2)
            .ok_or_else(|| format!("expected [kind, value], found {v:?}"))?;
        match items[0].as_text() {
            Some("int") => i32::from_cbor(&items[1]).map(ScalarArg::Int),
            Some("float") => f32::from_cbor(&items[1]).map(ScalarArg::Float),
            Some("bool") => bool::from_cbor(&items[1]).map(ScalarArg::Bool),
            _ => Err(format!(
                "expected the kind \"int\", \"float\" or \"bool\", found {:?}",
                items[0]
            )),
        }
    }
    fn write_mlx(&self, w: &mut MlxWriter) {
        match *self {
            ScalarArg::Int(i) => {
                w.i32(0);
                w.i32(i);
            }
            ScalarArg::Float(f) => {
                w.i32(1);
                w.f32(f);
            }
            ScalarArg::Bool(b) => {
                w.i32(2);
                w.bool(b);
            }
        }
    }
    fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self> {
        match r.i32()? {
            0 => Ok(ScalarArg::Int(r.i32()?)),
            1 => Ok(ScalarArg::Float(r.f32()?)),
            2 => Ok(ScalarArg::Bool(r.bool()?)),
            t => Err(r.error(format!(
                "unknown scalar argument tag {t} (expected 0 int, 1 float, 2 bool)"
            ))),
        }
    }
}

/// A source kernel for a GPU (MLX's `CustomKernel`), with MLX's state in
/// MLX's wire order. The output shapes and dtypes are not in MLX's state:
/// an MLX file's tape records them and the importer hands them over
/// ([`Primitive::adopt_recorded_specs`]); native files store them as two
/// extra fields.
#[derive(Debug, Clone, PartialEq, crate::Primitive)]
#[primitive(mlx_since = "0.30.0")]
pub struct CustomKernel {
    /// The kernel's name.
    #[state]
    pub name: String,
    /// The kernel's source text.
    #[state]
    pub source: String,
    /// Launch grid (x, y, z).
    #[state]
    pub grid: (i32, i32, i32),
    /// Threadgroup size (x, y, z).
    #[state]
    pub threadgroup: (i32, i32, i32),
    /// Per input: whether the kernel reads its shape, strides, ndim.
    #[state]
    pub shape_infos: Vec<(bool, bool, bool)>,
    /// Inputs are copied to row-contiguous layout before the launch.
    #[state]
    pub ensure_row_contiguous: bool,
    /// Value the outputs are filled with before the launch, if any.
    #[state]
    pub init_value: Option<f32>,
    /// Scalar template arguments.
    #[state]
    pub scalar_arguments: Vec<ScalarArg>,
    /// The source is a precompiled library rather than text.
    #[state]
    pub is_precompiled: bool,
    /// Threadgroup shared memory in bytes.
    #[state]
    pub shared_memory: i32,
    /// Math mode: 0 safe, 1 relaxed, 2 fast.
    #[state(mlx_since = "0.32.0")]
    pub compile_options: i32,
    /// Output shapes (not in MLX's wire state).
    #[state(skip_mlx, default)]
    pub output_shapes: Vec<Vec<i32>>,
    /// Output dtypes (not in MLX's wire state).
    #[state(skip_mlx, default)]
    pub output_dtypes: Vec<Dtype>,
}

impl Primitive for CustomKernel {
    fn output_specs(&self, _inputs: &[Spec]) -> Result<Vec<Spec>> {
        if self.output_shapes.is_empty() || self.output_shapes.len() != self.output_dtypes.len() {
            return Err(Error::unsupported(
                "CustomKernel",
                format!(
                    "kernel `{}`: output shapes cannot be inferred (a file must record them)",
                    self.name
                ),
            ));
        }
        Ok(self
            .output_shapes
            .iter()
            .zip(&self.output_dtypes)
            .map(|(s, &d)| Spec::new(s.clone(), d))
            .collect())
    }
    fn eval(&self, _inputs: &[Array], _out: &[Spec]) -> Result<Vec<Data>> {
        Err(Error::unsupported(
            "CustomKernel",
            format!(
                "kernel `{}` is GPU source code (Metal/CUDA) and cannot run on the CPU",
                self.name
            ),
        ))
    }
    fn adopt_recorded_specs(&mut self, outputs: &[Spec]) {
        self.output_shapes = outputs.iter().map(|s| s.shape.clone()).collect();
        self.output_dtypes = outputs.iter().map(|s| s.dtype).collect();
    }
}
