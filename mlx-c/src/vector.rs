//! `mlx_vector_array` and `mlx_vector_string` (mlx/c/vector.h).

use crate::array::{get_array, mlx_array, set_array};
use crate::boundary::{status, value, Failure};
use crate::handle::{self, c_handle, c_string, lock, slot, Kind};
use mlx::Array;
use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::Mutex;

c_handle!(
    /// `mlx_vector_array`.
    mlx_vector_array
);
c_handle!(
    /// `mlx_vector_string`.
    mlx_vector_string
);

/// What an `mlx_vector_array` holds.
pub struct VectorArrayObj(pub Mutex<Vec<Array>>);
impl Kind for VectorArrayObj {
    const NAME: &'static str = "mlx_vector_array";
}

/// What an `mlx_vector_string` holds.
pub struct VectorStringObj(pub Mutex<Vec<CString>>);
impl Kind for VectorStringObj {
    const NAME: &'static str = "mlx_vector_string";
}

/// The arrays behind a handle (cheap clones).
pub fn get_arrays(h: mlx_vector_array) -> Result<Vec<Array>, Failure> {
    Ok(lock(&handle::get::<VectorArrayObj>(h.ctx)?.0).clone())
}

/// Stores `v` behind `*out` (in place if live, a new handle if empty).
pub fn set_arrays(out: *mut mlx_vector_array, v: Vec<Array>) -> Result<(), Failure> {
    handle::set(
        slot(out),
        v,
        |v| VectorArrayObj(Mutex::new(v)),
        |obj, v| *lock(&obj.0) = v,
    )
}

/// Stores `v` behind `*out` (in place if live, a new handle if empty).
pub fn set_strings(out: *mut mlx_vector_string, v: Vec<CString>) -> Result<(), Failure> {
    handle::set(
        slot(out),
        v,
        |v| VectorStringObj(Mutex::new(v)),
        |obj, v| *lock(&obj.0) = v,
    )
}

/// The arrays of a C array of `size` handles.
///
/// # Safety
/// `data` points to `size` handles (or `size` is 0).
unsafe fn arrays_arg(data: *const mlx_array, size: usize) -> Result<Vec<Array>, Failure> {
    if size == 0 {
        return Ok(Vec::new());
    }
    if data.is_null() {
        return Err(Failure::new(format!("expected {size} arrays, found NULL")));
    }
    // SAFETY: non-null and holding `size` handles by the caller's contract.
    let handles = unsafe { std::slice::from_raw_parts(data, size) };
    handles.iter().map(|&h| get_array(h)).collect()
}

/// The strings of a C array of `size` pointers.
///
/// # Safety
/// `data` points to `size` NUL-terminated strings (or `size` is 0).
unsafe fn strings_arg(data: *const *const c_char, size: usize) -> Result<Vec<CString>, Failure> {
    if size == 0 {
        return Ok(Vec::new());
    }
    if data.is_null() {
        return Err(Failure::new(format!("expected {size} strings, found NULL")));
    }
    // SAFETY: non-null and holding `size` pointers by the caller's contract.
    let ptrs = unsafe { std::slice::from_raw_parts(data, size) };
    ptrs.iter()
        .enumerate()
        .map(|(i, &p)| {
            if p.is_null() {
                Err(Failure::new(format!("string {i} of {size} is NULL")))
            } else {
                // SAFETY: non-null and NUL-terminated by the caller's contract.
                Ok(unsafe { CStr::from_ptr(p) }.to_owned())
            }
        })
        .collect()
}

/// A new empty vector.
#[no_mangle]
pub extern "C" fn mlx_vector_array_new() -> mlx_vector_array {
    value("mlx_vector_array_new", mlx_vector_array::EMPTY, || {
        Ok(mlx_vector_array {
            ctx: handle::new(VectorArrayObj(Mutex::new(Vec::new()))),
        })
    })
}

/// Sets `*vec` to a copy of `src` (the arrays themselves are shared).
#[no_mangle]
pub extern "C" fn mlx_vector_array_set(vec: *mut mlx_vector_array, src: mlx_vector_array) -> c_int {
    status("mlx_vector_array_set", || set_arrays(vec, get_arrays(src)?))
}

/// Frees the vector (an empty handle is a no-op); its arrays' own handles
/// are unaffected.
#[no_mangle]
pub extern "C" fn mlx_vector_array_free(vec: mlx_vector_array) -> c_int {
    status("mlx_vector_array_free", || {
        handle::free::<VectorArrayObj>(vec.ctx)
    })
}

/// A new vector holding the `size` arrays at `data`.
///
/// # Safety
/// `data` points to `size` handles.
#[no_mangle]
pub unsafe extern "C" fn mlx_vector_array_new_data(
    data: *const mlx_array,
    size: usize,
) -> mlx_vector_array {
    value("mlx_vector_array_new_data", mlx_vector_array::EMPTY, || {
        // SAFETY: forwarded from this function's contract.
        let v = unsafe { arrays_arg(data, size) }?;
        Ok(mlx_vector_array {
            ctx: handle::new(VectorArrayObj(Mutex::new(v))),
        })
    })
}

/// A new vector holding one array.
#[no_mangle]
pub extern "C" fn mlx_vector_array_new_value(val: mlx_array) -> mlx_vector_array {
    value(
        "mlx_vector_array_new_value",
        mlx_vector_array::EMPTY,
        || {
            let v = vec![get_array(val)?];
            Ok(mlx_vector_array {
                ctx: handle::new(VectorArrayObj(Mutex::new(v))),
            })
        },
    )
}

/// Sets `*vec` to the `size` arrays at `data`.
///
/// # Safety
/// `data` points to `size` handles.
#[no_mangle]
pub unsafe extern "C" fn mlx_vector_array_set_data(
    vec: *mut mlx_vector_array,
    data: *const mlx_array,
    size: usize,
) -> c_int {
    status("mlx_vector_array_set_data", || {
        // SAFETY: forwarded from this function's contract.
        set_arrays(vec, unsafe { arrays_arg(data, size) }?)
    })
}

/// Sets `*vec` to the one array `val`.
#[no_mangle]
pub extern "C" fn mlx_vector_array_set_value(vec: *mut mlx_vector_array, val: mlx_array) -> c_int {
    status("mlx_vector_array_set_value", || {
        set_arrays(vec, vec![get_array(val)?])
    })
}

/// Appends the `size` arrays at `data`.
///
/// # Safety
/// `data` points to `size` handles.
#[no_mangle]
pub unsafe extern "C" fn mlx_vector_array_append_data(
    vec: mlx_vector_array,
    data: *const mlx_array,
    size: usize,
) -> c_int {
    status("mlx_vector_array_append_data", || {
        // SAFETY: forwarded from this function's contract.
        let more = unsafe { arrays_arg(data, size) }?;
        lock(&handle::get::<VectorArrayObj>(vec.ctx)?.0).extend(more);
        Ok(())
    })
}

/// Appends one array.
#[no_mangle]
pub extern "C" fn mlx_vector_array_append_value(vec: mlx_vector_array, val: mlx_array) -> c_int {
    status("mlx_vector_array_append_value", || {
        let a = get_array(val)?;
        lock(&handle::get::<VectorArrayObj>(vec.ctx)?.0).push(a);
        Ok(())
    })
}

/// The number of arrays (0 on error).
#[no_mangle]
pub extern "C" fn mlx_vector_array_size(vec: mlx_vector_array) -> usize {
    value("mlx_vector_array_size", 0, || {
        Ok(lock(&handle::get::<VectorArrayObj>(vec.ctx)?.0).len())
    })
}

/// Sets `*res` to the array at `idx`.
#[no_mangle]
pub extern "C" fn mlx_vector_array_get(
    res: *mut mlx_array,
    vec: mlx_vector_array,
    idx: usize,
) -> c_int {
    status("mlx_vector_array_get", || {
        let v = get_arrays(vec)?;
        let a = v.get(idx).cloned().ok_or_else(|| {
            Failure::new(format!(
                "index {idx} is out of range for a vector of {} arrays",
                v.len()
            ))
        })?;
        set_array(res, a)
    })
}

/// A new empty vector.
#[no_mangle]
pub extern "C" fn mlx_vector_string_new() -> mlx_vector_string {
    value("mlx_vector_string_new", mlx_vector_string::EMPTY, || {
        Ok(mlx_vector_string {
            ctx: handle::new(VectorStringObj(Mutex::new(Vec::new()))),
        })
    })
}

/// Sets `*vec` to a copy of `src`.
#[no_mangle]
pub extern "C" fn mlx_vector_string_set(
    vec: *mut mlx_vector_string,
    src: mlx_vector_string,
) -> c_int {
    status("mlx_vector_string_set", || {
        let v = lock(&handle::get::<VectorStringObj>(src.ctx)?.0).clone();
        set_strings(vec, v)
    })
}

/// Frees the vector (an empty handle is a no-op).
#[no_mangle]
pub extern "C" fn mlx_vector_string_free(vec: mlx_vector_string) -> c_int {
    status("mlx_vector_string_free", || {
        handle::free::<VectorStringObj>(vec.ctx)
    })
}

/// A new vector holding copies of the `size` strings at `data`.
///
/// # Safety
/// `data` points to `size` NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn mlx_vector_string_new_data(
    data: *const *const c_char,
    size: usize,
) -> mlx_vector_string {
    value(
        "mlx_vector_string_new_data",
        mlx_vector_string::EMPTY,
        || {
            // SAFETY: forwarded from this function's contract.
            let v = unsafe { strings_arg(data, size) }?;
            Ok(mlx_vector_string {
                ctx: handle::new(VectorStringObj(Mutex::new(v))),
            })
        },
    )
}

/// A new vector holding a copy of one string.
///
/// # Safety
/// `val` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mlx_vector_string_new_value(val: *const c_char) -> mlx_vector_string {
    value(
        "mlx_vector_string_new_value",
        mlx_vector_string::EMPTY,
        || {
            // SAFETY: one pointer, forwarded from this function's contract.
            let v = unsafe { strings_arg(&val, 1) }?;
            Ok(mlx_vector_string {
                ctx: handle::new(VectorStringObj(Mutex::new(v))),
            })
        },
    )
}

/// Sets `*vec` to copies of the `size` strings at `data`.
///
/// # Safety
/// `data` points to `size` NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn mlx_vector_string_set_data(
    vec: *mut mlx_vector_string,
    data: *const *const c_char,
    size: usize,
) -> c_int {
    status("mlx_vector_string_set_data", || {
        // SAFETY: forwarded from this function's contract.
        set_strings(vec, unsafe { strings_arg(data, size) }?)
    })
}

/// Sets `*vec` to a copy of the one string `val`.
///
/// # Safety
/// `val` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mlx_vector_string_set_value(
    vec: *mut mlx_vector_string,
    val: *const c_char,
) -> c_int {
    status("mlx_vector_string_set_value", || {
        // SAFETY: one pointer, forwarded from this function's contract.
        set_strings(vec, unsafe { strings_arg(&val, 1) }?)
    })
}

/// Appends copies of the `size` strings at `data`.
///
/// # Safety
/// `data` points to `size` NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn mlx_vector_string_append_data(
    vec: mlx_vector_string,
    data: *const *const c_char,
    size: usize,
) -> c_int {
    status("mlx_vector_string_append_data", || {
        // SAFETY: forwarded from this function's contract.
        let more = unsafe { strings_arg(data, size) }?;
        lock(&handle::get::<VectorStringObj>(vec.ctx)?.0).extend(more);
        Ok(())
    })
}

/// Appends a copy of one string.
///
/// # Safety
/// `val` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mlx_vector_string_append_value(
    vec: mlx_vector_string,
    val: *const c_char,
) -> c_int {
    status("mlx_vector_string_append_value", || {
        // SAFETY: one pointer, forwarded from this function's contract.
        let more = unsafe { strings_arg(&val, 1) }?;
        lock(&handle::get::<VectorStringObj>(vec.ctx)?.0).extend(more);
        Ok(())
    })
}

/// The number of strings (0 on error).
#[no_mangle]
pub extern "C" fn mlx_vector_string_size(vec: mlx_vector_string) -> usize {
    value("mlx_vector_string_size", 0, || {
        Ok(lock(&handle::get::<VectorStringObj>(vec.ctx)?.0).len())
    })
}

/// Sets `*res` to the string at `idx`, owned by the vector: valid until the
/// vector is set, appended to or freed.
#[no_mangle]
pub extern "C" fn mlx_vector_string_get(
    res: *mut *mut c_char,
    vec: mlx_vector_string,
    idx: usize,
) -> c_int {
    status("mlx_vector_string_get", || {
        if res.is_null() {
            return Err(Failure::new(
                "expected a pointer for the result, found NULL",
            ));
        }
        let obj = handle::get::<VectorStringObj>(vec.ctx)?;
        let v = lock(&obj.0);
        let s = v.get(idx).ok_or_else(|| {
            Failure::new(format!(
                "index {idx} is out of range for a vector of {} strings",
                v.len()
            ))
        })?;
        // SAFETY: non-null; the caller passes a pointer to a `char*`.
        unsafe { res.write(s.as_ptr().cast_mut()) };
        Ok(())
    })
}

/// Makes `c_string` available to the export module's signature list.
pub fn strings_of(texts: impl IntoIterator<Item = String>) -> Vec<CString> {
    texts.into_iter().map(|t| c_string(&t)).collect()
}
