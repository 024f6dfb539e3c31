//! Typed primitive state: [`StateValue`] for inspection and [`StateField`],
//! the codec trait every `#[state]` field type implements (CBOR and MLX wire).

use super::{MlxReader, MlxWriter};
use crate::{Dtype, Error, Result};
use ciborium::Value;

/// One state field's value, typed, for inspection (callbacks, DOT, equality).
#[derive(Clone, Debug, PartialEq)]
pub enum StateValue {
    Bool(bool),
    /// Any integer field (`u64` values above `i64::MAX` wrap).
    Int(i64),
    Float(f64),
    Dtype(Dtype),
    /// A list of integers: shapes, axes, strides.
    Ints(Vec<i64>),
    Str(String),
    /// A named enum value with its MLX code.
    Enum {
        name: &'static str,
        value: i32,
    },
    List(Vec<StateValue>),
    Optional(Option<Box<StateValue>>),
}

impl std::fmt::Display for StateValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateValue::Bool(b) => write!(f, "{b}"),
            StateValue::Int(i) => write!(f, "{i}"),
            StateValue::Float(x) => write!(f, "{x}"),
            StateValue::Dtype(d) => write!(f, "{d}"),
            StateValue::Ints(v) => write!(f, "{v:?}"),
            StateValue::Str(s) => write!(f, "{s:?}"),
            StateValue::Enum { name, .. } => write!(f, "{name}"),
            StateValue::List(v) => {
                f.write_str("[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            StateValue::Optional(None) => f.write_str("None"),
            StateValue::Optional(Some(v)) => write!(f, "{v}"),
        }
    }
}

/// A type that can be a `#[state]` field: it knows its typed value, its CBOR
/// form (native files) and its MLX wire form.
///
/// Implemented for `bool`, `i32`, `i64`, `u64`, `f32`, `f64`, [`Dtype`],
/// `String`, `Vec<T>`, `Option<T>`, pairs and triples, and enums defined with
/// [`state_enum!`](crate::state_enum).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a #[state] field of a primitive",
    label = "this type has no state codec (`StateField`)",
    note = "#[state] fields can be bool, i32, i64, u64, f32, f64, Dtype, String, an enum defined with `mlx::state_enum!`, and Vec<T>, Option<T> and tuples of 2 or 3 of those",
    note = "a field that is not part of the state (a cache) must not have #[state]; it is rebuilt with `Default`"
)]
pub trait StateField: Sized {
    /// Fewest bytes one value takes on MLX's wire; a list count is checked
    /// against it before anything is allocated.
    const MLX_MIN_BYTES: usize = 1;
    /// Whether the value is an integer (a list of them is [`StateValue::Ints`]).
    const IS_INT: bool = false;
    /// The typed value, for inspection and equality.
    fn to_state(&self) -> StateValue;
    /// The native (CBOR) form.
    fn to_cbor(&self) -> Value;
    /// Reads the native form; the error says what was expected and found.
    fn from_cbor(v: &Value) -> std::result::Result<Self, String>;
    /// Appends MLX's wire form.
    fn write_mlx(&self, w: &mut MlxWriter);
    /// Reads MLX's wire form, bounds-checked.
    fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self>;
}

fn int_of(v: &Value) -> std::result::Result<i128, String> {
    match v {
        Value::Integer(i) => Ok(i128::from(*i)),
        other => Err(format!("expected an integer, found {other:?}")),
    }
}

// Every impl is `do_not_recommend`: an error about a field type then names
// the field's whole type and shows the supported types from the trait's
// note, not a list of impls that grows with every `state_enum!`.
macro_rules! int_field {
    ($($t:ty => $w:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl StateField for $t {
            const MLX_MIN_BYTES: usize = std::mem::size_of::<$t>();
            const IS_INT: bool = true;
            fn to_state(&self) -> StateValue { StateValue::Int(*self as i64) }
            fn to_cbor(&self) -> Value { Value::Integer((*self).into()) }
            fn from_cbor(v: &Value) -> std::result::Result<Self, String> {
                let i = int_of(v)?;
                <$t>::try_from(i).map_err(|_| format!("{i} is out of range for {}", stringify!($t)))
            }
            fn write_mlx(&self, w: &mut MlxWriter) { w.$w(*self) }
            fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self> { r.$w() }
        }
    )*};
}
int_field!(i32 => i32, i64 => i64, u64 => u64);

#[diagnostic::do_not_recommend]
impl StateField for bool {
    fn to_state(&self) -> StateValue {
        StateValue::Bool(*self)
    }
    fn to_cbor(&self) -> Value {
        Value::Bool(*self)
    }
    fn from_cbor(v: &Value) -> std::result::Result<Self, String> {
        v.as_bool()
            .ok_or_else(|| format!("expected a bool, found {v:?}"))
    }
    fn write_mlx(&self, w: &mut MlxWriter) {
        w.bool(*self)
    }
    fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self> {
        r.bool()
    }
}

macro_rules! float_field {
    ($($t:ty => $w:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl StateField for $t {
            const MLX_MIN_BYTES: usize = std::mem::size_of::<$t>();
            fn to_state(&self) -> StateValue { StateValue::Float(*self as f64) }
            fn to_cbor(&self) -> Value { Value::Float(*self as f64) }
            fn from_cbor(v: &Value) -> std::result::Result<Self, String> {
                match v {
                    Value::Float(x) => Ok(*x as $t),
                    Value::Integer(i) => Ok(i128::from(*i) as $t),
                    other => Err(format!("expected a float, found {other:?}")),
                }
            }
            fn write_mlx(&self, w: &mut MlxWriter) { w.$w(*self) }
            fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self> { r.$w() }
        }
    )*};
}
float_field!(f32 => f32, f64 => f64);

#[diagnostic::do_not_recommend]
impl StateField for Dtype {
    const MLX_MIN_BYTES: usize = 5;
    fn to_state(&self) -> StateValue {
        StateValue::Dtype(*self)
    }
    fn to_cbor(&self) -> Value {
        Value::Text(self.name().to_string())
    }
    fn from_cbor(v: &Value) -> std::result::Result<Self, String> {
        let s = v
            .as_text()
            .ok_or_else(|| format!("expected a dtype name, found {v:?}"))?;
        Dtype::from_name(s).ok_or_else(|| format!("unknown dtype `{s}`"))
    }
    /// MLX: `i32` code, then a `u8` item size.
    fn write_mlx(&self, w: &mut MlxWriter) {
        w.i32(self.mlx_val());
        w.u8(self.size() as u8);
    }
    fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self> {
        let v = r.i32()?;
        let size = r.u8()?;
        let d = Dtype::from_mlx_val(v).ok_or_else(|| r.error(format!("unknown dtype code {v}")))?;
        if size as usize != d.size() {
            return Err(r.error(format!(
                "dtype {d} has item size {}, the file says {size}",
                d.size()
            )));
        }
        Ok(d)
    }
}

#[diagnostic::do_not_recommend]
impl StateField for String {
    const MLX_MIN_BYTES: usize = 8;
    fn to_state(&self) -> StateValue {
        StateValue::Str(self.clone())
    }
    fn to_cbor(&self) -> Value {
        Value::Text(self.clone())
    }
    fn from_cbor(v: &Value) -> std::result::Result<Self, String> {
        v.as_text()
            .map(str::to_string)
            .ok_or_else(|| format!("expected a string, found {v:?}"))
    }
    fn write_mlx(&self, w: &mut MlxWriter) {
        w.str(self)
    }
    fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self> {
        r.str()
    }
}

#[diagnostic::do_not_recommend]
impl<T: StateField> StateField for Vec<T> {
    const MLX_MIN_BYTES: usize = 8;
    fn to_state(&self) -> StateValue {
        let items = self.iter().map(T::to_state);
        if T::IS_INT {
            // Shapes, axes, strides: one variant whether empty or not.
            StateValue::Ints(
                items
                    .filter_map(|s| match s {
                        StateValue::Int(i) => Some(i),
                        _ => None,
                    })
                    .collect(),
            )
        } else {
            StateValue::List(items.collect())
        }
    }
    fn to_cbor(&self) -> Value {
        Value::Array(self.iter().map(T::to_cbor).collect())
    }
    fn from_cbor(v: &Value) -> std::result::Result<Self, String> {
        let items = v
            .as_array()
            .ok_or_else(|| format!("expected a list, found {v:?}"))?;
        items.iter().map(T::from_cbor).collect()
    }
    fn write_mlx(&self, w: &mut MlxWriter) {
        w.len(self.len());
        for x in self {
            x.write_mlx(w);
        }
    }
    fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self> {
        let n = r.len(T::MLX_MIN_BYTES, "list")?;
        (0..n).map(|_| T::read_mlx(r)).collect()
    }
}

#[diagnostic::do_not_recommend]
impl<T: StateField> StateField for Option<T> {
    fn to_state(&self) -> StateValue {
        StateValue::Optional(self.as_ref().map(|x| Box::new(x.to_state())))
    }
    fn to_cbor(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_cbor)
    }
    fn from_cbor(v: &Value) -> std::result::Result<Self, String> {
        if v.is_null() {
            Ok(None)
        } else {
            T::from_cbor(v).map(Some)
        }
    }
    fn write_mlx(&self, w: &mut MlxWriter) {
        w.bool(self.is_some());
        if let Some(x) = self {
            x.write_mlx(w);
        }
    }
    fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self> {
        if r.bool()? {
            T::read_mlx(r).map(Some)
        } else {
            Ok(None)
        }
    }
}

macro_rules! tuple_field {
    ($($n:tt $T:ident),+) => {
        #[diagnostic::do_not_recommend]
        impl<$($T: StateField),+> StateField for ($($T,)+) {
            const MLX_MIN_BYTES: usize = 0 $(+ $T::MLX_MIN_BYTES)+;
            fn to_state(&self) -> StateValue { StateValue::List(vec![$(self.$n.to_state()),+]) }
            fn to_cbor(&self) -> Value { Value::Array(vec![$(self.$n.to_cbor()),+]) }
            fn from_cbor(v: &Value) -> std::result::Result<Self, String> {
                let items = v.as_array().ok_or_else(|| format!("expected a tuple, found {v:?}"))?;
                let want = [$(stringify!($n)),+].len();
                if items.len() != want {
                    return Err(format!("expected a tuple of {want}, found {}", items.len()));
                }
                Ok(($($T::from_cbor(&items[$n])?,)+))
            }
            fn write_mlx(&self, w: &mut MlxWriter) { $(self.$n.write_mlx(w);)+ }
            fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self> { Ok(($($T::read_mlx(r)?,)+)) }
        }
    };
}
tuple_field!(0 A, 1 B);
tuple_field!(0 A, 1 B, 2 C);

/// Defines a state enum written as MLX's `i32` code and as its name in CBOR.
///
/// The enum gets `ALL`, `name()` and `from_code()`, and implements
/// [`StateField`], so it can be a `#[state]` field.
///
/// ```
/// mlx::state_enum! {
///     /// How values are combined.
///     pub enum Combine { And = 0, Or = 1, Sum = 2 }
/// }
/// assert_eq!(Combine::from_code(2), Some(Combine::Sum));
/// assert_eq!(Combine::Or.name(), "Or");
/// ```
#[macro_export]
macro_rules! state_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $var:ident = $val:expr),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vm])* $var = $val),+ }

        impl $name {
            /// Every variant.
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            /// The variant's name.
            pub fn name(self) -> &'static str { match self { $($name::$var => stringify!($var)),+ } }
            /// The variant with MLX code `v`.
            pub fn from_code(v: i32) -> ::core::option::Option<$name> { Self::ALL.iter().copied().find(|x| *x as i32 == v) }
        }

        #[diagnostic::do_not_recommend]
        impl $crate::__private::StateField for $name {
            const MLX_MIN_BYTES: usize = 4;
            fn to_state(&self) -> $crate::__private::StateValue {
                $crate::__private::StateValue::Enum { name: self.name(), value: *self as i32 }
            }
            fn to_cbor(&self) -> $crate::__private::CborValue {
                $crate::__private::CborValue::Text(::std::string::String::from(self.name()))
            }
            fn from_cbor(v: &$crate::__private::CborValue) -> ::core::result::Result<Self, ::std::string::String> {
                let s = v.as_text().ok_or_else(|| ::std::format!("expected a {} name, found {v:?}", stringify!($name)))?;
                Self::ALL.iter().copied().find(|x| x.name() == s)
                    .ok_or_else(|| ::std::format!("unknown {} `{s}`", stringify!($name)))
            }
            fn write_mlx(&self, w: &mut $crate::__private::MlxWriter) { w.i32(*self as i32) }
            fn read_mlx(r: &mut $crate::__private::MlxReader<'_>) -> $crate::Result<Self> {
                let v = r.i32()?;
                Self::from_code(v).ok_or_else(|| r.error(::std::format!("unknown {} code {v}", stringify!($name))))
            }
        }
    };
}

/// The CBOR state map of a primitive (used by generated decoders).
pub fn cbor_map<'a>(v: &'a Value, primitive: &str) -> Result<&'a [(Value, Value)]> {
    v.as_map()
        .map(Vec::as_slice)
        .ok_or_else(|| Error::BadState {
            primitive: primitive.to_string(),
            msg: format!("state must be a map, found {v:?}"),
        })
}

fn find<'a>(map: &'a [(Value, Value)], key: &str) -> Option<&'a Value> {
    map.iter()
        .find(|(k, _)| k.as_text() == Some(key))
        .map(|(_, v)| v)
}

/// A required field of a CBOR state map.
pub fn cbor_field<T: StateField>(map: &[(Value, Value)], primitive: &str, key: &str) -> Result<T> {
    cbor_field_with(map, primitive, key, T::from_cbor)
}

/// An optional field of a CBOR state map (`#[state(default)]`).
pub fn cbor_field_or_default<T: StateField + Default>(
    map: &[(Value, Value)],
    primitive: &str,
    key: &str,
) -> Result<T> {
    cbor_field_with_default(map, primitive, key, T::from_cbor, T::default)
}

/// A required field decoded by `decode`. The derive passes
/// `<Type as StateField>::from_cbor`, so a type without a codec is reported
/// once, at the field's type, like its other uses.
#[doc(hidden)]
pub fn cbor_field_with<T>(
    map: &[(Value, Value)],
    primitive: &str,
    key: &str,
    decode: fn(&Value) -> std::result::Result<T, String>,
) -> Result<T> {
    let v = find(map, key).ok_or_else(|| Error::BadState {
        primitive: primitive.to_string(),
        msg: format!("missing field `{key}`"),
    })?;
    decode(v).map_err(|msg| Error::BadState {
        primitive: primitive.to_string(),
        msg: format!("field `{key}`: {msg}"),
    })
}

/// A `#[state(default)]` field decoded by `decode`, or `default()` when missing.
#[doc(hidden)]
pub fn cbor_field_with_default<T>(
    map: &[(Value, Value)],
    primitive: &str,
    key: &str,
    decode: fn(&Value) -> std::result::Result<T, String>,
    default: fn() -> T,
) -> Result<T> {
    match find(map, key) {
        None => Ok(default()),
        Some(_) => cbor_field_with(map, primitive, key, decode),
    }
}
