//! `compile`: trace a function once per input signature, simplify and fuse
//! the tape, then replay it on every call with those shapes and dtypes.

use super::fuse::fuse;
use super::simplify::simplify;
use super::tape::Tape;
use super::tracing::{replay, trace, ConstantPool};
use crate::primitive::Spec;
use crate::trace_flag::is_tracing;
use crate::{Array, Dtype, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

struct Compiled {
    tape: Tape,
    constants: Vec<Array>,
}

/// Cache key: dtypes and shapes (or only ranks when shapeless).
type Key = Vec<(Dtype, Vec<i32>)>;

fn key_of(args: &[Array], shapeless: bool) -> Key {
    args.iter()
        .map(|a| {
            (
                a.dtype(),
                if shapeless {
                    vec![a.ndim() as i32]
                } else {
                    a.shape().to_vec()
                },
            )
        })
        .collect()
}

fn build<F>(f: &F, args: &[Array]) -> Result<Compiled>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let specs: Vec<Spec> = args.iter().map(|a| a.spec().clone()).collect();
    let mut pool = ConstantPool::default();
    let mut tape = trace(|a, _| f(a), &specs, &[], &mut pool)?;
    simplify(&mut tape, &pool.arrays);
    fuse(&mut tape, &pool.arrays);
    Ok(Compiled {
        tape,
        constants: pool.arrays,
    })
}

/// A function that traces `f` once per input signature (dtypes and
/// shapes), caches the simplified and fused graph, and replays it.
/// Inside another trace (export, an outer compile) `f` is inlined.
pub fn compile<F>(f: F) -> impl Fn(&[Array]) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    compile_with(f, false)
}

/// Like [`compile`], keyed by dtypes and ranks only: one trace serves every
/// shape (fusion is kept only where shapes are re-inferred per call).
pub fn compile_shapeless<F>(f: F) -> impl Fn(&[Array]) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    compile_with(f, true)
}

fn compile_with<F>(f: F, shapeless: bool) -> impl Fn(&[Array]) -> Result<Vec<Array>>
where
    F: Fn(&[Array]) -> Result<Vec<Array>>,
{
    let cache: Mutex<HashMap<Key, Arc<Compiled>>> = Mutex::new(HashMap::new());
    move |args: &[Array]| {
        if is_tracing() {
            return f(args);
        }
        let key = key_of(args, shapeless);
        let hit = cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        let c = match hit {
            Some(c) => c,
            None => {
                let c = Arc::new(build(&f, args)?);
                cache
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, c.clone());
                c
            }
        };
        replay(&c.tape, &c.constants, args, shapeless)
    }
}
