/* mlx-rs-export: C ABI in mlx-c's names (ml-explore/mlx-c @ fba4470). */
/* Importing and calling exported functions.                            */

#ifndef MLX_EXPORT_H
#define MLX_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "mlx/c/array.h"
#include "mlx/c/map.h"
#include "mlx/c/string.h"
#include "mlx/c/vector.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Only the import side of mlx-c's export.h: exporting needs closures
 * (closure.h) built from MLX ops (ops.h), which this library does not
 * offer through C.
 */

/**
 * A function read from a file written by mlx.core.export_function (Python
 * or C++ MLX, `.mlxfn`) or by this library's Rust API (native format). It
 * holds every trace of the file; a call runs the one whose signature its
 * inputs match.
 */
typedef struct mlx_imported_function_ {
  void* ctx;
} mlx_imported_function;

/** Imports `file`. Empty handle (after the error handler) on failure. */
mlx_imported_function mlx_imported_function_new(const char* file);
/** Frees the function; arrays it returned stay valid. */
int mlx_imported_function_free(mlx_imported_function xfunc);
/**
 * Calls the function on positional inputs. `*res` receives the outputs
 * (the caller frees it): lazy arrays, computed by mlx_array_eval or on
 * first data access. Fails, listing the file's signatures, when the inputs
 * match none.
 */
int mlx_imported_function_apply(
    mlx_vector_array* res,
    const mlx_imported_function xfunc,
    const mlx_vector_array args);
/** As mlx_imported_function_apply, with keyword inputs. */
int mlx_imported_function_apply_kwargs(
    mlx_vector_array* res,
    const mlx_imported_function xfunc,
    const mlx_vector_array args,
    const mlx_map_string_to_array kwargs);

/* ===================================================================== */
/* Extensions: not in mlx-c. Guarded by MLX_C_EXTENSIONS (defined here). */
/* ===================================================================== */
#define MLX_C_EXTENSIONS 1

/** Extension. How to import (native files' checks, mapping). */
typedef struct mlx_import_options_ {
  void* ctx;
} mlx_import_options;

/**
 * Extension. New options with the defaults: map native files, verify
 * checksums, strict. An empty handle (mlx_import_options{NULL}) also means
 * the defaults wherever options are taken. Free it.
 */
mlx_import_options mlx_import_options_new(void);
/** Extension. */
int mlx_import_options_free(mlx_import_options opts);
/**
 * Extension. Whether to check native constants against their checksums
 * (default true). false trusts the file, as MLX does with its own files.
 */
int mlx_import_options_set_verify_checksums(
    mlx_import_options opts,
    bool verify);
/**
 * Extension. Whether to map native constants from the file and use them in
 * place (default true; the file must not change while the function lives),
 * or read them into memory.
 */
int mlx_import_options_set_mmap(mlx_import_options opts, bool mmap);
/** Extension. Whether to reject MLX files with trailing bytes (default true). */
int mlx_import_options_set_strict(mlx_import_options opts, bool strict);

/** Extension. mlx_imported_function_new with options. */
mlx_imported_function mlx_imported_function_new_with_options(
    const char* file,
    const mlx_import_options opts);
/**
 * Extension. Imports a file's `size` bytes at `data` (either format). The
 * bytes are copied: the caller keeps its buffer. Free the result.
 */
mlx_imported_function mlx_imported_function_new_from_bytes(
    const void* data,
    size_t size,
    const mlx_import_options opts);
/** Extension. Writes the file's metadata string into `*res` (caller frees). */
int mlx_imported_function_metadata(
    mlx_string* res,
    const mlx_imported_function xfunc);
/**
 * Extension. Writes one line per trace into `*res` (caller frees), e.g.
 * "(float32[2, 3], bias=float32[3])"; shapeless files show ranks.
 */
int mlx_imported_function_signatures(
    mlx_vector_string* res,
    const mlx_imported_function xfunc);
/**
 * Extension. Writes trace `index`'s inputs into `*args` and `*kwargs`
 * (caller frees both) as placeholder arrays: shape and dtype only; reading
 * their data is an error.
 */
int mlx_imported_function_signature_inputs(
    mlx_vector_array* args,
    mlx_map_string_to_array* kwargs,
    const mlx_imported_function xfunc,
    size_t index);
/** Extension. Whether the file was exported shapeless. */
int mlx_imported_function_shapeless(
    bool* res,
    const mlx_imported_function xfunc);

/**
 * Extension, a debugging aid: the number of live handles of every type.
 * A program that freed everything it got sees 0.
 */
size_t _mlx_live_handles(void);

#ifdef __cplusplus
}
#endif

#endif
