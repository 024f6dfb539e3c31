//! `MlxReader` against hostile and damaged input: lengths that cannot fit
//! are rejected before anything is allocated, truncation anywhere is an
//! error (never a panic), and values outside their domain are refused.
//!
//! A counting global allocator records the largest single allocation, which
//! is how "before allocating" is checked.

use mlx::__private::StateField;
use mlx::primitive::{lookup, MlxReader, MlxWriter};
use mlx::{Array, Data, Dtype, Error, Primitive, PrimitiveState, Result, Spec};
use proptest::prelude::*;

use crate::alloc_counter::largest_allocation;

fn read<T: StateField>(bytes: &[u8]) -> Result<T> {
    T::read_mlx(&mut MlxReader::new(bytes, "hostile.mlxfn"))
}

fn count(n: u64, rest: &[u8]) -> Vec<u8> {
    let mut b = n.to_le_bytes().to_vec();
    b.extend_from_slice(rest);
    b
}

mlx::state_enum! {
    /// Test enum for the wire.
    pub enum Mode { Low = 0, High = 1 }
}

/// A primitive with every field kind, for truncation and fuzzing.
#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
#[primitive(name = "TestWireSink")]
struct WireSink {
    #[state]
    flag: bool,
    #[state]
    axis: i32,
    #[state]
    big: i64,
    #[state]
    seed: u64,
    #[state]
    eps: f32,
    #[state]
    scale: f64,
    #[state]
    dtype: Dtype,
    #[state]
    label: String,
    #[state]
    shape: Vec<i32>,
    #[state]
    nested: Vec<Vec<i32>>,
    #[state]
    names: Vec<String>,
    #[state]
    bound: Option<f32>,
    #[state]
    pair: (i32, Dtype),
    #[state]
    mode: Mode,
}

impl Primitive for WireSink {
    fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
        Ok(inputs.to_vec())
    }
    fn eval(&self, _: &[Array], _: &[Spec]) -> Result<Vec<Data>> {
        Err(Error::Unsupported {
            primitive: "TestWireSink".into(),
            msg: "no kernel".into(),
        })
    }
}

fn wire_sink_bytes() -> Vec<u8> {
    let p = WireSink {
        flag: true,
        axis: -1,
        big: 1 << 50,
        seed: 7,
        eps: 1e-5,
        scale: 0.5,
        dtype: Dtype::Float16,
        label: "abc".into(),
        shape: vec![2, 3],
        nested: vec![vec![1], vec![]],
        names: vec!["x".into(), "".into()],
        bound: Some(1.0),
        pair: (4, Dtype::Uint32),
        mode: Mode::High,
    };
    let mut w = MlxWriter::new();
    p.write_mlx(&mut w);
    w.bytes
}

fn decode(bytes: &[u8]) -> Result<Box<dyn Primitive>> {
    let mut r = MlxReader::new(bytes, "sink.mlxfn");
    (lookup("TestWireSink")?.decode_mlx)(&mut r)
}

#[test]
fn hostile_vector_count_is_rejected_before_allocating() {
    for n in [1u64 << 60, u64::MAX, 1 << 32, 1 << 20] {
        let bytes = count(n, &[0; 16]);
        let (res, largest) = largest_allocation(|| read::<Vec<i32>>(&bytes));
        let err = res.unwrap_err();
        assert!(matches!(err, Error::Format { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("count {n}")), "{msg}");
        assert!(msg.contains("hostile.mlxfn"), "{msg}");
        assert!(largest < 4096, "allocated {largest} bytes for count {n}");
    }
    // Nested lists and lists of strings are bounded the same way.
    let bytes = count(1 << 60, &[0; 64]);
    let (res, largest) = largest_allocation(|| read::<Vec<Vec<i32>>>(&bytes));
    assert!(res.is_err());
    assert!(largest < 4096, "allocated {largest}");
    let (res, largest) = largest_allocation(|| read::<Vec<String>>(&bytes));
    assert!(res.is_err());
    assert!(largest < 4096, "allocated {largest}");
}

#[test]
fn count_is_checked_against_element_size() {
    // 4 elements of i32 need 16 bytes; 15 are left.
    let err = read::<Vec<i32>>(&count(4, &[0; 15])).unwrap_err();
    assert!(
        err.to_string()
            .contains("count 4 cannot fit in the 15 bytes left"),
        "{err}"
    );
    assert_eq!(read::<Vec<i32>>(&count(4, &[0; 16])).unwrap(), vec![0; 4]);
    // Each inner list takes at least its 8-byte count.
    let err = read::<Vec<Vec<i32>>>(&count(3, &[0; 23])).unwrap_err();
    assert!(err.to_string().contains("count 3"), "{err}");
    assert_eq!(
        read::<Vec<Vec<i32>>>(&count(3, &[0; 24])).unwrap(),
        vec![Vec::<i32>::new(); 3]
    );
}

#[test]
fn hostile_string_length_is_rejected_before_allocating() {
    for n in [1u64 << 60, u64::MAX, 1 << 31, 9] {
        let bytes = count(n, b"12345678");
        let (res, largest) = largest_allocation(|| read::<String>(&bytes));
        let err = res.unwrap_err();
        assert!(err.to_string().contains(&format!("count {n}")), "{err}");
        assert!(largest < 4096, "allocated {largest} for a {n}-byte string");
    }
    assert_eq!(read::<String>(&count(8, b"12345678")).unwrap(), "12345678");
}

#[test]
fn truncation_at_every_byte_is_an_error() {
    let bytes = wire_sink_bytes();
    assert!(decode(&bytes).is_ok());
    for k in 0..bytes.len() {
        match decode(&bytes[..k]) {
            Err(Error::Format { msg, .. }) => {
                assert!(
                    msg.contains("truncated") || msg.contains("cannot fit"),
                    "{msg}"
                )
            }
            Err(e) => panic!("prefix of {k} bytes: unexpected error kind {e}"),
            Ok(p) => panic!("prefix of {k} bytes decoded as {p:?}"),
        }
    }
}

#[test]
fn bool_must_be_zero_or_one() {
    assert!(!read::<bool>(&[0]).unwrap());
    assert!(read::<bool>(&[1]).unwrap());
    for b in [2u8, 3, 0x80, 0xff] {
        let err = read::<bool>(&[b]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("expected a bool (0 or 1), found {b}")),
            "{msg}"
        );
        assert!(msg.contains("at byte 0"), "{msg}");
    }
    // The has-value byte of an optional is a bool too.
    let err = read::<Option<i32>>(&[2, 0, 0, 0, 0]).unwrap_err();
    assert!(err.to_string().contains("found 2"), "{err}");
}

#[test]
fn dtype_size_byte_must_match() {
    let dtype = |val: i32, size: u8| {
        let mut b = val.to_le_bytes().to_vec();
        b.push(size);
        read::<Dtype>(&b)
    };
    for v in 0..14 {
        let d = Dtype::from_mlx_val(v).unwrap();
        assert_eq!(dtype(v, d.size() as u8).unwrap(), d);
    }
    let err = dtype(10, 2).unwrap_err();
    assert!(
        err.to_string()
            .contains("dtype float32 has item size 4, the file says 2"),
        "{err}"
    );
    let err = dtype(13, 4).unwrap_err();
    assert!(err.to_string().contains("item size 8"), "{err}");
    for bad in [-1, 14, 1000] {
        let err = dtype(bad, 4).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("unknown dtype code {bad}")),
            "{err}"
        );
    }
}

#[test]
fn strings_must_be_utf8() {
    let err = read::<String>(&count(2, &[0xc3, 0x28])).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("not valid UTF-8"), "{msg}");
    assert!(msg.contains("at byte 8"), "{msg}");
}

#[test]
fn enum_codes_are_checked() {
    let err = read::<Mode>(&7i32.to_le_bytes()).unwrap_err();
    assert!(err.to_string().contains("unknown Mode code 7"), "{err}");
}

#[test]
fn reader_reports_position_and_remaining() {
    let bytes = [1u8, 0, 0, 0, 9];
    let mut r = MlxReader::new(&bytes, "f");
    assert_eq!(r.i32().unwrap(), 1);
    assert_eq!((r.pos(), r.remaining()), (4, 1));
    let err = r.i32().unwrap_err();
    assert!(
        err.to_string()
            .contains("at byte 4: truncated: i32 needs 4 bytes, 1 left"),
        "{err}"
    );
    // A failed read consumes nothing.
    assert_eq!(r.u8().unwrap(), 9);
    assert_eq!(r.remaining(), 0);
}

#[test]
fn writer_and_reader_agree_on_scalars() {
    let mut w = MlxWriter::new();
    w.u8(200);
    w.bool(true);
    w.i32(i32::MIN);
    w.u64(u64::MAX);
    w.i64(i64::MIN);
    w.f32(f32::NAN);
    w.f64(-0.0);
    w.str("é");
    w.len(2);
    w.raw(&[1, 2]);
    let b = w.bytes;
    assert_eq!(b.len(), 1 + 1 + 4 + 8 + 8 + 4 + 8 + 8 + 2 + 8 + 2);
    let mut r = MlxReader::new(&b, "f");
    assert_eq!(r.u8().unwrap(), 200);
    assert!(r.bool().unwrap());
    assert_eq!(r.i32().unwrap(), i32::MIN);
    assert_eq!(r.u64().unwrap(), u64::MAX);
    assert_eq!(r.i64().unwrap(), i64::MIN);
    assert!(r.f32().unwrap().is_nan());
    assert_eq!(r.f64().unwrap().to_bits(), (-0.0f64).to_bits());
    assert_eq!(r.str().unwrap(), "é");
    assert_eq!(r.len(1, "list").unwrap(), 2);
    assert_eq!(r.take(2, "raw").unwrap(), &[1, 2]);
    assert_eq!(r.remaining(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Damaged state never panics and never allocates more than the input could describe.
    #[test]
    fn damaged_state_never_panics(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = wire_sink_bytes();
        for (at, v) in flips {
            let i = at.index(bytes.len());
            bytes[i] = v;
        }
        let end = cut.index(bytes.len() + 1);
        let (res, largest) = largest_allocation(|| decode(&bytes[..end]).map(|p| p.name()));
        if let Ok(name) = res {
            prop_assert_eq!(name, "TestWireSink");
        }
        prop_assert!(largest < 64 * 1024, "allocated {}", largest);
    }

    /// Arbitrary bytes never panic.
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode(&bytes);
    }
}
