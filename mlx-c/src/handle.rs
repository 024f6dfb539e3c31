//! Opaque handles: a C `struct { void* ctx; }` whose `ctx` is an
//! `Arc<T>::into_raw` pointer, checked against a registry of live handles
//! before every use.
//!
//! The registry makes misuse an error with a message instead of undefined
//! behaviour: an empty (`ctx == NULL`) handle, a handle that was freed, or a
//! handle of another type. Lookups hand out an `Arc` clone taken under the
//! registry lock, so a handle freed by one thread while another uses it stays
//! alive until that use ends. (A freed address that the allocator reuses for
//! a new handle of the same type cannot be told apart; that is the one
//! misuse not detected.)
//!
//! The registry stores addresses XOR-ed with a constant, not the addresses
//! themselves: leak checkers (valgrind, LeakSanitizer) scan memory for
//! pointers, and a plain address here would make every handle the C program
//! forgot to free look reachable instead of leaked.

use crate::boundary::Failure;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A Rust type behind one C handle type.
pub trait Kind: Send + Sync + 'static {
    /// The C type's name, for messages (`"mlx_array"`).
    const NAME: &'static str;
}

/// Hides addresses from conservative leak scanners (see the module doc).
const MASK: usize = 0x5a5a_5a5a_5a5a_5a5a_u64 as usize;

fn live() -> MutexGuard<'static, HashMap<usize, &'static str>> {
    static LIVE: OnceLock<Mutex<HashMap<usize, &'static str>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn key(ctx: *const c_void) -> usize {
    ctx as usize ^ MASK
}

/// Makes a new live handle owning `value`; returns its `ctx`.
pub fn new<T: Kind>(value: T) -> *mut c_void {
    let ctx = Arc::into_raw(Arc::new(value)) as *mut c_void;
    live().insert(key(ctx), T::NAME);
    ctx
}

/// The object behind `ctx`, or why there is none.
pub fn get<T: Kind>(ctx: *mut c_void) -> Result<Arc<T>, Failure> {
    if ctx.is_null() {
        return Err(Failure::new(format!(
            "expected a non-empty {}, found an empty one (ctx is NULL)",
            T::NAME
        )));
    }
    let live = live();
    match live.get(&key(ctx)) {
        None => Err(Failure::new(format!(
            "{} handle {ctx:p} is not live: it was freed already or never created",
            T::NAME
        ))),
        Some(&name) if name != T::NAME => Err(Failure::new(format!(
            "expected an {}, found a handle to an {name}",
            T::NAME
        ))),
        Some(_) => {
            // SAFETY: `ctx` is registered as a live `T`, so it came from
            // `Arc::<T>::into_raw` in `new` and the registry's reference has
            // not been released (that happens in `free`, which removes the
            // entry under this same lock before dropping).
            unsafe {
                Arc::increment_strong_count(ctx as *const T);
                Ok(Arc::from_raw(ctx as *const T))
            }
        }
    }
}

/// Releases the handle's reference. An empty handle is a no-op (as in
/// mlx-c); a freed or mistyped one is an error, so nothing is freed twice.
pub fn free<T: Kind>(ctx: *mut c_void) -> Result<(), Failure> {
    if ctx.is_null() {
        return Ok(());
    }
    {
        let mut live = live();
        match live.get(&key(ctx)) {
            None => {
                return Err(Failure::new(format!(
                    "{} handle {ctx:p} is not live: it was freed already or never created",
                    T::NAME
                )))
            }
            Some(&name) if name != T::NAME => {
                return Err(Failure::new(format!(
                    "expected an {}, found a handle to an {name}",
                    T::NAME
                )))
            }
            Some(_) => {
                live.remove(&key(ctx));
            }
        }
    }
    // SAFETY: the entry was live with type `T` and is now removed, so this
    // is the one release of the reference `new` made; other threads holding
    // clones from `get` keep the object alive until they finish.
    drop(unsafe { Arc::from_raw(ctx as *const T) });
    Ok(())
}

/// Stores `v` behind `*slot`: in place when the handle is live (every copy
/// of the C struct sees it, as in mlx-c), as a new handle when it is empty.
pub fn set<T: Kind, V>(
    slot: *mut *mut c_void,
    v: V,
    make: impl FnOnce(V) -> T,
    update: impl FnOnce(&T, V),
) -> Result<(), Failure> {
    if slot.is_null() {
        return Err(Failure::new(format!(
            "expected a pointer to an {} to write the result to, found NULL",
            T::NAME
        )));
    }
    // SAFETY: non-null, and the C signature takes a pointer to a handle the
    // caller owns; a handle is one pointer, read and written as such.
    let ctx = unsafe { *slot };
    if ctx.is_null() {
        let new_ctx = new(make(v));
        // SAFETY: as above.
        unsafe { *slot = new_ctx };
    } else {
        update(&*get::<T>(ctx)?, v);
    }
    Ok(())
}

/// Number of live handles of every type: a program can check it is back to
/// zero before exit (extension, `_mlx_live_handles`).
pub fn live_count() -> usize {
    live().len()
}

/// Locks a handle's mutex; a poisoned lock (a panic caught while it was
/// held) still holds consistent data, since updates are single assignments.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Declares a C handle type: `typedef struct NAME_ { void* ctx; } NAME;`.
macro_rules! c_handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[allow(non_camel_case_types)]
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            pub ctx: *mut std::ffi::c_void,
        }

        impl $name {
            /// The empty handle (`ctx == NULL`).
            pub const EMPTY: $name = $name {
                ctx: std::ptr::null_mut(),
            };
        }
    };
}
pub(crate) use c_handle;

/// The `ctx` slot behind a C `NAME*` out-parameter (a handle is one pointer).
pub fn slot<H>(p: *mut H) -> *mut *mut c_void {
    p.cast()
}

/// A NUL-terminated copy of `s` (interior NULs shown as `\0`).
pub fn c_string(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

/// The text behind a C string argument `what` of a function.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
pub unsafe fn str_arg<'a>(p: *const std::ffi::c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::new(format!(
            "expected a string for {what}, found NULL"
        )));
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Failure::new(format!("{what} is not valid UTF-8")))
}
