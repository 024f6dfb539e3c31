//! Feeds arbitrary bytes to the importer (both formats: the first bytes pick
//! one) and calls whatever imports. Any outcome but a panic or a crash is
//! fine: an `Err` is the expected answer to nearly every input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mlx::{import_function_from_bytes, Array, ImportOptions};

fuzz_target!(|data: &[u8]| {
    // Outputs past 256 MiB are refused by the cap (a legitimate answer):
    // the default cap (16 GiB) is far above the fuzzer's 2 GiB RSS limit, so
    // without this a valid graph with a large output counts as a find. The
    // work cap keeps each call well inside the 10 s timeout of the
    // instrumented build, where kernels run ~100x slower than in release: a
    // mutated convolution of 2^25.8 operations (84 ms in release) took
    // 5.7-12.8 s there. Every kernel still runs on small shapes.
    let opts = ImportOptions {
        max_intermediate_bytes: 256 << 20,
        max_work: 1 << 24,
        ..Default::default()
    };
    let Ok(f) = import_function_from_bytes(data.to_vec(), "fuzz-input", &opts) else {
        return;
    };
    // Call the first signature with zeros of its own shapes, small ones only
    // (a valid header may describe huge inputs).
    let Some(sig) = f.signatures().first() else {
        return;
    };
    let zeros = |spec: &mlx::Spec| -> Option<Array> {
        (spec.size() <= 1 << 16)
            .then(|| mlx::ops::zeros(&spec.shape, spec.dtype).ok())
            .flatten()
    };
    let Some(args) = sig.positional.iter().map(zeros).collect::<Option<Vec<_>>>() else {
        return;
    };
    let mut kwargs = mlx::Kwargs::new();
    for (name, spec) in &sig.keyword {
        let Some(a) = zeros(spec) else { return };
        kwargs.insert(name.clone(), a);
    }
    if let Ok(out) = f.call_kwargs(&args, &kwargs) {
        for o in out {
            // Evaluation of a replayed graph may fail; it must not crash.
            let _ = o.eval();
        }
    }
});
