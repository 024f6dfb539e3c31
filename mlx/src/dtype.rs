//! Element types: [`Dtype`], its MLX numbering, and MLX's type promotion.

use std::fmt;

/// The element type of an array. Discriminants are MLX's `Dtype::Val`
/// numbering, which the MLX wire format uses. The default, float32, is
/// MLX's default dtype (used for state fields MLX files do not carry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Dtype {
    Bool = 0,
    Uint8 = 1,
    Uint16 = 2,
    Uint32 = 3,
    Uint64 = 4,
    Int8 = 5,
    Int16 = 6,
    Int32 = 7,
    Int64 = 8,
    Float16 = 9,
    #[default]
    Float32 = 10,
    Float64 = 11,
    Bfloat16 = 12,
    Complex64 = 13,
}

use Dtype::*;

impl Dtype {
    /// Every dtype, in MLX's numbering order.
    pub const ALL: [Dtype; 14] = [
        Bool, Uint8, Uint16, Uint32, Uint64, Int8, Int16, Int32, Int64, Float16, Float32, Float64,
        Bfloat16, Complex64,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Bool | Uint8 | Int8 => 1,
            Uint16 | Int16 | Float16 | Bfloat16 => 2,
            Uint32 | Int32 | Float32 => 4,
            Uint64 | Int64 | Float64 | Complex64 => 8,
        }
    }

    /// MLX's (and numpy's) name: `"float32"`, `"bfloat16"`, ...
    pub fn name(self) -> &'static str {
        match self {
            Bool => "bool",
            Uint8 => "uint8",
            Uint16 => "uint16",
            Uint32 => "uint32",
            Uint64 => "uint64",
            Int8 => "int8",
            Int16 => "int16",
            Int32 => "int32",
            Int64 => "int64",
            Float16 => "float16",
            Float32 => "float32",
            Float64 => "float64",
            Bfloat16 => "bfloat16",
            Complex64 => "complex64",
        }
    }

    /// Parses a name produced by [`Dtype::name`].
    pub fn from_name(name: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == name)
    }

    /// MLX's numeric code (`Dtype::Val`).
    pub fn mlx_val(self) -> i32 {
        self as i32
    }

    /// The dtype with MLX code `v`, if any.
    pub fn from_mlx_val(v: i32) -> Option<Dtype> {
        usize::try_from(v)
            .ok()
            .and_then(|i| Dtype::ALL.get(i).copied())
    }

    pub fn is_float(self) -> bool {
        matches!(self, Float16 | Float32 | Float64 | Bfloat16)
    }
    /// Float or complex: the types that `exp`, `sin`, ... accept.
    pub fn is_inexact(self) -> bool {
        self.is_float() || self == Complex64
    }
    pub fn is_complex(self) -> bool {
        self == Complex64
    }
    pub fn is_integer(self) -> bool {
        self.is_signed_integer() || self.is_unsigned_integer()
    }
    pub fn is_signed_integer(self) -> bool {
        matches!(self, Int8 | Int16 | Int32 | Int64)
    }
    pub fn is_unsigned_integer(self) -> bool {
        matches!(self, Uint8 | Uint16 | Uint32 | Uint64)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The result dtype of a binary operation on `a` and `b`, as MLX decides it.
///
/// Rules: the same type gives itself; bool yields to anything; integers of
/// one signedness widen; a signed/unsigned mix takes the next signed type
/// that holds both (uint64 with a signed type gives float32); any integer with
/// a float gives the float; float16 with bfloat16 gives float32; complex64
/// absorbs everything.
pub fn promote_types(a: Dtype, b: Dtype) -> Dtype {
    if a == b {
        return a;
    }
    if a == Complex64 || b == Complex64 {
        return Complex64;
    }
    if a == Bool {
        return b;
    }
    if b == Bool {
        return a;
    }
    match (a.is_float(), b.is_float()) {
        (true, true) => {
            if a == Float64 || b == Float64 {
                Float64
            } else {
                // Any two distinct types among f16, f32, bf16 meet at f32.
                Float32
            }
        }
        (true, false) => a,
        (false, true) => b,
        (false, false) => promote_integers(a, b),
    }
}

fn promote_integers(a: Dtype, b: Dtype) -> Dtype {
    let (sa, sb) = (a.is_signed_integer(), b.is_signed_integer());
    if sa == sb {
        return if a.size() >= b.size() { a } else { b };
    }
    let (signed, unsigned) = if sa { (a, b) } else { (b, a) };
    if unsigned == Uint64 {
        return Float32;
    }
    // Smallest signed type strictly wider than the unsigned one, at least as wide as `signed`.
    let need = (unsigned.size() * 2).max(signed.size());
    match need {
        1 => Int8,
        2 => Int16,
        4 => Int32,
        _ => Int64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_round_trips() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::from_mlx_val(d.mlx_val()), Some(d));
            assert_eq!(Dtype::from_name(d.name()), Some(d));
        }
        assert_eq!(Dtype::from_mlx_val(14), None);
        assert_eq!(Dtype::from_mlx_val(-1), None);
    }
}
