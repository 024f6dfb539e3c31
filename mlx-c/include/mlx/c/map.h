/* mlx-rs-export: C ABI in mlx-c's names (ml-explore/mlx-c @ fba4470). */
/* String-to-array maps (keyword inputs).                               */

#ifndef MLX_MAP_H
#define MLX_MAP_H

#include "mlx/c/array.h"
#include "mlx/c/string.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A map from names to arrays; holds its own references, like vectors. */
typedef struct mlx_map_string_to_array_ {
  void* ctx;
} mlx_map_string_to_array;

/** A new empty map (allocated: free it). */
mlx_map_string_to_array mlx_map_string_to_array_new(void);
/** Sets `*map` to a copy of `src` (the arrays are shared, not copied). */
int mlx_map_string_to_array_set(
    mlx_map_string_to_array* map,
    const mlx_map_string_to_array src);
int mlx_map_string_to_array_free(mlx_map_string_to_array map);
/** Inserts `value` at `key` (copied), replacing any previous value. */
int mlx_map_string_to_array_insert(
    mlx_map_string_to_array map,
    const char* key,
    const mlx_array value);
/**
 * Sets `*value` to the array at `key` (the caller frees it). Returns 0 if
 * found, 2 if `key` is absent (without calling the error handler), 1 on
 * error.
 */
int mlx_map_string_to_array_get(
    mlx_array* value,
    const mlx_map_string_to_array map,
    const char* key);

/**
 * An iterator over the entries a map had when the iterator was made, in
 * sorted key order (mlx-c's order is unspecified).
 */
typedef struct mlx_map_string_to_array_iterator_ {
  void* ctx;
  void* map_ctx;
} mlx_map_string_to_array_iterator;
/** A new iterator (free it). */
mlx_map_string_to_array_iterator mlx_map_string_to_array_iterator_new(
    mlx_map_string_to_array map);
int mlx_map_string_to_array_iterator_free(mlx_map_string_to_array_iterator it);
/**
 * Moves to the next entry: 0 with `*key` (owned by the iterator, valid until
 * it is freed) and `*value` (the caller frees it) set; 2 when done.
 */
int mlx_map_string_to_array_iterator_next(
    const char** key,
    mlx_array* value,
    mlx_map_string_to_array_iterator it);

#ifdef __cplusplus
}
#endif

#endif
