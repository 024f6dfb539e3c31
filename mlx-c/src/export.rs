//! The import side of mlx/c/export.h (`mlx_imported_function_*`), and the
//! extensions beyond mlx-c declared in mlx/c/export_ext.h: import options,
//! import from memory, signatures, metadata.

use crate::boundary::{status, value, Failure};
use crate::handle::{self, c_handle, lock, slot, Kind};
use crate::map::{get_map, mlx_map_string_to_array, MapObj};
use crate::string::{mlx_string, set_string};
use crate::vector::{
    get_arrays, mlx_vector_array, mlx_vector_string, set_arrays, set_strings, strings_of,
};
use mlx::export::{
    import_function_from_bytes, import_function_with, ImportOptions, ImportedFunction,
};
use mlx::{Array, Kwargs};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;

c_handle!(
    /// `mlx_imported_function`.
    mlx_imported_function
);
c_handle!(
    /// `mlx_import_options` (extension).
    mlx_import_options
);

/// What an `mlx_imported_function` holds (`Send + Sync`: calls from
/// several threads at once are fine).
pub struct FunctionObj(pub ImportedFunction);
impl Kind for FunctionObj {
    const NAME: &'static str = "mlx_imported_function";
}

/// What an `mlx_import_options` holds.
pub struct OptionsObj(pub Mutex<ImportOptions>);
impl Kind for OptionsObj {
    const NAME: &'static str = "mlx_import_options";
}

fn function(h: mlx_imported_function) -> Result<std::sync::Arc<FunctionObj>, Failure> {
    handle::get::<FunctionObj>(h.ctx)
}

/// The options behind a handle; an empty handle means the defaults.
fn options(h: mlx_import_options) -> Result<ImportOptions, Failure> {
    if h.ctx.is_null() {
        return Ok(ImportOptions::default());
    }
    Ok(lock(&handle::get::<OptionsObj>(h.ctx)?.0).clone())
}

fn new_function(f: ImportedFunction) -> mlx_imported_function {
    mlx_imported_function {
        ctx: handle::new(FunctionObj(f)),
    }
}

/// The path in a C string (any bytes on Unix, UTF-8 elsewhere).
///
/// # Safety
/// `file` is NULL or NUL-terminated.
unsafe fn path_arg(file: *const c_char) -> Result<std::path::PathBuf, Failure> {
    if file.is_null() {
        return Err(Failure::new("expected a file path, found NULL"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: non-null and NUL-terminated by the caller's contract.
        let bytes = unsafe { std::ffi::CStr::from_ptr(file) }.to_bytes();
        Ok(std::ffi::OsStr::from_bytes(bytes).into())
    }
    #[cfg(not(unix))]
    {
        // SAFETY: forwarded from this function's contract.
        Ok(unsafe { crate::handle::str_arg(file, "the file path") }?.into())
    }
}

/// Imports the function(s) in `file` (native format or MLX's `.mlxfn`).
///
/// # Safety
/// `file` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mlx_imported_function_new(file: *const c_char) -> mlx_imported_function {
    value(
        "mlx_imported_function_new",
        mlx_imported_function::EMPTY,
        || {
            // SAFETY: forwarded from this function's contract.
            let path = unsafe { path_arg(file) }?;
            Ok(new_function(import_function_with(
                &path,
                &ImportOptions::default(),
            )?))
        },
    )
}

/// Frees the function (an empty handle is a no-op). Arrays it returned stay
/// valid.
#[no_mangle]
pub extern "C" fn mlx_imported_function_free(xfunc: mlx_imported_function) -> c_int {
    status("mlx_imported_function_free", || {
        handle::free::<FunctionObj>(xfunc.ctx)
    })
}

fn check_out(res: *mut mlx_vector_array) -> Result<(), Failure> {
    if res.is_null() {
        return Err(Failure::new(
            "expected a pointer to an mlx_vector_array for the outputs, found NULL",
        ));
    }
    Ok(())
}

/// Calls the function on positional inputs; `*res` receives the outputs
/// (lazy: evaluated by `mlx_array_eval` or on first data access).
#[no_mangle]
pub extern "C" fn mlx_imported_function_apply(
    res: *mut mlx_vector_array,
    xfunc: mlx_imported_function,
    args: mlx_vector_array,
) -> c_int {
    status("mlx_imported_function_apply", || {
        check_out(res)?;
        let f = function(xfunc)?;
        let outputs = f.0.call(&get_arrays(args)?)?;
        set_arrays(res, outputs)
    })
}

/// Calls the function on positional and keyword inputs.
#[no_mangle]
pub extern "C" fn mlx_imported_function_apply_kwargs(
    res: *mut mlx_vector_array,
    xfunc: mlx_imported_function,
    args: mlx_vector_array,
    kwargs: mlx_map_string_to_array,
) -> c_int {
    status("mlx_imported_function_apply_kwargs", || {
        check_out(res)?;
        let f = function(xfunc)?;
        let outputs = f.0.call_kwargs(&get_arrays(args)?, &get_map(kwargs)?)?;
        set_arrays(res, outputs)
    })
}

// ----- extensions ------------------------------------------------------

/// New import options with the defaults: map the file, strict, verify
/// checksums.
#[no_mangle]
pub extern "C" fn mlx_import_options_new() -> mlx_import_options {
    value("mlx_import_options_new", mlx_import_options::EMPTY, || {
        Ok(mlx_import_options {
            ctx: handle::new(OptionsObj(Mutex::new(ImportOptions::default()))),
        })
    })
}

/// Frees the options (an empty handle is a no-op).
#[no_mangle]
pub extern "C" fn mlx_import_options_free(opts: mlx_import_options) -> c_int {
    status("mlx_import_options_free", || {
        handle::free::<OptionsObj>(opts.ctx)
    })
}

fn set_option(func: &str, opts: mlx_import_options, f: impl FnOnce(&mut ImportOptions)) -> c_int {
    status(func, || {
        f(&mut lock(&handle::get::<OptionsObj>(opts.ctx)?.0));
        Ok(())
    })
}

/// Whether to check native constants against their checksums (default
/// true); false trusts the file, as MLX does.
#[no_mangle]
pub extern "C" fn mlx_import_options_set_verify_checksums(
    opts: mlx_import_options,
    verify: bool,
) -> c_int {
    set_option("mlx_import_options_set_verify_checksums", opts, |o| {
        o.verify_checksums = verify
    })
}

/// Whether to map native constants from the file (default true) instead of
/// reading them into memory.
#[no_mangle]
pub extern "C" fn mlx_import_options_set_mmap(opts: mlx_import_options, mmap: bool) -> c_int {
    set_option("mlx_import_options_set_mmap", opts, |o| o.mmap = mmap)
}

/// Whether to reject MLX files with bytes after the last function (default
/// true).
#[no_mangle]
pub extern "C" fn mlx_import_options_set_strict(opts: mlx_import_options, strict: bool) -> c_int {
    set_option("mlx_import_options_set_strict", opts, |o| o.strict = strict)
}

/// Imports `file` with options (an empty options handle means defaults).
///
/// # Safety
/// `file` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mlx_imported_function_new_with_options(
    file: *const c_char,
    opts: mlx_import_options,
) -> mlx_imported_function {
    value(
        "mlx_imported_function_new_with_options",
        mlx_imported_function::EMPTY,
        || {
            // SAFETY: forwarded from this function's contract.
            let path = unsafe { path_arg(file) }?;
            Ok(new_function(import_function_with(&path, &options(opts)?)?))
        },
    )
}

/// Imports a file's `size` bytes at `data` (copied: the caller keeps its
/// buffer).
///
/// # Safety
/// `data` points to `size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn mlx_imported_function_new_from_bytes(
    data: *const c_void,
    size: usize,
    opts: mlx_import_options,
) -> mlx_imported_function {
    value(
        "mlx_imported_function_new_from_bytes",
        mlx_imported_function::EMPTY,
        || {
            if data.is_null() && size > 0 {
                return Err(Failure::new(format!("expected {size} bytes, found NULL")));
            }
            let bytes = if size == 0 {
                Vec::new()
            } else {
                // SAFETY: non-null and `size` readable bytes by the contract.
                unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }.to_vec()
            };
            Ok(new_function(import_function_from_bytes(
                bytes,
                "<memory>",
                &options(opts)?,
            )?))
        },
    )
}

/// Writes the metadata string stored in the file into `*res`.
#[no_mangle]
pub extern "C" fn mlx_imported_function_metadata(
    res: *mut mlx_string,
    xfunc: mlx_imported_function,
) -> c_int {
    status("mlx_imported_function_metadata", || {
        set_string(res, function(xfunc)?.0.metadata())
    })
}

/// Writes one line per exported trace into `*res`, e.g.
/// `(float32[2, 3], bias=float32[3])`.
#[no_mangle]
pub extern "C" fn mlx_imported_function_signatures(
    res: *mut mlx_vector_string,
    xfunc: mlx_imported_function,
) -> c_int {
    status("mlx_imported_function_signatures", || {
        let f = function(xfunc)?;
        set_strings(
            res,
            strings_of(f.0.signatures().iter().map(|s| s.to_string())),
        )
    })
}

/// Writes trace `index`'s inputs as placeholder arrays (shape and dtype,
/// no data) into `*args` and `*kwargs`.
#[no_mangle]
pub extern "C" fn mlx_imported_function_signature_inputs(
    args: *mut mlx_vector_array,
    kwargs: *mut mlx_map_string_to_array,
    xfunc: mlx_imported_function,
    index: usize,
) -> c_int {
    status("mlx_imported_function_signature_inputs", || {
        let f = function(xfunc)?;
        let sigs = f.0.signatures();
        let sig = sigs.get(index).ok_or_else(|| {
            Failure::new(format!(
                "trace {index} does not exist: the file has {} traces",
                sigs.len()
            ))
        })?;
        let positional = sig
            .positional
            .iter()
            .map(|s| Array::placeholder(&s.shape, s.dtype))
            .collect();
        let keyword: Kwargs = sig
            .keyword
            .iter()
            .map(|(k, s)| (k.clone(), Array::placeholder(&s.shape, s.dtype)))
            .collect();
        set_arrays(args, positional)?;
        handle::set(
            slot(kwargs),
            keyword,
            |m| MapObj(Mutex::new(m)),
            |obj, m| *lock(&obj.0) = m,
        )
    })
}

/// Whether the file was exported shapeless (sizes may change per call).
#[no_mangle]
pub extern "C" fn mlx_imported_function_shapeless(
    res: *mut bool,
    xfunc: mlx_imported_function,
) -> c_int {
    status("mlx_imported_function_shapeless", || {
        let shapeless = function(xfunc)?.0.shapeless();
        if res.is_null() {
            return Err(Failure::new(
                "expected a pointer for the result, found NULL",
            ));
        }
        // SAFETY: non-null; the caller passes a pointer to a bool.
        unsafe { res.write(shapeless) };
        Ok(())
    })
}

/// The number of live handles of every type (a program can check it is 0
/// before exit to find handles it did not free).
#[no_mangle]
pub extern "C" fn _mlx_live_handles() -> usize {
    value("_mlx_live_handles", 0, || Ok(handle::live_count()))
}
