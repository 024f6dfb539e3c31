//! Typed primitive state: [`StateValue`] for inspection and [`StateField`],
//! the codec trait every `#[state]` field type implements (CBOR and MLX wire).

use super::{MlxReader, MlxWriter};
use crate::{Dtype, Error, Result};
use ciborium::Value;

/// One state field's value, typed, for inspection (callbacks, DOT, equality).
#[derive(Clone, Debug, PartialEq)]
pub enum StateValue {
    Bool(bool),
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
pub trait StateField: Sized {
    fn to_state(&self) -> StateValue;
    fn to_cbor(&self) -> Value;
    fn from_cbor(v: &Value) -> std::result::Result<Self, String>;
    fn write_mlx(&self, w: &mut MlxWriter);
    fn read_mlx(r: &mut MlxReader<'_>) -> Result<Self>;
}

fn int_of(v: &Value) -> std::result::Result<i128, String> {
    match v {
        Value::Integer(i) => Ok(i128::from(*i)),
        other => Err(format!("expected an integer, found {other:?}")),
    }
}

macro_rules! int_field {
    ($($t:ty => $w:ident),*) => {$(
        impl StateField for $t {
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
        impl StateField for $t {
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

impl StateField for Dtype {
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

impl StateField for String {
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

impl<T: StateField> StateField for Vec<T> {
    fn to_state(&self) -> StateValue {
        let items: Vec<StateValue> = self.iter().map(T::to_state).collect();
        if items.iter().all(|s| matches!(s, StateValue::Int(_))) && !items.is_empty() {
            StateValue::Ints(
                items
                    .iter()
                    .map(|s| if let StateValue::Int(i) = s { *i } else { 0 })
                    .collect(),
            )
        } else {
            StateValue::List(items)
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
        // Every element takes at least one byte on the wire.
        let n = r.len(1, "list")?;
        (0..n).map(|_| T::read_mlx(r)).collect()
    }
}

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
        impl<$($T: StateField),+> StateField for ($($T,)+) {
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
/// ```ignore
/// state_enum! { pub enum ReduceType { And = 0, Or = 1, Sum = 2 } }
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
            pub fn from_code(v: i32) -> Option<$name> { Self::ALL.iter().copied().find(|x| *x as i32 == v) }
        }

        impl $crate::__private::StateField for $name {
            fn to_state(&self) -> $crate::__private::StateValue {
                $crate::__private::StateValue::Enum { name: self.name(), value: *self as i32 }
            }
            fn to_cbor(&self) -> $crate::__private::CborValue {
                $crate::__private::CborValue::Text(self.name().to_string())
            }
            fn from_cbor(v: &$crate::__private::CborValue) -> ::std::result::Result<Self, String> {
                let s = v.as_text().ok_or_else(|| format!("expected a {} name, found {v:?}", stringify!($name)))?;
                Self::ALL.iter().copied().find(|x| x.name() == s)
                    .ok_or_else(|| format!("unknown {} `{s}`", stringify!($name)))
            }
            fn write_mlx(&self, w: &mut $crate::__private::MlxWriter) { w.i32(*self as i32) }
            fn read_mlx(r: &mut $crate::__private::MlxReader<'_>) -> $crate::Result<Self> {
                let v = r.i32()?;
                Self::from_code(v).ok_or_else(|| r.error(format!("unknown {} code {v}", stringify!($name))))
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
    let v = find(map, key).ok_or_else(|| Error::BadState {
        primitive: primitive.to_string(),
        msg: format!("missing field `{key}`"),
    })?;
    T::from_cbor(v).map_err(|msg| Error::BadState {
        primitive: primitive.to_string(),
        msg: format!("field `{key}`: {msg}"),
    })
}

/// An optional field of a CBOR state map (`#[state(default)]`).
pub fn cbor_field_or_default<T: StateField + Default>(
    map: &[(Value, Value)],
    primitive: &str,
    key: &str,
) -> Result<T> {
    match find(map, key) {
        None => Ok(T::default()),
        Some(_) => cbor_field(map, primitive, key),
    }
}
