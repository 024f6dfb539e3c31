//! `mlx_map_string_to_array` and its iterator (mlx/c/map.h).
//!
//! Keys are kept sorted (the keyword inputs of an exported function are
//! matched by sorted name), so iteration visits them in byte order; mlx-c's
//! order is unspecified.

use crate::array::{get_array, mlx_array, set_array};
use crate::boundary::{status, value, Failure};
use crate::handle::{self, lock, slot, str_arg, Kind};
use mlx::{Array, Kwargs};
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Mutex;

crate::handle::c_handle!(
    /// `mlx_map_string_to_array`.
    mlx_map_string_to_array
);

/// `mlx_map_string_to_array_iterator`: `{ void* ctx; void* map_ctx; }`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mlx_map_string_to_array_iterator {
    pub ctx: *mut c_void,
    pub map_ctx: *mut c_void,
}

/// What an `mlx_map_string_to_array` holds.
pub struct MapObj(pub Mutex<Kwargs>);
impl Kind for MapObj {
    const NAME: &'static str = "mlx_map_string_to_array";
}

/// What an iterator holds: the entries when it was made, and the next one.
pub struct MapIterObj(Mutex<(Vec<(CString, Array)>, usize)>);
impl Kind for MapIterObj {
    const NAME: &'static str = "mlx_map_string_to_array_iterator";
}

/// The entries behind a handle (cheap clones).
pub fn get_map(h: mlx_map_string_to_array) -> Result<Kwargs, Failure> {
    Ok(lock(&handle::get::<MapObj>(h.ctx)?.0).clone())
}

/// A new empty map.
#[no_mangle]
pub extern "C" fn mlx_map_string_to_array_new() -> mlx_map_string_to_array {
    value(
        "mlx_map_string_to_array_new",
        mlx_map_string_to_array::EMPTY,
        || {
            Ok(mlx_map_string_to_array {
                ctx: handle::new(MapObj(Mutex::new(Kwargs::new()))),
            })
        },
    )
}

/// Sets `*map` to a copy of `src` (the arrays themselves are shared).
#[no_mangle]
pub extern "C" fn mlx_map_string_to_array_set(
    map: *mut mlx_map_string_to_array,
    src: mlx_map_string_to_array,
) -> c_int {
    status("mlx_map_string_to_array_set", || {
        handle::set(
            slot(map),
            get_map(src)?,
            |m| MapObj(Mutex::new(m)),
            |obj, m| *lock(&obj.0) = m,
        )
    })
}

/// Frees the map (an empty handle is a no-op).
#[no_mangle]
pub extern "C" fn mlx_map_string_to_array_free(map: mlx_map_string_to_array) -> c_int {
    status("mlx_map_string_to_array_free", || {
        handle::free::<MapObj>(map.ctx)
    })
}

/// Inserts `value` at `key`, replacing what was there.
///
/// # Safety
/// `key` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mlx_map_string_to_array_insert(
    map: mlx_map_string_to_array,
    key: *const c_char,
    value: mlx_array,
) -> c_int {
    status("mlx_map_string_to_array_insert", || {
        // SAFETY: forwarded from this function's contract.
        let key = unsafe { str_arg(key, "the key") }?.to_string();
        let a = get_array(value)?;
        lock(&handle::get::<MapObj>(map.ctx)?.0).insert(key, a);
        Ok(())
    })
}

/// Sets `*value` to the array at `key`: 0 if found, 2 if the key is absent
/// (not an error: the handler is not called), 1 on error.
///
/// # Safety
/// `key` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mlx_map_string_to_array_get(
    value: *mut mlx_array,
    map: mlx_map_string_to_array,
    key: *const c_char,
) -> c_int {
    crate::boundary::value("mlx_map_string_to_array_get", 1, || {
        // SAFETY: forwarded from this function's contract.
        let key = unsafe { str_arg(key, "the key") }?;
        match get_map(map)?.get(key) {
            None => Ok(2),
            Some(a) => set_array(value, a.clone()).map(|()| 0),
        }
    })
}

/// A new iterator over the entries `map` has now.
#[no_mangle]
pub extern "C" fn mlx_map_string_to_array_iterator_new(
    map: mlx_map_string_to_array,
) -> mlx_map_string_to_array_iterator {
    let empty = mlx_map_string_to_array_iterator {
        ctx: std::ptr::null_mut(),
        map_ctx: std::ptr::null_mut(),
    };
    value("mlx_map_string_to_array_iterator_new", empty, || {
        let entries = get_map(map)?
            .into_iter()
            .map(|(k, a)| (handle::c_string(&k), a))
            .collect();
        Ok(mlx_map_string_to_array_iterator {
            ctx: handle::new(MapIterObj(Mutex::new((entries, 0)))),
            map_ctx: map.ctx,
        })
    })
}

/// Frees the iterator (an empty one is a no-op).
#[no_mangle]
pub extern "C" fn mlx_map_string_to_array_iterator_free(
    it: mlx_map_string_to_array_iterator,
) -> c_int {
    status("mlx_map_string_to_array_iterator_free", || {
        handle::free::<MapIterObj>(it.ctx)
    })
}

/// The next entry: 0 and `*key`, `*value` set (the key is owned by the
/// iterator, valid until it is freed); 2 when there are no more; 1 on error.
#[no_mangle]
pub extern "C" fn mlx_map_string_to_array_iterator_next(
    key: *mut *const c_char,
    value: *mut mlx_array,
    it: mlx_map_string_to_array_iterator,
) -> c_int {
    crate::boundary::value("mlx_map_string_to_array_iterator_next", 1, || {
        if key.is_null() {
            return Err(Failure::new("expected a pointer for the key, found NULL"));
        }
        let obj = handle::get::<MapIterObj>(it.ctx)?;
        let mut state = lock(&obj.0);
        let (entries, next) = &mut *state;
        let Some((k, a)) = entries.get(*next) else {
            return Ok(2);
        };
        set_array(value, a.clone())?;
        // SAFETY: non-null; the caller passes a pointer to a `const char*`.
        unsafe { key.write(k.as_ptr()) };
        *next += 1;
        Ok(0)
    })
}
