//! `mlx_string` (mlx/c/string.h): an owned, NUL-terminated string.

use crate::boundary::{status, value, Failure};
use crate::handle::{self, c_handle, c_string, lock, slot, Kind};
use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::Mutex;

c_handle!(
    /// `mlx_string`.
    mlx_string
);

/// What an `mlx_string` holds.
pub struct StringObj(pub Mutex<CString>);

impl Kind for StringObj {
    const NAME: &'static str = "mlx_string";
}

fn new_obj(text: CString) -> StringObj {
    StringObj(Mutex::new(text))
}

/// Writes `text` into the string behind `out` (made if empty).
pub fn set_string(out: *mut mlx_string, text: &str) -> Result<(), Failure> {
    handle::set(slot(out), c_string(text), new_obj, |s, t| *lock(&s.0) = t)
}

/// A new empty handle (no allocation; `ctx` is NULL).
#[no_mangle]
pub extern "C" fn mlx_string_new() -> mlx_string {
    mlx_string::EMPTY
}

/// A new string holding a copy of `str`.
///
/// # Safety
/// `str` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mlx_string_new_data(str: *const c_char) -> mlx_string {
    value("mlx_string_new_data", mlx_string::EMPTY, || {
        if str.is_null() {
            return Err(Failure::new("expected a string, found NULL"));
        }
        // SAFETY: non-null and NUL-terminated by the caller's contract.
        let text = unsafe { CStr::from_ptr(str) }.to_owned();
        Ok(mlx_string {
            ctx: handle::new(StringObj(Mutex::new(text))),
        })
    })
}

/// Sets `*str` to a copy of `src`'s text.
#[no_mangle]
pub extern "C" fn mlx_string_set(str: *mut mlx_string, src: mlx_string) -> c_int {
    status("mlx_string_set", || {
        let text = lock(&handle::get::<StringObj>(src.ctx)?.0).clone();
        handle::set(slot(str), text, new_obj, |s, t| *lock(&s.0) = t)
    })
}

/// The text; valid until the string is set or freed.
#[no_mangle]
pub extern "C" fn mlx_string_data(str: mlx_string) -> *const c_char {
    value("mlx_string_data", std::ptr::null(), || {
        let s = handle::get::<StringObj>(str.ctx)?;
        let p = lock(&s.0).as_ptr();
        Ok(p)
    })
}

/// Frees the string (an empty handle is a no-op).
#[no_mangle]
pub extern "C" fn mlx_string_free(str: mlx_string) -> c_int {
    status("mlx_string_free", || handle::free::<StringObj>(str.ctx))
}
