//! The one error type of the crate.

use std::path::PathBuf;

/// `std::result::Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Every failure of the library. Messages say what was expected and what was found.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An op was called with arguments it cannot accept (shapes, axes, dtypes).
    #[error("{op}: {msg}")]
    InvalidArgument { op: String, msg: String },

    /// An axis outside `-ndim..ndim`.
    #[error("{op}: axis {axis} is out of bounds for an array with {ndim} dimensions")]
    AxisOutOfBounds { op: String, axis: i32, ndim: usize },

    /// The same axis given twice (after normalising negative axes).
    #[error("{op}: duplicate axis {axis} in {axes:?}")]
    DuplicateAxis {
        op: String,
        axis: i32,
        axes: Vec<i32>,
    },

    /// Two shapes that do not broadcast (numpy rules).
    #[error("{op}: shapes {a:?} and {b:?} cannot be broadcast together")]
    Broadcast {
        op: String,
        a: Vec<i32>,
        b: Vec<i32>,
    },

    /// A primitive given the wrong number of inputs.
    #[error("{op}: expected {expected} inputs, found {found}")]
    InputCount {
        op: String,
        expected: usize,
        found: usize,
    },

    /// An op that has no meaning for this dtype (e.g. `sin` of complex64 where
    /// MLX refuses it).
    #[error("{op}: not supported for {dtype}")]
    DtypeNotSupported { op: String, dtype: crate::Dtype },

    /// A typed accessor was called with the wrong element type.
    #[error("dtype mismatch: expected {expected}, found {found}")]
    DtypeMismatch {
        expected: crate::Dtype,
        found: crate::Dtype,
    },

    /// `eval` (or a data accessor) was called on an array while a function was being traced.
    #[error("cannot evaluate an array inside a traced function (export, compile or a transform is tracing it); return the array instead of reading its value")]
    EvalInTrace,

    /// A placeholder array (a traced input) was evaluated outside its trace.
    #[error("cannot evaluate a placeholder: it stands for an input of a traced function")]
    Placeholder,

    /// A primitive has no gradient rule.
    #[error("{0} is not differentiable")]
    NotDifferentiable(String),

    /// A primitive has no kernel for this case.
    #[error("{primitive}: {msg}")]
    Unsupported { primitive: String, msg: String },

    /// A file names a primitive that is not registered.
    #[error("unknown primitive `{name}`{at}; registered primitives: {known}")]
    UnknownPrimitive {
        name: String,
        at: String,
        known: String,
    },

    /// A primitive's state in a file does not decode.
    #[error("bad state for primitive {primitive}: {msg}")]
    BadState { primitive: String, msg: String },

    /// A file is damaged or not in the expected format.
    #[error("{path}: {msg}")]
    Format { path: String, msg: String },

    /// A checksum did not match.
    #[error("{path}: checksum mismatch for {what}: the file is damaged")]
    Checksum { path: String, what: String },

    /// A call's inputs match none of the exported signatures.
    #[error("no exported signature matches the call {call}; the file has:\n{signatures}")]
    NoMatchingSignature { call: String, signatures: String },

    /// Export was misused (duplicate signature, export after finish, ...).
    #[error("export: {0}")]
    Export(String),

    /// An I/O failure where no path is known (`?` on a `std::io::Error`).
    #[error("I/O error: {0}")]
    IoError(#[from] std::io::Error),

    /// An I/O failure, with the path involved.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(op: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::InvalidArgument {
            op: op.into(),
            msg: msg.into(),
        }
    }

    /// Shorthand for [`Error::Unsupported`].
    pub fn unsupported(primitive: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::Unsupported {
            primitive: primitive.into(),
            msg: msg.into(),
        }
    }

    /// Shorthand for [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
