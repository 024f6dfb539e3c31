//! The code `#[derive(Primitive)]` generates, exercised on primitives
//! defined here (they register through `inventory` exactly like the
//! library's own): state accessors, the CBOR and MLX codecs, defaults,
//! `skip_mlx`, caches, aliases and equivalence.
//!
//! Expected MLX bytes are spelled out by hand from the wire rules
//! (/work/shared/mlxfn-format.md §1), independently of the writer.

use mlx::__private::CborValue;
use mlx::primitive::{lookup, MlxReader, MlxWriter};
use mlx::{Array, Data, Dtype, Error, Primitive, PrimitiveState, Result, Spec, StateValue};
use proptest::prelude::*;

mlx::state_enum! {
    /// A test enum with a gap in its codes.
    pub enum Flavor { Plain = 0, Fancy = 3 }
}

/// Every kind of state field, with a cache field that is not state.
#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
#[primitive(name = "TestKitchenSink", aliases("TestKitchenSinkOld", "TestSink"))]
struct KitchenSink {
    #[state]
    flag: bool,
    #[state]
    small: i32,
    #[state]
    big: i64,
    #[state]
    seed: u64,
    #[state]
    alpha: f32,
    #[state]
    beta: f64,
    #[state]
    dtype: Dtype,
    #[state]
    label: String,
    #[state]
    axes: Vec<i32>,
    #[state]
    nested: Vec<Vec<i32>>,
    #[state]
    bound: Option<f32>,
    #[state]
    pair: (i32, bool),
    #[state]
    triple: (f32, Dtype, String),
    #[state]
    flavor: Flavor,
    #[state]
    r#type: i32,
    /// Not state: rebuilt with `Default` by both decoders.
    cache: Vec<f32>,
}

/// `#[state(default)]`, `#[state(skip_mlx)]` and both together.
#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
#[primitive(name = "TestWithDefaults")]
struct WithDefaults {
    #[state]
    axis: i32,
    #[state(default)]
    keepdims: bool,
    #[state(skip_mlx)]
    note: String,
    #[state(default, skip_mlx)]
    extra: Vec<i32>,
    scratch: Option<u64>,
}

/// No state at all; the registry name is the struct's name.
#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
struct TestStateless;

/// Same (empty) state as `TestStateless`, different primitive.
#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
struct TestStatelessOther {}

/// Identity shape rule and no kernel: these tests never evaluate.
macro_rules! no_kernel {
    ($($t:ty),*) => {$(
        impl Primitive for $t {
            fn output_specs(&self, inputs: &[Spec]) -> Result<Vec<Spec>> {
                Ok(inputs.to_vec())
            }
            fn eval(&self, _: &[Array], _: &[Spec]) -> Result<Vec<Data>> {
                Err(Error::Unsupported {
                    primitive: self.name().to_string(),
                    msg: "test primitive has no kernel".into(),
                })
            }
        }
    )*};
}
no_kernel!(KitchenSink, WithDefaults, TestStateless, TestStatelessOther);

fn sink() -> KitchenSink {
    KitchenSink {
        flag: true,
        small: -7,
        big: -(1 << 40),
        seed: u64::MAX - 5,
        alpha: 0.25,
        beta: -1.5e300,
        dtype: Dtype::Bfloat16,
        label: "héllo".into(),
        axes: vec![0, -1, 2],
        nested: vec![vec![], vec![1], vec![2, 3]],
        bound: Some(4.5),
        pair: (9, false),
        triple: (-0.0, Dtype::Int64, "t".into()),
        flavor: Flavor::Fancy,
        r#type: 42,
        cache: vec![1.0, 2.0],
    }
}

fn with_defaults() -> WithDefaults {
    WithDefaults {
        axis: -2,
        keepdims: true,
        note: "kept in native files only".into(),
        extra: vec![5, 6],
        scratch: Some(3),
    }
}

/// The concrete struct behind a decoded primitive.
fn downcast<T: 'static + Clone>(p: &dyn Primitive) -> T {
    p.as_any()
        .downcast_ref::<T>()
        .expect("decoded primitive has the registered type")
        .clone()
}

fn cbor_round_trip(p: &dyn Primitive) -> Result<Box<dyn Primitive>> {
    (lookup(p.name())?.decode_cbor)(&p.encode_cbor())
}

fn mlx_bytes(p: &dyn Primitive) -> Vec<u8> {
    let mut w = MlxWriter::new();
    p.write_mlx(&mut w);
    w.bytes
}

/// Decodes MLX state and checks every byte was consumed.
fn mlx_decode(name: &str, bytes: &[u8]) -> Result<Box<dyn Primitive>> {
    let mut r = MlxReader::new(bytes, "test");
    let p = (lookup(name)?.decode_mlx)(&mut r)?;
    assert_eq!(r.remaining(), 0, "{name} left bytes unread");
    Ok(p)
}

fn text(s: &str) -> CborValue {
    CborValue::Text(s.into())
}

#[test]
fn state_names_follow_declaration_order() {
    let names = [
        "flag", "small", "big", "seed", "alpha", "beta", "dtype", "label", "axes", "nested",
        "bound", "pair", "triple", "flavor", "type",
    ];
    assert_eq!(sink().state_names(), names);
    assert_eq!(sink().name(), "TestKitchenSink");
    assert_eq!(
        with_defaults().state_names(),
        ["axis", "keepdims", "note", "extra"]
    );
    assert!(TestStateless.state_names().is_empty());
    assert_eq!(TestStateless.name(), "TestStateless");
}

#[test]
fn state_values_are_typed() {
    let s = sink().state();
    let expected = vec![
        StateValue::Bool(true),
        StateValue::Int(-7),
        StateValue::Int(-(1 << 40)),
        StateValue::Int((u64::MAX - 5) as i64),
        StateValue::Float(0.25),
        StateValue::Float(-1.5e300),
        StateValue::Dtype(Dtype::Bfloat16),
        StateValue::Str("héllo".into()),
        StateValue::Ints(vec![0, -1, 2]),
        StateValue::List(vec![
            StateValue::Ints(vec![]),
            StateValue::Ints(vec![1]),
            StateValue::Ints(vec![2, 3]),
        ]),
        StateValue::Optional(Some(Box::new(StateValue::Float(4.5)))),
        StateValue::List(vec![StateValue::Int(9), StateValue::Bool(false)]),
        StateValue::List(vec![
            StateValue::Float(-0.0),
            StateValue::Dtype(Dtype::Int64),
            StateValue::Str("t".into()),
        ]),
        StateValue::Enum {
            name: "Fancy",
            value: 3,
        },
        StateValue::Int(42),
    ];
    assert_eq!(s, expected);
    assert_eq!(s.len(), sink().state_names().len());
    assert!(TestStateless.state().is_empty());
    // Display is what DOT labels and callbacks show.
    assert_eq!(s[8].to_string(), "[0, -1, 2]");
    assert_eq!(s[10].to_string(), "4.5");
    assert_eq!(s[13].to_string(), "Fancy");
}

#[test]
fn empty_int_list_is_ints() {
    let mut p = sink();
    p.axes.clear();
    assert_eq!(p.state()[8], StateValue::Ints(vec![]));
}

#[test]
fn cbor_is_a_map_keyed_by_field_name() {
    let CborValue::Map(entries) = sink().encode_cbor() else {
        panic!("state must encode as a map");
    };
    let keys: Vec<_> = entries.iter().map(|(k, _)| k.as_text().unwrap()).collect();
    assert_eq!(keys, sink().state_names());
    let get = |k: &str| {
        &entries
            .iter()
            .find(|(key, _)| key.as_text() == Some(k))
            .unwrap()
            .1
    };
    assert_eq!(get("dtype"), &text("bfloat16"));
    assert_eq!(get("flavor"), &text("Fancy"));
    assert_eq!(get("bound"), &CborValue::Float(4.5));
    // The cache is not written.
    assert!(!keys.contains(&"cache"));
}

#[test]
fn cbor_round_trip_through_the_registry() {
    let p = sink();
    let back: KitchenSink = downcast(&*cbor_round_trip(&p).unwrap());
    assert_eq!(back, KitchenSink { cache: vec![], ..p });

    let q = with_defaults();
    let back: WithDefaults = downcast(&*cbor_round_trip(&q).unwrap());
    assert_eq!(back, WithDefaults { scratch: None, ..q });

    let back = cbor_round_trip(&TestStateless).unwrap();
    assert_eq!(back.name(), "TestStateless");
}

#[test]
fn mlx_bytes_follow_the_wire_rules() {
    let mut want = Vec::new();
    want.push(1u8); // flag
    want.extend((-7i32).to_le_bytes());
    want.extend((-(1i64 << 40)).to_le_bytes());
    want.extend((u64::MAX - 5).to_le_bytes());
    want.extend(0.25f32.to_le_bytes());
    want.extend((-1.5e300f64).to_le_bytes());
    want.extend(12i32.to_le_bytes()); // bfloat16's Dtype::Val
    want.push(2); // its item size
    want.extend(6u64.to_le_bytes()); // "héllo" is 6 bytes of UTF-8
    want.extend("héllo".as_bytes());
    want.extend(3u64.to_le_bytes());
    for a in [0i32, -1, 2] {
        want.extend(a.to_le_bytes());
    }
    want.extend(3u64.to_le_bytes());
    want.extend(0u64.to_le_bytes());
    want.extend(1u64.to_le_bytes());
    want.extend(1i32.to_le_bytes());
    want.extend(2u64.to_le_bytes());
    want.extend(2i32.to_le_bytes());
    want.extend(3i32.to_le_bytes());
    want.push(1); // optional: has a value
    want.extend(4.5f32.to_le_bytes());
    want.extend(9i32.to_le_bytes()); // pair, no header
    want.push(0);
    want.extend((-0.0f32).to_le_bytes()); // triple
    want.extend(8i32.to_le_bytes());
    want.push(8);
    want.extend(1u64.to_le_bytes());
    want.push(b't');
    want.extend(3i32.to_le_bytes()); // Flavor::Fancy
    want.extend(42i32.to_le_bytes());
    assert_eq!(mlx_bytes(&sink()), want);
    assert!(mlx_bytes(&TestStateless).is_empty());
}

#[test]
fn mlx_round_trip_through_the_registry() {
    let p = sink();
    let back: KitchenSink = downcast(&*mlx_decode("TestKitchenSink", &mlx_bytes(&p)).unwrap());
    assert_eq!(back, KitchenSink { cache: vec![], ..p });
    let back = mlx_decode("TestStateless", &[]).unwrap();
    assert_eq!(back.name(), "TestStateless");
}

#[test]
fn state_default_fills_missing_cbor_fields() {
    let map = CborValue::Map(vec![
        (text("axis"), CborValue::Integer(3.into())),
        (text("note"), text("n")),
    ]);
    let p: WithDefaults =
        downcast(&*(lookup("TestWithDefaults").unwrap().decode_cbor)(&map).unwrap());
    assert_eq!(
        p,
        WithDefaults {
            axis: 3,
            keepdims: false,
            note: "n".into(),
            extra: vec![],
            scratch: None
        }
    );
}

#[test]
fn cbor_errors_name_the_field() {
    let decode = lookup("TestWithDefaults").unwrap().decode_cbor;
    // A required field is missing.
    let err = decode(&CborValue::Map(vec![(text("note"), text("n"))])).unwrap_err();
    assert!(matches!(err, Error::BadState { .. }), "{err}");
    assert!(err.to_string().contains("missing field `axis`"), "{err}");
    // A present `default` field still has to decode.
    let bad = CborValue::Map(vec![
        (text("axis"), CborValue::Integer(3.into())),
        (text("note"), text("n")),
        (text("keepdims"), text("yes")),
    ]);
    let err = decode(&bad).unwrap_err();
    assert!(err.to_string().contains("field `keepdims`"), "{err}");
    assert!(err.to_string().contains("expected a bool"), "{err}");
    // Out of range for the field's type.
    let bad = CborValue::Map(vec![
        (text("axis"), CborValue::Integer((1i64 << 40).into())),
        (text("note"), text("n")),
    ]);
    let err = decode(&bad).unwrap_err();
    assert!(err.to_string().contains("out of range for i32"), "{err}");
    // Not a map at all.
    let err = decode(&CborValue::Array(vec![])).unwrap_err();
    assert!(err.to_string().contains("TestWithDefaults"), "{err}");
    assert!(err.to_string().contains("must be a map"), "{err}");
    // Unknown enum name and dtype name.
    let mut map = match sink().encode_cbor() {
        CborValue::Map(m) => m,
        _ => unreachable!(),
    };
    for (k, v) in &mut map {
        if k.as_text() == Some("flavor") {
            *v = text("Spicy");
        }
    }
    let err = (lookup("TestKitchenSink").unwrap().decode_cbor)(&CborValue::Map(map)).unwrap_err();
    assert!(err.to_string().contains("unknown Flavor `Spicy`"), "{err}");
}

#[test]
fn unknown_cbor_keys_are_ignored() {
    // A newer writer may add fields; older readers skip them.
    let mut map = match with_defaults().encode_cbor() {
        CborValue::Map(m) => m,
        _ => unreachable!(),
    };
    map.push((text("added_later"), CborValue::Bool(true)));
    let p: WithDefaults = downcast(
        &*(lookup("TestWithDefaults").unwrap().decode_cbor)(&CborValue::Map(map)).unwrap(),
    );
    assert_eq!(p.note, "kept in native files only");
}

#[test]
fn skip_mlx_fields_are_not_on_the_wire() {
    let q = with_defaults();
    let mut want = Vec::new();
    want.extend((-2i32).to_le_bytes());
    want.push(1);
    assert_eq!(mlx_bytes(&q), want);
    let back: WithDefaults = downcast(&*mlx_decode("TestWithDefaults", &want).unwrap());
    assert_eq!(
        back,
        WithDefaults {
            axis: -2,
            keepdims: true,
            note: String::new(),
            extra: vec![],
            scratch: None
        }
    );
    // Still part of the state and of the native encoding.
    assert_eq!(
        q.state()[2],
        StateValue::Str("kept in native files only".into())
    );
}

#[test]
fn aliases_resolve_to_the_entry() {
    let entry = lookup("TestKitchenSink").unwrap();
    assert_eq!(entry.aliases, ["TestKitchenSinkOld", "TestSink"]);
    for alias in ["TestKitchenSinkOld", "TestSink"] {
        let e = lookup(alias).unwrap();
        assert!(std::ptr::eq(e, entry), "{alias} resolves to another entry");
        let p = (e.decode_cbor)(&sink().encode_cbor()).unwrap();
        assert_eq!(p.name(), "TestKitchenSink");
    }
    assert!(mlx::primitive::registry_problems().is_empty());
}

#[test]
fn equivalence_is_name_and_state() {
    let a = sink();
    let b = KitchenSink {
        cache: vec![9.0],
        ..sink()
    };
    assert!(a.is_equivalent(&b), "caches do not count");
    let c = KitchenSink { small: 8, ..sink() };
    assert!(!a.is_equivalent(&c));
    let d = KitchenSink {
        nested: vec![vec![], vec![1], vec![2, 4]],
        ..sink()
    };
    assert!(!a.is_equivalent(&d));
    let e = KitchenSink {
        r#type: 0,
        ..sink()
    };
    assert!(!a.is_equivalent(&e));
    assert!(TestStateless.is_equivalent(&TestStateless));
    assert!(!TestStateless.is_equivalent(&TestStatelessOther {}));
    // A boxed clone is equivalent and downcasts back.
    let boxed: Box<dyn Primitive> = a.clone_boxed();
    assert!(boxed.is_equivalent(&a));
    assert_eq!(downcast::<KitchenSink>(&*boxed), a);
}

#[test]
fn mlx_decode_rejects_bad_enum_code() {
    let mut bytes = mlx_bytes(&sink());
    let n = bytes.len();
    // Flavor is the 4 bytes before `type`.
    bytes[n - 8..n - 4].copy_from_slice(&1i32.to_le_bytes());
    let err = mlx_decode("TestKitchenSink", &bytes).unwrap_err();
    assert!(err.to_string().contains("unknown Flavor code 1"), "{err}");
}

fn any_dtype() -> impl Strategy<Value = Dtype> {
    (0i32..14).prop_map(|v| Dtype::from_mlx_val(v).unwrap())
}

fn finite_f32() -> impl Strategy<Value = f32> {
    prop::num::f32::NORMAL | prop::num::f32::ZERO | prop::num::f32::SUBNORMAL
}

prop_compose! {
    fn any_sink()(
        flag: bool, small: i32, big: i64, seed: u64,
        alpha in finite_f32(), beta in prop::num::f64::NORMAL,
        dtype in any_dtype(), label in ".{0,12}",
        axes in prop::collection::vec(any::<i32>(), 0..6),
        nested in prop::collection::vec(prop::collection::vec(any::<i32>(), 0..4), 0..4),
        bound in prop::option::of(finite_f32()),
        pair: (i32, bool),
        triple in (finite_f32(), any_dtype(), ".{0,4}"),
        fancy: bool, ty: i32,
    ) -> KitchenSink {
        let flavor = if fancy { Flavor::Fancy } else { Flavor::Plain };
        KitchenSink {
            flag, small, big, seed, alpha, beta, dtype, label, axes, nested, bound, pair,
            triple, flavor, r#type: ty, cache: vec![],
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn both_codecs_round_trip(p in any_sink()) {
        let back: KitchenSink = downcast(&*cbor_round_trip(&p).unwrap());
        prop_assert_eq!(&back, &p);
        let back: KitchenSink = downcast(&*mlx_decode("TestKitchenSink", &mlx_bytes(&p)).unwrap());
        prop_assert_eq!(&back, &p);
        prop_assert!(back.is_equivalent(&p));
    }
}

/// `crate = ".."` for a crate that reaches mlx under another name.
mod renamed {
    use mlx as engine;

    /// Generated code goes through `engine::__private`.
    #[derive(Debug, Clone, PartialEq, mlx::Primitive)]
    #[primitive(name = "TestRenamedCrate", crate = "engine")]
    pub struct Renamed {
        #[state]
        pub k: i32,
    }

    impl engine::Primitive for Renamed {
        fn output_specs(&self, inputs: &[engine::Spec]) -> engine::Result<Vec<engine::Spec>> {
            Ok(inputs.to_vec())
        }
        fn eval(
            &self,
            _: &[engine::Array],
            _: &[engine::Spec],
        ) -> engine::Result<Vec<engine::Data>> {
            Ok(Vec::new())
        }
    }
}

#[test]
fn crate_path_can_be_renamed() {
    let p = renamed::Renamed { k: 5 };
    let back = cbor_round_trip(&p).unwrap();
    assert!(back.is_equivalent(&p));
}

#[test]
fn primitive_defined_inside_a_function_registers() {
    #[derive(Debug, Clone, PartialEq, mlx::Primitive)]
    #[primitive(name = "TestLocalPrimitive")]
    struct Local {
        #[state]
        on: bool,
    }
    no_kernel!(Local);
    let back = cbor_round_trip(&Local { on: true }).unwrap();
    assert_eq!(downcast::<Local>(&*back), Local { on: true });
}
