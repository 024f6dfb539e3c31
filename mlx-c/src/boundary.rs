//! The error handler and the wrapper every C entry point runs in.
//!
//! As in mlx-c, a failing function calls the error handler with a message
//! and returns a failure value (non-zero status, empty handle, NULL or 0).
//! The default handler prints `MLX error: <message>` to stdout and exits
//! the process with status -1, as mlx-c's does; `mlx_set_error_handler`
//! installs one that returns, after which the status codes carry on.
//!
//! No panic crosses into C: [`status`] and [`value`] catch unwinding and
//! report it through the same handler.

use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};

/// Why a C call failed: the message the error handler receives.
#[derive(Debug)]
pub struct Failure(pub String);

impl Failure {
    pub fn new(msg: impl Into<String>) -> Failure {
        Failure(msg.into())
    }
}

impl From<mlx::Error> for Failure {
    fn from(e: mlx::Error) -> Failure {
        Failure(e.to_string())
    }
}

/// `void (*)(const char* msg, void* data)`, as in mlx-c's error.h.
pub type ErrorHandlerFn = unsafe extern "C" fn(msg: *const c_char, data: *mut c_void);
type DtorFn = unsafe extern "C" fn(data: *mut c_void);

/// An installed handler; its data's destructor runs when the last user of
/// this installation is done (a handler replaced while another thread is
/// inside it keeps its data until it returns).
struct Installed {
    handler: Option<ErrorHandlerFn>,
    data: *mut c_void,
    dtor: Option<DtorFn>,
}

// SAFETY: `data` is an opaque pointer owned by the C caller, who installs it
// for use from whatever thread reports an error (mlx-c makes no per-thread
// promise either); we only pass it back to the caller's own functions.
unsafe impl Send for Installed {}
// SAFETY: as above; we never dereference `data`.
unsafe impl Sync for Installed {}

impl Drop for Installed {
    fn drop(&mut self) {
        if let Some(dtor) = self.dtor {
            // SAFETY: the caller gave `dtor` for `data` in
            // `mlx_set_error_handler`; this installation is being dropped,
            // so this is the one call.
            unsafe { dtor(self.data) }
        }
    }
}

fn installed() -> &'static Mutex<Arc<Installed>> {
    static CURRENT: OnceLock<Mutex<Arc<Installed>>> = OnceLock::new();
    CURRENT.get_or_init(|| {
        Mutex::new(Arc::new(Installed {
            handler: None,
            data: std::ptr::null_mut(),
            dtor: None,
        }))
    })
}

extern "C" {
    fn printf(fmt: *const c_char, ...) -> c_int;
    fn exit(status: c_int) -> !;
}

/// Installs `handler` (NULL: the default one) with `data`, which is passed
/// to it on every call; `dtor(data)` runs when the handler is replaced.
///
/// mlx-c passes `data` to the handler only when `dtor` is given (NULL
/// otherwise); here the handler always receives `data`.
///
/// # Safety
/// `handler` and `dtor` must be valid functions for as long as they are
/// installed; `handler` must return normally (no `longjmp`, no C++ throw).
#[no_mangle]
pub unsafe extern "C" fn mlx_set_error_handler(
    handler: Option<ErrorHandlerFn>,
    data: *mut c_void,
    dtor: Option<DtorFn>,
) {
    let new = Arc::new(Installed {
        handler,
        data,
        dtor,
    });
    let old = {
        let mut current = installed().lock().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *current, new)
    };
    // Outside the lock: the old data's destructor may call back into us.
    let _ = catch_unwind(AssertUnwindSafe(|| drop(old)));
}

/// Reports `msg` from the function `func` through the installed handler.
pub fn report(func: &str, msg: &str) {
    let text = format!("{func}: {msg}");
    // Interior NULs would cut the message short; show them instead.
    let text = CString::new(text.replace('\0', "\\0")).unwrap_or_default();
    let current = installed()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    match current.handler {
        // SAFETY: the caller installed `handler` for this use; `text`
        // outlives the call.
        Some(handler) => unsafe { handler(text.as_ptr(), current.data) },
        None => {
            // SAFETY: a NUL-terminated format with one `%s` and a
            // NUL-terminated argument; then exit as mlx-c's default does
            // (through libc, so the C program's buffered stdout is flushed
            // after our line, in order).
            unsafe {
                printf(c"MLX error: %s\n".as_ptr(), text.as_ptr());
                exit(-1)
            }
        }
    }
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("internal error (a bug in mlx-c's Rust side, please report it): {what}")
}

/// Runs `f` for the entry point `func`: 0 on success; on failure (or a
/// panic) the handler is called and 1 returned.
pub fn status(func: &str, f: impl FnOnce() -> Result<(), Failure>) -> c_int {
    value(func, 1, || f().map(|()| 0))
}

/// Runs `f` for the entry point `func`, returning `fail` after reporting
/// when it fails or panics.
pub fn value<R>(func: &str, fail: R, f: impl FnOnce() -> Result<R, Failure>) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(r)) => r,
        Ok(Err(Failure(msg))) => {
            report(func, &msg);
            fail
        }
        Err(payload) => {
            report(func, &panic_text(payload));
            fail
        }
    }
}
