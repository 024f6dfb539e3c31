/* mlx-rs-export: C ABI in mlx-c's names (ml-explore/mlx-c @ fba4470). */
/* Strings returned by the library.                                     */

#ifndef MLX_STRING_H
#define MLX_STRING_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Conventions of every header here, as in mlx-c:
 * - Objects are opaque handles `{ void* ctx; }` passed by value. A handle
 *   from `*_new()` with no arguments is empty (ctx == NULL) and owns
 *   nothing; functions that take a `T*` result fill an empty handle with a
 *   new object, or replace the contents of a live one in place.
 * - The caller owns every handle it gets (from `*_new*` or as a result) and
 *   frees it exactly once with `*_free`. Freeing an empty handle is a no-op;
 *   freeing a handle twice, or using a freed one, is reported as an error.
 * - Functions returning `int` return 0 on success and non-zero on failure,
 *   after calling the error handler (see error.h). Functions returning a
 *   handle return an empty one on failure; pointer getters return NULL.
 * - Every function is thread-safe; a handle may be used from several
 *   threads at once.
 */

/** A string owned by the library. */
typedef struct mlx_string_ {
  void* ctx;
} mlx_string;

/** An empty handle (no allocation, nothing to free). */
mlx_string mlx_string_new(void);

/** A new string holding a copy of `str` (NUL-terminated). Free it. */
mlx_string mlx_string_new_data(const char* str);

/** Sets `*str` to a copy of `src`'s text. */
int mlx_string_set(mlx_string* str, const mlx_string src);

/**
 * The NUL-terminated text, owned by the string: valid until the string is
 * set or freed. NULL on error.
 */
const char* mlx_string_data(mlx_string str);

/** Frees the string. */
int mlx_string_free(mlx_string str);

#ifdef __cplusplus
}
#endif

#endif
