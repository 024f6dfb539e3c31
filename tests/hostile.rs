//! Hand-made hostile native files, one per failure class found by trying
//! a few hundred of them through `mlxfn` (issue 21): each must give an
//! `Err` from import or from the call and its evaluation, never a panic,
//! an abort, a hang or a wrong answer.

mod forge;
// The counting global allocator of the export tests, for this binary too.
#[path = "export/alloc_counter.rs"]
mod alloc_counter;

use ciborium::Value;
use forge::*;
use mlx::{import_function_from_bytes, Array, ImportOptions};

/// Imports `bytes`, calls the first function on `args` and evaluates the
/// outputs; the error's text (the test fails if everything succeeds).
fn run_err_with(bytes: &[u8], args: &[Array], opts: &ImportOptions) -> String {
    let r = import_function_from_bytes(bytes.to_vec(), "hostile", opts).and_then(|f| {
        let outs = f.call(args)?;
        mlx::eval(&outs)?;
        Ok(outs)
    });
    match r {
        Ok(outs) => panic!(
            "a hostile file imported and ran: {:?}",
            outs.iter().map(|o| o.shape().to_vec()).collect::<Vec<_>>()
        ),
        Err(e) => e.to_string(),
    }
}

fn run_err(bytes: &[u8], args: &[Array]) -> String {
    run_err_with(bytes, args, &ImportOptions::default())
}

fn assert_has(e: &str, parts: &[&str]) {
    for p in parts {
        assert!(e.contains(p), "error {e:?} lacks {p:?}");
    }
}

fn f32s(n: usize) -> Array {
    Array::from_slice(&vec![1.0f32; n], &[n as i32]).unwrap()
}

#[test]
fn positional_plus_keyword_count_that_wraps_is_refused() {
    // usize::MAX positional inputs and one keyword: the sum wraps to 0,
    // which matched the zero input specs before the sum was checked.
    let h = header(
        vec![function(u64::MAX as i128, &["k"], vec![], vec![], vec![])],
        vec![],
    );
    let e = run_err(&file(&h, &[]), &[]);
    assert_has(&e, &["function 0", "positional", "keyword"]);
}

/// `AsStrided` of `x: float32 [4]` with this offset, one element out.
fn as_strided_file(offset: u64) -> Vec<u8> {
    let state = map(&[
        ("shape", ints(&[1])),
        ("strides", ints(&[1])),
        ("offset", int(offset as i128)),
    ]);
    one_function(
        vec![spec(&[4], "float32")],
        vec![entry(
            "AsStrided",
            state,
            vec![input(0)],
            vec![spec(&[1], "float32")],
        )],
        vec![entry_ref(0, 0)],
        vec![],
        &[],
    )
}

#[test]
fn as_strided_offsets_near_two_to_the_63_and_64_are_refused() {
    for offset in [
        1u64 << 63,
        (1u64 << 63) - 1,
        (1u64 << 63) + 1,
        u64::MAX,
        u64::MAX - 1,
        4,
    ] {
        let e = run_err(&as_strided_file(offset), &[f32s(4)]);
        assert_has(&e, &["AsStrided"]);
    }
    // The largest valid offset still reads the right element.
    let f =
        import_function_from_bytes(as_strided_file(3), "ok", &ImportOptions::default()).unwrap();
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    assert_eq!(f.call(&[x]).unwrap()[0].to_vec::<f32>().unwrap(), [4.0]);
}

#[test]
fn as_strided_strides_that_wrap_the_extent_are_refused() {
    // (2 - 1) * i64::MAX plus an offset wraps an i64 extent to a small number.
    let state = map(&[
        ("shape", ints(&[2, 2])),
        ("strides", ints(&[i64::MAX as i128, i64::MAX as i128])),
        ("offset", int(2)),
    ]);
    let bytes = one_function(
        vec![spec(&[4], "float32")],
        vec![entry(
            "AsStrided",
            state,
            vec![input(0)],
            vec![spec(&[2, 2], "float32")],
        )],
        vec![entry_ref(0, 0)],
        vec![],
        &[],
    );
    assert_has(&run_err(&bytes, &[f32s(4)]), &["AsStrided"]);
}

/// One entry with no inputs but `key` (uint32 [2]) drawing random bits of `shape`.
fn random_bits_file(shape: &[i128], width: i128, dtype: &str) -> Vec<u8> {
    let state = map(&[("shape", ints(shape)), ("width", int(width))]);
    one_function(
        vec![spec(&[2], "uint32")],
        vec![entry(
            "RandomBits",
            state,
            vec![input(0)],
            vec![spec(shape, dtype)],
        )],
        vec![entry_ref(0, 0)],
        vec![],
        &[],
    )
}

fn key() -> Array {
    Array::from_slice(&[0u32, 7], &[2]).unwrap()
}

#[test]
fn outputs_whose_byte_size_overflows_are_errors() {
    // 2^62 elements of 4 bytes: the element count fits usize, the bytes do not.
    let bytes = random_bits_file(&[(1 << 31) - 1, (1 << 31) - 1], 4, "uint32");
    let e = run_err(&bytes, &[key()]);
    assert_has(&e, &["bytes"]);
}

#[test]
fn huge_consistent_outputs_are_refused_before_allocation() {
    // 8 GiB to 8 TiB of random bits: consistent shapes, absurd sizes.
    // 32 GiB, 8 TiB and 8 TiB less a little of random bits.
    for shape in [
        [1i128 << 23, 1 << 10],
        [1 << 30, 1 << 11],
        [(1 << 31) - 1, 1 << 10],
    ] {
        let bytes = random_bits_file(&shape, 4, "uint32");
        let e = run_err(&bytes, &[key()]);
        assert_has(&e, &["max_intermediate_bytes"]);
    }
}

/// `Broadcast` of `x: float32 [1]` to `shape`.
fn broadcast_file(shape: &[i128]) -> Vec<u8> {
    one_function(
        vec![spec(&[1], "float32")],
        vec![entry(
            "Broadcast",
            map(&[("shape", ints(shape))]),
            vec![input(0)],
            vec![spec(shape, "float32")],
        )],
        vec![entry_ref(0, 0)],
        vec![],
        &[],
    )
}

/// `Arange(0, n)` in float32.
fn arange_file(n: f64) -> Vec<u8> {
    let state = map(&[
        ("start", Value::Float(0.0)),
        ("stop", Value::Float(n)),
        ("step", Value::Float(1.0)),
        ("dtype", text("float32")),
    ]);
    let len = n as i128;
    one_function(
        vec![],
        vec![entry(
            "Arange",
            state,
            vec![],
            vec![spec(&[len], "float32")],
        )],
        vec![entry_ref(0, 0)],
        vec![],
        &[],
    )
}

/// `Pad` of `x: float32 [1]` with pad value `v: float32 []` to `1 + hi` elements.
fn pad_file(hi: i128) -> Vec<u8> {
    let state = map(&[
        ("axes", ints(&[0])),
        ("low_pad_size", ints(&[0])),
        ("high_pad_size", ints(&[hi])),
    ]);
    one_function(
        vec![spec(&[1], "float32"), spec(&[], "float32")],
        vec![entry(
            "Pad",
            state,
            vec![input(0), input(1)],
            vec![spec(&[1 + hi], "float32")],
        )],
        vec![entry_ref(0, 0)],
        vec![],
        &[],
    )
}

#[test]
fn huge_broadcasts_are_refused_before_allocation() {
    // A broadcast is a view, but whoever reads the call's result
    // materialises it: 2^40 floats pass the default cap.
    let e = run_err(
        &broadcast_file(&[1 << 20, 1 << 20]),
        &[Array::from_slice(&[1.0f32], &[1]).unwrap()],
    );
    assert_has(&e, &["max_intermediate_bytes", "Broadcast"]);
}

/// The 8 GiB files: an arange, a pad and random bits of 2^31 - 648 floats.
fn eight_gib_files() -> Vec<(&'static str, Vec<u8>, Vec<Array>)> {
    let n = 2147483000i128;
    let one = || Array::from_slice(&[1.0f32], &[1]).unwrap();
    vec![
        ("Arange", arange_file(n as f64), vec![]),
        ("Pad", pad_file(n - 1), vec![one(), Array::scalar(0.0f32)]),
        (
            "RandomBits",
            random_bits_file(&[n], 4, "uint32"),
            vec![key()],
        ),
    ]
}

#[test]
fn eight_gib_outputs_are_refused_under_a_lower_cap() {
    let opts = ImportOptions {
        max_intermediate_bytes: 1 << 30,
        ..Default::default()
    };
    for (name, bytes, args) in eight_gib_files() {
        let e = run_err_with(&bytes, &args, &opts);
        assert_has(&e, &["max_intermediate_bytes", name, "8589932000"]);
    }
}

/// Set in the child process that runs under an address-space limit.
const CHILD: &str = "MLX_HOSTILE_ADDRESS_LIMITED";

#[test]
fn eight_gib_outputs_under_a_4_gib_address_limit_are_errors_not_aborts() {
    if std::env::var_os(CHILD).is_some() {
        // Under the limit: the default caps let 8 GiB through, the
        // allocator cannot give it, and that must be an error.
        for (name, bytes, args) in eight_gib_files() {
            let e = run_err(&bytes, &args);
            // (8589932000 bytes, or that rounded up to whole 64-byte blocks)
            assert_has(&e, &["out of memory", name, "85899320"]);
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" --exact \"$1\" --nocapture --test-threads 1")
        .arg(exe)
        .arg("eight_gib_outputs_under_a_4_gib_address_limit_are_errors_not_aborts")
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the child failed ({}):\n{text}",
        out.status
    );
    assert!(text.contains("1 passed"), "{text}");
}

#[test]
fn a_lower_cap_names_itself_and_a_real_size_passes() {
    let bytes = random_bits_file(&[1 << 10, 1 << 10], 4, "uint32");
    let opts = ImportOptions {
        max_intermediate_bytes: 1 << 20,
        ..Default::default()
    };
    // 4 MiB of bits against a 1 MiB cap.
    let e = run_err_with(&bytes, &[key()], &opts);
    assert_has(&e, &["max_intermediate_bytes", "1048576", "4194304"]);
    // The defaults let it run.
    let f = import_function_from_bytes(bytes, "ok", &ImportOptions::default()).unwrap();
    let out = f.call(&[key()]).unwrap();
    assert_eq!(out[0].shape(), [1 << 10, 1 << 10]);
    out[0].eval().unwrap();
}

/// `Add(x, x) -> int32` recorded for float32 inputs: the wrong dtype is
/// on an intermediate that fusion at import would absorb.
fn wrong_intermediate_dtype_file() -> Vec<u8> {
    one_function(
        vec![spec(&[4], "float32")],
        vec![
            entry(
                "Add",
                map(&[]),
                vec![input(0), input(0)],
                vec![spec(&[4], "int32")],
            ),
            entry(
                "Multiply",
                map(&[]),
                vec![entry_ref(0, 0), input(0)],
                vec![spec(&[4], "float32")],
            ),
        ],
        vec![entry_ref(1, 0)],
        vec![],
        &[],
    )
}

#[test]
fn fusion_at_import_keeps_the_checks_of_every_entry() {
    let e = run_err(&wrong_intermediate_dtype_file(), &[f32s(4)]);
    assert_has(&e, &["entry 0", "Add", "int32"]);
}

/// A chain of `n` additions `x = x + x` over `len` floats.
fn addition_chain(n: usize, len: i128) -> Vec<u8> {
    let mut entries = Vec::with_capacity(n);
    for k in 0..n as i128 {
        let x = if k == 0 {
            input(0)
        } else {
            entry_ref(k - 1, 0)
        };
        entries.push(entry(
            "Add",
            map(&[]),
            vec![x.clone(), x],
            vec![spec(&[len], "float32")],
        ));
    }
    one_function(
        vec![spec(&[len], "float32")],
        entries,
        vec![entry_ref(n as i128 - 1, 0)],
        vec![],
        &[],
    )
}

#[test]
fn work_beyond_the_cap_is_refused_before_running() {
    // 2^12 additions of 2^28 elements: 2^40 additions, small buffers.
    let bytes = addition_chain(1 << 12, 1 << 28);
    let opts = ImportOptions {
        max_work: 1 << 36,
        ..Default::default()
    };
    let e = match import_function_from_bytes(bytes, "hostile", &opts) {
        Err(e) => e.to_string(),
        Ok(f) => {
            // The call is refused before any input is even needed at full size:
            // give a placeholder-sized input of the right spec.
            let x = mlx::ops::zeros(&[1 << 28], mlx::Dtype::Float32).unwrap();
            match f.call(&[x]) {
                Ok(_) => panic!("2^40 additions accepted under a 2^36 cap"),
                Err(e) => e.to_string(),
            }
        }
    };
    assert_has(&e, &["max_work"]);
}

/// One entry `primitive(state)` over the function's inputs, recording `out`.
fn single_entry(primitive: &str, state: Value, inputs: Vec<Value>, out: Value) -> Vec<u8> {
    let refs = (0..inputs.len() as i128).map(input).collect();
    one_function(
        inputs,
        vec![entry(primitive, state, refs, vec![out])],
        vec![entry_ref(0, 0)],
        vec![],
        &[],
    )
}

#[test]
fn states_that_decode_to_absurd_parameters_are_refused() {
    let x4 = || spec(&[4], "float32");
    // A reshape of 4 elements to 2^40.
    let e = run_err(
        &single_entry(
            "Reshape",
            map(&[("shape", ints(&[1 << 20, 1 << 20]))]),
            vec![x4()],
            spec(&[1 << 20, 1 << 20], "float32"),
        ),
        &[f32s(4)],
    );
    assert_has(&e, &["Reshape", "1048576"]);
    // A convolution with stride 0.
    let conv = |stride: i128| {
        map(&[
            ("kernel_strides", ints(&[stride])),
            ("padding_lo", ints(&[0])),
            ("padding_hi", ints(&[0])),
            ("kernel_dilation", ints(&[1])),
            ("input_dilation", ints(&[1])),
            ("groups", int(1)),
            ("flip", Value::Bool(false)),
        ])
    };
    let x = Array::from_slice(&[1.0f32; 8], &[1, 8, 1]).unwrap();
    let w = Array::from_slice(&[1.0f32; 3], &[1, 3, 1]).unwrap();
    for stride in [0, -1] {
        let e = run_err(
            &single_entry(
                "Convolution",
                conv(stride),
                vec![spec(&[1, 8, 1], "float32"), spec(&[1, 3, 1], "float32")],
                spec(&[1, 6, 1], "float32"),
            ),
            &[x.clone(), w.clone()],
        );
        assert_has(&e, &["Convolution"]);
    }
    // Quantization with 0 and 9 bits.
    for bits in [0, 9, -4, i32::MAX as i128] {
        let state = map(&[
            ("group_size", int(64)),
            ("bits", int(bits)),
            ("mode", text("Affine")),
            ("dequantize", Value::Bool(false)),
        ]);
        let e = run_err(
            &single_entry(
                "Quantize",
                state,
                vec![spec(&[2, 64], "float32")],
                spec(&[2, 8], "uint32"),
            ),
            &[Array::from_slice(&[0.5f32; 128], &[2, 64]).unwrap()],
        );
        assert_has(&e, &["bits", &bits.to_string()]);
    }
}

/// Found by the `import` fuzz target: a Quantize of a declared
/// `[1, 2^30]` input computed its packed width as `k * bits` in i32, which
/// overflowed (a panic with overflow checks, a wrong shape without).
#[test]
fn quantize_of_a_huge_declared_width_does_not_overflow() {
    let state = map(&[
        ("group_size", int(64)),
        ("bits", int(8)),
        ("mode", text("Affine")),
        ("dequantize", Value::Bool(false)),
    ]);
    let bytes = single_entry(
        "Quantize",
        state,
        vec![spec(&[1, 1 << 30], "float32")],
        spec(&[1, 1 << 28], "uint32"),
    );
    // Import checks the recorded specs (where it overflowed); the call
    // without the 4 GiB input is then refused.
    let e = run_err(&bytes, &[]);
    assert_has(&e, &["no exported signature matches"]);
}

#[test]
fn gather_with_out_of_range_indices_is_an_error() {
    // x[i] for x: float32 [4] and indices read from the call's input.
    let state = map(&[("axes", ints(&[0])), ("slice_sizes", ints(&[1]))]);
    let bytes = single_entry(
        "Gather",
        state,
        vec![spec(&[4], "float32"), spec(&[2], "int32")],
        spec(&[2, 1], "float32"),
    );
    let f = import_function_from_bytes(bytes.clone(), "gather", &ImportOptions::default()).unwrap();
    let x = Array::from_slice(&[10.0f32, 11.0, 12.0, 13.0], &[4]).unwrap();
    // In range (and -1 from the end): the right elements.
    let i = Array::from_slice(&[2i32, -1], &[2]).unwrap();
    let out = f.call(&[x.clone(), i]).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), [12.0, 13.0]);
    for bad in [4, -5, i32::MAX, i32::MIN] {
        let i = Array::from_slice(&[0i32, bad], &[2]).unwrap();
        let e = run_err(&bytes, &[x.clone(), i]);
        assert_has(&e, &["Gather", "out of bounds"]);
    }
}

/// A recorded output spec the inputs do not give: the trace is not
/// trusted to replay with its recorded specs, and the call says which
/// entry lies.
#[test]
fn recorded_outputs_the_inputs_do_not_give_are_refused_at_the_call() {
    for (shape, dtype) in [
        (&[5i128][..], "float32"),
        (&[4], "int32"),
        (&[2, 2], "float32"),
    ] {
        let e = run_err(
            &single_entry(
                "Abs",
                map(&[]),
                vec![spec(&[4], "float32")],
                spec(shape, dtype),
            ),
            &[f32s(4)],
        );
        assert_has(&e, &["entry 0 (Abs)", "records outputs", "float32 [4]"]);
    }
}

#[test]
fn negative_dimensions_anywhere_are_refused() {
    // In an input spec, an entry's recorded output and a state.
    let e = run_err(
        &single_entry(
            "Abs",
            map(&[]),
            vec![spec(&[-4], "float32")],
            spec(&[-4], "float32"),
        ),
        &[f32s(4)],
    );
    assert_has(&e, &["-4"]);
    let e = run_err(
        &single_entry(
            "Abs",
            map(&[]),
            vec![spec(&[4], "float32")],
            spec(&[-4], "float32"),
        ),
        &[f32s(4)],
    );
    assert_has(&e, &["-4"]);
    for shape in [[-1i128, -4], [-2, -2], [i32::MIN as i128, -1]] {
        let e = run_err(
            &single_entry(
                "Broadcast",
                map(&[("shape", ints(&shape))]),
                vec![spec(&[4], "float32")],
                spec(&[4], "float32"),
            ),
            &[f32s(4)],
        );
        assert_has(&e, &["Broadcast"]);
    }
}

#[test]
fn zero_size_dimensions_run_to_empty_results() {
    // sum over axis 0 of an empty [0, 3] input (Reduce keeps the axis):
    // three zeros; an empty
    // product [2, 0] @ [0, 3]: a [2, 3] of zeros.
    let sum = single_entry(
        "Reduce",
        map(&[("reduce_type", text("Sum")), ("axes", ints(&[0]))]),
        vec![spec(&[0, 3], "float32")],
        spec(&[1, 3], "float32"),
    );
    let f = import_function_from_bytes(sum, "sum", &ImportOptions::default()).unwrap();
    let empty = Array::from_slice::<f32>(&[], &[0, 3]).unwrap();
    assert_eq!(
        f.call(&[empty]).unwrap()[0].to_vec::<f32>().unwrap(),
        [0.0; 3]
    );
    let mm = single_entry(
        "Matmul",
        map(&[]),
        vec![spec(&[2, 0], "float32"), spec(&[0, 3], "float32")],
        spec(&[2, 3], "float32"),
    );
    let f = import_function_from_bytes(mm, "mm", &ImportOptions::default()).unwrap();
    let a = Array::from_slice::<f32>(&[], &[2, 0]).unwrap();
    let b = Array::from_slice::<f32>(&[], &[0, 3]).unwrap();
    assert_eq!(
        f.call(&[a, b]).unwrap()[0].to_vec::<f32>().unwrap(),
        [0.0; 6]
    );
}

#[test]
fn thousands_of_dimensions_run_or_are_refused_without_crashing() {
    // x + x and a sum over every axis of a [1; 4000]-shaped input holding
    // one 3.0: 6.0 and 3.0, or an error; never a stack overflow.
    let nd = 4000;
    let ones: Vec<i128> = vec![1; nd];
    let axes: Vec<i128> = (0..nd as i128).collect();
    let bytes = one_function(
        vec![spec(&ones, "float32")],
        vec![
            entry(
                "Add",
                map(&[]),
                vec![input(0), input(0)],
                vec![spec(&ones, "float32")],
            ),
            entry(
                "Reduce",
                map(&[("reduce_type", text("Sum")), ("axes", ints(&axes))]),
                vec![input(0)],
                vec![spec(&[], "float32")],
            ),
        ],
        vec![entry_ref(0, 0), entry_ref(1, 0)],
        vec![],
        &[],
    );
    let shape = vec![1i32; nd];
    let x = Array::from_slice(&[3.0f32], &shape).unwrap();
    match import_function_from_bytes(bytes, "ndim", &ImportOptions::default())
        .and_then(|f| f.call(&[x]))
        .and_then(|o| Ok((o[0].to_vec::<f32>()?, o[1].item::<f32>()?)))
    {
        Ok((sum, total)) => assert_eq!((sum, total), (vec![6.0], 3.0)),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

#[test]
fn shapes_past_i32_are_refused() {
    // Flatten of a [65536, 65536] broadcast: 2^32 elements in one i32 axis.
    let bytes = one_function(
        vec![spec(&[1], "float32")],
        vec![
            entry(
                "Broadcast",
                map(&[("shape", ints(&[65536, 65536]))]),
                vec![input(0)],
                vec![spec(&[65536, 65536], "float32")],
            ),
            entry(
                "Flatten",
                map(&[("start_axis", int(0)), ("end_axis", int(1))]),
                vec![entry_ref(0, 0)],
                vec![spec(&[0], "float32")],
            ),
        ],
        vec![entry_ref(1, 0)],
        vec![],
        &[],
    );
    let e = run_err(&bytes, &[Array::from_slice(&[1.0f32], &[1]).unwrap()]);
    assert_has(&e, &["Flatten"]);
}

/// A file whose constant 0 is recorded as `(dtype, shape, offset, length)`
/// over `data`, used by `x + c`.
fn constant_file(dtype: &str, shape: &[i128], offset: i128, length: i128, data: &[u8]) -> Vec<u8> {
    one_function(
        vec![spec(shape, dtype)],
        vec![entry(
            "Add",
            map(&[]),
            vec![input(0), constant(0)],
            vec![spec(shape, dtype)],
        )],
        vec![entry_ref(0, 0)],
        vec![constant_record(dtype, shape, offset, length)],
        data,
    )
}

#[test]
fn length_fields_that_overflow_or_lie_are_refused() {
    let data = vec![0u8; 64];
    let m = i32::MAX as i128;
    for (shape, offset, length, want) in [
        // u64 length beyond any usize, and one that wraps a u64 end.
        (vec![16], 0, u64::MAX as i128, "needs"),
        (vec![16], (u64::MAX - 63) as i128, 64, "overflows"),
        // Element count x dtype size past u64, matching a wrapped length.
        (
            vec![m, m, m],
            0,
            ((m * m * m * 4) % (1 << 64)),
            "constant 0",
        ),
        // Past the end of the file.
        (vec![16], 64, 64, "truncated"),
        (vec![32], 0, 128, "truncated"),
    ] {
        let e = run_err(
            &constant_file("float32", &shape, offset, length, &data),
            &[],
        );
        assert_has(&e, &["constant 0", want]);
    }
}

#[test]
fn overlapping_constants_are_refused() {
    // Two constants recorded over the same bytes.
    let data = vec![0u8; 64];
    let bytes = one_function(
        vec![spec(&[16], "float32")],
        vec![entry(
            "Add",
            map(&[]),
            vec![constant(0), input(0)],
            vec![spec(&[16], "float32")],
        )],
        vec![entry_ref(0, 0)],
        vec![
            constant_record_summed("float32", &[16], 0, 64, checksum(&data)),
            constant_record_summed("float32", &[8], 0, 32, checksum(&data[..32])),
        ],
        &data,
    );
    let e = run_err(&bytes, &[f32s(16)]);
    assert_has(&e, &["constant 1", "overlaps"]);
}

// Data built outside the library: `Array::from_data` and a user primitive's
// kernel are safe code, but kernels index buffers through raw pointers
// (gemm) and read bool buffers as `bool`. Found reviewing the `// SAFETY:`
// reasons of the unsafe blocks (issue 21): nothing checked that the data fit.

use mlx::{Buffer, Data, Dtype, Spec};
use std::sync::Arc;

/// `Array::from_data`'s panic message (the test fails if it builds).
fn from_data_refusal(data: Data, spec: Spec) -> String {
    match std::panic::catch_unwind(|| Array::from_data(data, spec)) {
        Ok(a) => panic!("from_data accepted data that does not fit {:?}", a.shape()),
        Err(p) => p.downcast_ref::<String>().cloned().unwrap_or_default(),
    }
}

fn four_f32() -> Arc<Buffer> {
    Arc::new(Buffer::from_slice(&[1.0f32, 2.0, 3.0, 4.0]))
}

fn strided(strides: &[isize], offset: usize) -> Data {
    Data {
        buffer: four_f32(),
        strides: strides.to_vec(),
        offset,
    }
}

#[test]
fn data_that_does_not_fit_its_buffer_is_refused() {
    let f32_spec = |shape: &[i32]| Spec::new(shape, Dtype::Float32);
    // 8 elements over a buffer of 4: matmul's gemm would read past the end.
    let e = from_data_refusal(
        Data::contiguous(Buffer::from_slice(&[1.0f32; 4]), &[2, 4]),
        f32_spec(&[2, 4]),
    );
    assert_has(&e, &["reaches elements 0..=7", "buffer of 4 float32"]);
    // An offset past the end, a negative stride before the start, strides
    // for another rank, a scalar over an empty buffer.
    let e = from_data_refusal(strided(&[1], 3), f32_spec(&[2]));
    assert_has(&e, &["reaches elements 3..=4"]);
    let e = from_data_refusal(strided(&[-1], 0), f32_spec(&[2]));
    assert_has(&e, &["reaches elements -1..=0"]);
    let e = from_data_refusal(strided(&[1], 0), f32_spec(&[2, 2]));
    assert_has(&e, &["1 strides for the 2 axes"]);
    let e = from_data_refusal(
        Data::contiguous(Buffer::from_bytes(&[]), &[]),
        f32_spec(&[]),
    );
    assert_has(&e, &["buffer of 0 float32"]);
    // Strides near isize::MAX do not wrap into range.
    let e = from_data_refusal(strided(&[isize::MAX, 1], 0), f32_spec(&[3, 1]));
    assert_has(&e, &["reaches elements"]);
    // A bool buffer holding 2: reading it as `bool` is undefined behaviour.
    let e = from_data_refusal(
        Data::contiguous(Buffer::from_bytes(&[0, 1, 2]), &[3]),
        Spec::new([3], Dtype::Bool),
    );
    assert_has(&e, &["the byte 2"]);

    // What fits still builds: a broadcast (stride 0), a reversed view, an
    // empty array over an empty buffer.
    let b = Array::from_data(strided(&[0, 1], 0), f32_spec(&[3, 4]));
    assert_eq!(b.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0].repeat(3));
    let r = Array::from_data(strided(&[-1], 3), f32_spec(&[4]));
    assert_eq!(r.to_vec::<f32>().unwrap(), [4.0, 3.0, 2.0, 1.0]);
    let z = Array::from_data(
        Data::contiguous(Buffer::from_bytes(&[]), &[0, 5]),
        f32_spec(&[0, 5]),
    );
    assert_eq!(z.to_vec::<f32>().unwrap(), Vec::<f32>::new());
}

/// A user primitive whose (safe) kernel returns 64 × 64 elements over a
/// buffer of 4.
#[derive(Debug, Clone, PartialEq, mlx::Primitive)]
#[primitive(name = "TestHostileShortKernel")]
struct ShortKernel;

impl mlx::Primitive for ShortKernel {
    fn output_specs(&self, _: &[Spec]) -> mlx::Result<Vec<Spec>> {
        Ok(vec![Spec::new([64, 64], Dtype::Float32)])
    }

    fn eval(&self, _: &[Array], _: &[Spec]) -> mlx::Result<Vec<Data>> {
        Ok(vec![Data::contiguous(
            Buffer::from_slice(&[1.0f32; 4]),
            &[64, 64],
        )])
    }
}

#[test]
fn a_kernel_returning_data_past_its_buffer_is_an_error() {
    let short = Array::from_primitive(ShortKernel, vec![f32s(1)]).unwrap();
    // matmul hands the data to gemm as raw pointers: it must never see it.
    let product = mlx::ops::matmul(&short, &short).unwrap();
    let e = product.eval().unwrap_err().to_string();
    assert_has(
        &e,
        &[
            "TestHostileShortKernel",
            "does not fit its output",
            "buffer of 4",
        ],
    );
}

/// Refusals happen before the allocation they prevent: importing, calling
/// and evaluating each of these sub-kilobyte native files, which describe
/// megabytes to terabytes, allocates no block larger than 64 KiB on the
/// calling thread (the file's own copy included) before the `Err`.
#[test]
fn refusals_allocate_no_more_than_the_file_warrants() {
    let small = ImportOptions {
        max_intermediate_bytes: 1 << 20,
        ..Default::default()
    };
    let default = ImportOptions::default();
    let cases: Vec<(&str, Vec<u8>, Vec<Array>, &ImportOptions)> = vec![
        // A constant that claims 4 MiB of a 64-byte data section.
        (
            "constant past the end",
            constant_file("float32", &[1 << 20], 0, 4 << 20, &[0u8; 64]),
            vec![f32s(1 << 20)],
            &small,
        ),
        // Outputs of 64 MiB to 8 TiB, under a 1 MiB cap and the default one.
        (
            "broadcast",
            broadcast_file(&[1 << 24]),
            vec![f32s(1)],
            &small,
        ),
        (
            "random bits",
            random_bits_file(&[1 << 30, 1 << 11], 4, "uint32"),
            vec![key()],
            &default,
        ),
        ("arange", arange_file((1u64 << 22) as f64), vec![], &small),
        (
            "pad",
            pad_file(1 << 24),
            vec![f32s(1), Array::scalar(0f32)],
            &small,
        ),
    ];
    for (name, bytes, args, opts) in cases {
        assert!(
            bytes.len() < 1024,
            "{name}: the file is {} bytes",
            bytes.len()
        );
        let (e, largest) = alloc_counter::largest_allocation(|| run_err_with(&bytes, &args, opts));
        assert!(!e.is_empty(), "{name}");
        assert!(
            largest <= 64 << 10,
            "{name}: allocated {largest} bytes before refusing ({e})"
        );
    }
}

/// Found by `cargo fuzz run import` (an out-of-memory under the 2 GiB
/// limit): a shapeless 1-D convolution with a wide dilation, called on
/// small inputs, makes a 528 MB output (within the default caps), but its
/// im2col scratch (output positions x kernel taps x channels) came to
/// 1.19 GB and a table of taps per output position to 793 MB on top. The
/// scratch is now built a block of rows at a time (at most 64 MiB) and taps
/// are computed, so no block larger than the output is allocated.
#[test]
fn convolution_scratch_is_bounded_by_its_output() {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hostile/conv_im2col_scratch.mlxfn"
    ))
    .unwrap();
    let f = import_function_from_bytes(bytes, "fuzz find", &ImportOptions::default()).unwrap();
    let sig = f.signatures()[0].clone();
    let args: Vec<Array> = sig
        .positional
        .iter()
        .map(|s| mlx::ops::zeros(&s.shape, s.dtype).unwrap())
        .collect();
    let (outs, largest) = alloc_counter::largest_allocation(|| {
        let outs = f.call(&args).unwrap();
        mlx::eval(&outs).unwrap();
        outs
    });
    let shapes: Vec<Vec<i32>> = outs.iter().map(|o| o.shape().to_vec()).collect();
    assert_eq!(shapes, vec![vec![2, 5, 262, 4], vec![2, 16517383, 4]]);
    // (buffers are whole 64-byte blocks)
    let output_bytes = (2 * 16517383 * 4 * 4usize).next_multiple_of(64);
    assert!(
        largest <= output_bytes,
        "allocated a block of {largest} bytes for outputs of {output_bytes}"
    );
}
