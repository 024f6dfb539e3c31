//! `mlx_array` and `mlx_dtype` (mlx/c/array.h).
//!
//! Differences from mlx-c, all where mlx-c's behaviour is undefined or
//! surprising: typed accessors (`mlx_array_item_*`, `mlx_array_data_*`)
//! check the dtype and fail on a mismatch instead of reinterpreting bytes;
//! data accessors evaluate a lazy array instead of returning NULL, and
//! always point at row-major, contiguous elements (a strided view is
//! copied once, behind the handle), which is why `mlx_array_strides`
//! reports row-major strides.

use crate::boundary::{status, value, Failure};
use crate::format::array_text;
use crate::handle::{self, c_handle, lock, slot, Kind};
use crate::string::{mlx_string, set_string};
use mlx::array::Data;
use mlx::{Array, Buffer, Complex64, Dtype, Element, Spec};
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

c_handle!(
    /// `mlx_array`.
    mlx_array
);

/// What an `mlx_array` holds.
pub struct ArrayObj(pub Mutex<ArraySlot>);

/// One array and what pointers handed to C point into.
pub struct ArraySlot {
    pub array: Array,
    /// Row-major strides in elements (`mlx_array_strides`).
    strides: Vec<usize>,
    /// Evaluated, row-major, aligned elements (`mlx_array_data_*`), made on
    /// first access and kept until the handle is set or freed.
    host: Option<Data>,
}

impl Kind for ArrayObj {
    const NAME: &'static str = "mlx_array";
}

impl ArraySlot {
    fn new(array: Array) -> ArraySlot {
        let mut strides = vec![0usize; array.ndim()];
        let mut acc = 1usize;
        for (s, &d) in strides.iter_mut().zip(array.shape()).rev() {
            *s = acc;
            acc = acc.saturating_mul(d.max(1) as usize);
        }
        ArraySlot {
            array,
            strides,
            host: None,
        }
    }

    /// The host data, evaluating and making it contiguous on first use.
    fn host(&mut self) -> Result<&Data, Failure> {
        if self.host.is_none() {
            let a = &self.array;
            a.eval()?;
            let data = a.data()?;
            let item = a.dtype().size();
            let start = data.buffer.bytes().as_ptr() as usize + data.offset * item;
            let usable = data.is_row_contiguous(a.shape()) && start.is_multiple_of(item);
            let host = if usable {
                data
            } else {
                let buffer =
                    mlx::dispatch_dtype!(a.dtype(), T => Buffer::from_slice(&a.to_vec::<T>()?));
                Data::contiguous(buffer, a.shape())
            };
            self.host = Some(host);
        }
        Ok(self.host.as_ref().expect("set above"))
    }
}

/// A new handle owning `a`.
pub fn new_array(a: Array) -> mlx_array {
    mlx_array {
        ctx: handle::new(ArrayObj(Mutex::new(ArraySlot::new(a)))),
    }
}

/// The array behind a handle (a cheap clone).
pub fn get_array(h: mlx_array) -> Result<Array, Failure> {
    Ok(lock(&handle::get::<ArrayObj>(h.ctx)?.0).array.clone())
}

/// Stores `a` behind `*out` (in place if live, a new handle if empty).
pub fn set_array(out: *mut mlx_array, a: Array) -> Result<(), Failure> {
    handle::set(
        slot(out),
        a,
        |a| ArrayObj(Mutex::new(ArraySlot::new(a))),
        |obj, a| *lock(&obj.0) = ArraySlot::new(a),
    )
}

/// The `Dtype` for an `mlx_dtype` value.
pub fn dtype_arg(dtype: c_int) -> Result<Dtype, Failure> {
    Dtype::from_mlx_val(dtype).ok_or_else(|| {
        Failure::new(format!(
            "unknown mlx_dtype {dtype} (expected 0 = MLX_BOOL .. 13 = MLX_COMPLEX64)"
        ))
    })
}

/// An array of `dtype` and `shape` holding a copy of `data`.
///
/// # Safety
/// `shape` points to `dim` ints and `data` to the elements (C's contract).
unsafe fn array_from_raw(
    data: *const c_void,
    shape: *const c_int,
    dim: c_int,
    dtype: c_int,
) -> Result<Array, Failure> {
    let dtype = dtype_arg(dtype)?;
    let dim = usize::try_from(dim)
        .map_err(|_| Failure::new(format!("expected dim >= 0, found {dim}")))?;
    let shape: Vec<i32> = if dim == 0 {
        Vec::new()
    } else if shape.is_null() {
        return Err(Failure::new(format!(
            "expected a shape of {dim} ints, found NULL"
        )));
    } else {
        // SAFETY: non-null, and the caller passes `dim` ints.
        unsafe { std::slice::from_raw_parts(shape, dim) }.to_vec()
    };
    let mut count: usize = 1;
    for &d in &shape {
        let d = usize::try_from(d)
            .map_err(|_| Failure::new(format!("negative dimension in shape {shape:?}")))?;
        count = count
            .checked_mul(d)
            .ok_or_else(|| Failure::new(format!("shape {shape:?} has too many elements")))?;
    }
    let nbytes = count
        .checked_mul(dtype.size())
        .ok_or_else(|| Failure::new(format!("shape {shape:?} has too many bytes")))?;
    let bytes: &[u8] = if nbytes == 0 {
        &[]
    } else if data.is_null() {
        return Err(Failure::new(format!(
            "expected data for {count} {dtype} elements, found NULL"
        )));
    } else {
        // SAFETY: non-null, and the caller's buffer holds the `count`
        // elements of `dtype` that `shape` describes.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), nbytes) }
    };
    let buffer = if dtype == Dtype::Bool {
        // C's bool is one byte; anything but 0 or 1 would not be a valid
        // Rust bool, so normalise instead of trusting the bytes.
        let bools: Vec<bool> = bytes.iter().map(|&b| b != 0).collect();
        Buffer::from_slice(&bools)
    } else {
        Buffer::from_bytes(bytes)
    };
    Ok(Array::from_data(
        Data::contiguous(buffer, &shape),
        Spec::new(shape, dtype),
    ))
}

/// Bytes per element of `dtype` (0 and an error for an unknown dtype).
#[no_mangle]
pub extern "C" fn mlx_dtype_size(dtype: c_int) -> usize {
    value("mlx_dtype_size", 0, || Ok(dtype_arg(dtype)?.size()))
}

/// Writes a description of the array (MLX's printed form) into `*str`.
#[no_mangle]
pub extern "C" fn mlx_array_tostring(str: *mut mlx_string, arr: mlx_array) -> c_int {
    status("mlx_array_tostring", || {
        let text = array_text(&get_array(arr)?)?;
        set_string(str, &text)
    })
}

/// A new empty handle (no allocation; `ctx` is NULL).
#[no_mangle]
pub extern "C" fn mlx_array_new() -> mlx_array {
    mlx_array::EMPTY
}

/// Frees the array (an empty handle is a no-op).
#[no_mangle]
pub extern "C" fn mlx_array_free(arr: mlx_array) -> c_int {
    status("mlx_array_free", || handle::free::<ArrayObj>(arr.ctx))
}

macro_rules! scalar_constructors {
    ($($new:ident, $set:ident, $t:ty, |$v:ident| $make:expr;)*) => {$(
        /// A new 0-d array holding the value.
        #[no_mangle]
        pub extern "C" fn $new($v: $t) -> mlx_array {
            value(stringify!($new), mlx_array::EMPTY, || Ok(new_array($make)))
        }

        /// Sets `*arr` to a 0-d array holding the value.
        #[no_mangle]
        pub extern "C" fn $set(arr: *mut mlx_array, $v: $t) -> c_int {
            status(stringify!($set), || set_array(arr, $make))
        }
    )*};
}

scalar_constructors! {
    mlx_array_new_bool, mlx_array_set_bool, bool, |v| Array::scalar(v);
    mlx_array_new_int, mlx_array_set_int, c_int, |v| Array::scalar(v);
    mlx_array_new_float32, mlx_array_set_float32, f32, |v| Array::scalar(v);
    mlx_array_new_float, mlx_array_set_float, f32, |v| Array::scalar(v);
    mlx_array_new_float64, mlx_array_set_float64, f64, |v| Array::scalar(v);
    mlx_array_new_double, mlx_array_set_double, f64, |v| Array::scalar(v);
}

/// A new 0-d complex64 array.
#[no_mangle]
pub extern "C" fn mlx_array_new_complex(real_val: f32, imag_val: f32) -> mlx_array {
    value("mlx_array_new_complex", mlx_array::EMPTY, || {
        Ok(new_array(Array::scalar(Complex64::new(real_val, imag_val))))
    })
}

/// Sets `*arr` to a 0-d complex64 array.
#[no_mangle]
pub extern "C" fn mlx_array_set_complex(
    arr: *mut mlx_array,
    real_val: f32,
    imag_val: f32,
) -> c_int {
    status("mlx_array_set_complex", || {
        set_array(arr, Array::scalar(Complex64::new(real_val, imag_val)))
    })
}

/// A new array with a copy of `data` (`dim` dimensions in `shape`).
///
/// # Safety
/// `shape` points to `dim` ints; `data` to the elements they describe.
#[no_mangle]
pub unsafe extern "C" fn mlx_array_new_data(
    data: *const c_void,
    shape: *const c_int,
    dim: c_int,
    dtype: c_int,
) -> mlx_array {
    value("mlx_array_new_data", mlx_array::EMPTY, || {
        // SAFETY: forwarded from this function's contract.
        Ok(new_array(unsafe {
            array_from_raw(data, shape, dim, dtype)
        }?))
    })
}

/// Like `mlx_array_new_data`; the data is copied, so `dtor(data)` runs
/// before this returns (on success).
///
/// # Safety
/// As `mlx_array_new_data`; `dtor` is NULL or a function taking `data`.
#[no_mangle]
pub unsafe extern "C" fn mlx_array_new_data_managed(
    data: *mut c_void,
    shape: *const c_int,
    dim: c_int,
    dtype: c_int,
    dtor: Option<unsafe extern "C" fn(*mut c_void)>,
) -> mlx_array {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        managed(
            "mlx_array_new_data_managed",
            data,
            shape,
            dim,
            dtype,
            data,
            dtor,
        )
    }
}

/// Like `mlx_array_new_data_managed`, calling `dtor(payload)`.
///
/// # Safety
/// As `mlx_array_new_data`; `dtor` is NULL or a function taking `payload`.
#[no_mangle]
pub unsafe extern "C" fn mlx_array_new_data_managed_payload(
    data: *mut c_void,
    shape: *const c_int,
    dim: c_int,
    dtype: c_int,
    payload: *mut c_void,
    dtor: Option<unsafe extern "C" fn(*mut c_void)>,
) -> mlx_array {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        managed(
            "mlx_array_new_data_managed_payload",
            data,
            shape,
            dim,
            dtype,
            payload,
            dtor,
        )
    }
}

/// # Safety
/// As `mlx_array_new_data_managed_payload`.
unsafe fn managed(
    func: &str,
    data: *mut c_void,
    shape: *const c_int,
    dim: c_int,
    dtype: c_int,
    payload: *mut c_void,
    dtor: Option<unsafe extern "C" fn(*mut c_void)>,
) -> mlx_array {
    value(func, mlx_array::EMPTY, || {
        // SAFETY: forwarded from the caller's contract.
        let a = unsafe { array_from_raw(data, shape, dim, dtype) }?;
        if let Some(dtor) = dtor {
            // SAFETY: the copy is made, so the buffer is no longer needed;
            // the caller gave `dtor` for `payload`.
            unsafe { dtor(payload) };
        }
        Ok(new_array(a))
    })
}

/// Sets `*arr` to the array `src` holds (both then share it).
#[no_mangle]
pub extern "C" fn mlx_array_set(arr: *mut mlx_array, src: mlx_array) -> c_int {
    status("mlx_array_set", || set_array(arr, get_array(src)?))
}

/// Sets `*arr` to a copy of `data`.
///
/// # Safety
/// As `mlx_array_new_data`.
#[no_mangle]
pub unsafe extern "C" fn mlx_array_set_data(
    arr: *mut mlx_array,
    data: *const c_void,
    shape: *const c_int,
    dim: c_int,
    dtype: c_int,
) -> c_int {
    status("mlx_array_set_data", || {
        // SAFETY: forwarded from this function's contract.
        set_array(arr, unsafe { array_from_raw(data, shape, dim, dtype) }?)
    })
}

macro_rules! properties {
    ($($name:ident -> $t:ty, $fail:expr, |$a:ident| $body:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` (", stringify!($fail), " on error).")]
        #[no_mangle]
        pub extern "C" fn $name(arr: mlx_array) -> $t {
            value(stringify!($name), $fail, || {
                let $a = get_array(arr)?;
                Ok($body)
            })
        }
    )*};
}

properties! {
    mlx_array_itemsize -> usize, 0, |a| a.dtype().size();
    mlx_array_size -> usize, 0, |a| a.size();
    mlx_array_nbytes -> usize, 0, |a| a.nbytes();
    mlx_array_ndim -> usize, 0, |a| a.ndim();
    mlx_array_dtype -> c_int, 0, |a| a.dtype().mlx_val();
}

/// The dimensions; valid until the array is set or freed.
#[no_mangle]
pub extern "C" fn mlx_array_shape(arr: mlx_array) -> *const c_int {
    value("mlx_array_shape", std::ptr::null(), || {
        let obj = handle::get::<ArrayObj>(arr.ctx)?;
        let p = lock(&obj.0).array.shape().as_ptr();
        Ok(p)
    })
}

/// Row-major strides in elements; valid until the array is set or freed.
#[no_mangle]
pub extern "C" fn mlx_array_strides(arr: mlx_array) -> *const usize {
    value("mlx_array_strides", std::ptr::null(), || {
        let obj = handle::get::<ArrayObj>(arr.ctx)?;
        let p = lock(&obj.0).strides.as_ptr();
        Ok(p)
    })
}

/// The size of dimension `dim` (negative counts from the end).
#[no_mangle]
pub extern "C" fn mlx_array_dim(arr: mlx_array, dim: c_int) -> c_int {
    value("mlx_array_dim", 0, || Ok(get_array(arr)?.dim(dim)?))
}

/// Evaluates the array.
#[no_mangle]
pub extern "C" fn mlx_array_eval(arr: mlx_array) -> c_int {
    status("mlx_array_eval", || Ok(get_array(arr)?.eval()?))
}

/// Fails unless the array's dtype is `want`.
fn check_dtype(a: &Array, want: Dtype) -> Result<(), Failure> {
    if a.dtype() == want {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "the array's dtype is {}, but {} was requested",
            a.dtype(),
            want
        )))
    }
}

fn item<T: Element>(func: &str, res: *mut T, arr: mlx_array) -> c_int {
    status(func, || {
        let a = get_array(arr)?;
        check_dtype(&a, T::DTYPE)?;
        if res.is_null() {
            return Err(Failure::new(
                "expected a pointer for the result, found NULL",
            ));
        }
        let v = a.item::<T>()?;
        // SAFETY: non-null; the caller passes a pointer to a `T`.
        unsafe { res.write(v) };
        Ok(())
    })
}

fn data<T: Element>(func: &str, arr: mlx_array) -> *const T {
    value(func, std::ptr::null(), || {
        let obj = handle::get::<ArrayObj>(arr.ctx)?;
        let mut slot = lock(&obj.0);
        check_dtype(&slot.array, T::DTYPE)?;
        let host = slot.host()?;
        let start = host.offset * std::mem::size_of::<T>();
        let bytes = host.buffer.bytes();
        // `wrapping_add`: an empty array may sit at the end of its buffer.
        Ok(bytes.as_ptr().wrapping_add(start).cast::<T>())
    })
}

macro_rules! typed_accessors {
    ($($item:ident, $data:ident, $t:ty;)*) => {$(
        /// Writes the value of a one-element array of this dtype to `*res`.
        #[no_mangle]
        pub extern "C" fn $item(res: *mut $t, arr: mlx_array) -> c_int {
            item::<$t>(stringify!($item), res, arr)
        }

        /// The elements (evaluated, row-major); NULL on error. Valid until
        /// the array is set or freed.
        #[no_mangle]
        pub extern "C" fn $data(arr: mlx_array) -> *const $t {
            data::<$t>(stringify!($data), arr)
        }
    )*};
}

typed_accessors! {
    mlx_array_item_bool, mlx_array_data_bool, bool;
    mlx_array_item_uint8, mlx_array_data_uint8, u8;
    mlx_array_item_uint16, mlx_array_data_uint16, u16;
    mlx_array_item_uint32, mlx_array_data_uint32, u32;
    mlx_array_item_uint64, mlx_array_data_uint64, u64;
    mlx_array_item_int8, mlx_array_data_int8, i8;
    mlx_array_item_int16, mlx_array_data_int16, i16;
    mlx_array_item_int32, mlx_array_data_int32, i32;
    mlx_array_item_int64, mlx_array_data_int64, i64;
    mlx_array_item_float32, mlx_array_data_float32, f32;
    mlx_array_item_float64, mlx_array_data_float64, f64;
    mlx_array_item_complex64, mlx_array_data_complex64, Complex64;
    mlx_array_item_float16, mlx_array_data_float16, half::f16;
    mlx_array_item_bfloat16, mlx_array_data_bfloat16, half::bf16;
}

fn flag(
    func: &str,
    res: *mut bool,
    arr: mlx_array,
    f: impl FnOnce(&Array) -> Result<bool, Failure>,
) -> c_int {
    status(func, || {
        let a = get_array(arr)?;
        if res.is_null() {
            return Err(Failure::new(
                "expected a pointer for the result, found NULL",
            ));
        }
        let v = f(&a)?;
        // SAFETY: non-null; the caller passes a pointer to a bool.
        unsafe { res.write(v) };
        Ok(())
    })
}

/// Whether the array has been evaluated.
#[no_mangle]
pub extern "C" fn _mlx_array_is_available(res: *mut bool, arr: mlx_array) -> c_int {
    flag("_mlx_array_is_available", res, arr, |a| Ok(a.is_ready()))
}

/// Evaluates the array (evaluation here is synchronous).
#[no_mangle]
pub extern "C" fn _mlx_array_wait(arr: mlx_array) -> c_int {
    status("_mlx_array_wait", || Ok(get_array(arr)?.eval()?))
}

/// Whether the evaluated elements are dense in memory (row- or column-major).
#[no_mangle]
pub extern "C" fn _mlx_array_is_contiguous(res: *mut bool, arr: mlx_array) -> c_int {
    flag("_mlx_array_is_contiguous", res, arr, |a| {
        Ok(row_contiguous(a)? || col_contiguous(a)?)
    })
}

/// Whether the evaluated elements are row-major and dense.
#[no_mangle]
pub extern "C" fn _mlx_array_is_row_contiguous(res: *mut bool, arr: mlx_array) -> c_int {
    flag("_mlx_array_is_row_contiguous", res, arr, row_contiguous)
}

/// Whether the evaluated elements are column-major and dense.
#[no_mangle]
pub extern "C" fn _mlx_array_is_col_contiguous(res: *mut bool, arr: mlx_array) -> c_int {
    flag("_mlx_array_is_col_contiguous", res, arr, col_contiguous)
}

fn row_contiguous(a: &Array) -> Result<bool, Failure> {
    a.eval()?;
    Ok(a.data()?.is_row_contiguous(a.shape()))
}

fn col_contiguous(a: &Array) -> Result<bool, Failure> {
    a.eval()?;
    let d = a.data()?;
    let mut expect = 1isize;
    for (&n, &s) in a.shape().iter().zip(&d.strides) {
        if n == 0 {
            return Ok(true);
        }
        if n != 1 && s != expect {
            return Ok(false);
        }
        expect *= n as isize;
    }
    Ok(true)
}
