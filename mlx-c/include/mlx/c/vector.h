/* mlx-rs-export: C ABI in mlx-c's names (ml-explore/mlx-c @ fba4470). */
/* Vectors of arrays and of strings.                                    */

#ifndef MLX_VECTOR_H
#define MLX_VECTOR_H

#include "mlx/c/array.h"
#include "mlx/c/string.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A vector of arrays. It holds its own references: freeing an array handle
 * after adding it does not affect the vector, and freeing the vector does
 * not free handles obtained with mlx_vector_array_get.
 */
typedef struct mlx_vector_array_ {
  void* ctx;
} mlx_vector_array;

/** A new empty vector (allocated: free it). */
mlx_vector_array mlx_vector_array_new(void);
/** Sets `*vec` to a copy of `src` (the arrays are shared, not copied). */
int mlx_vector_array_set(mlx_vector_array* vec, const mlx_vector_array src);
int mlx_vector_array_free(mlx_vector_array vec);
/** A new vector of the `size` arrays at `data`. */
mlx_vector_array mlx_vector_array_new_data(const mlx_array* data, size_t size);
/** A new vector of one array. */
mlx_vector_array mlx_vector_array_new_value(const mlx_array val);
int mlx_vector_array_set_data(
    mlx_vector_array* vec,
    const mlx_array* data,
    size_t size);
int mlx_vector_array_set_value(mlx_vector_array* vec, const mlx_array val);
int mlx_vector_array_append_data(
    mlx_vector_array vec,
    const mlx_array* data,
    size_t size);
int mlx_vector_array_append_value(mlx_vector_array vec, const mlx_array val);
/** Number of arrays (0 on error). */
size_t mlx_vector_array_size(mlx_vector_array vec);
/** Sets `*res` to the array at `idx` (the caller frees `*res`). */
int mlx_vector_array_get(
    mlx_array* res,
    const mlx_vector_array vec,
    size_t idx);

/** A vector of strings (copied in). */
typedef struct mlx_vector_string_ {
  void* ctx;
} mlx_vector_string;

mlx_vector_string mlx_vector_string_new(void);
int mlx_vector_string_set(mlx_vector_string* vec, const mlx_vector_string src);
int mlx_vector_string_free(mlx_vector_string vec);
mlx_vector_string mlx_vector_string_new_data(const char** data, size_t size);
mlx_vector_string mlx_vector_string_new_value(const char* val);
int mlx_vector_string_set_data(
    mlx_vector_string* vec,
    const char** data,
    size_t size);
int mlx_vector_string_set_value(mlx_vector_string* vec, const char* val);
int mlx_vector_string_append_data(
    mlx_vector_string vec,
    const char** data,
    size_t size);
int mlx_vector_string_append_value(mlx_vector_string vec, const char* val);
size_t mlx_vector_string_size(mlx_vector_string vec);
/**
 * Sets `*res` to the string at `idx`, owned by the vector: valid until the
 * vector is set or freed. Do not free or modify it.
 */
int mlx_vector_string_get(char** res, const mlx_vector_string vec, size_t idx);

#ifdef __cplusplus
}
#endif

#endif
