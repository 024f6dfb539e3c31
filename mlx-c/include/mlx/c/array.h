/* mlx-rs-export: C ABI in mlx-c's names (ml-explore/mlx-c @ fba4470). */
/* N-dimensional arrays and their element types.                        */

#ifndef MLX_ARRAY_H
#define MLX_ARRAY_H

#include "mlx/c/string.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* complex64 elements: two floats, real then imaginary. */
#ifdef _MSC_VER
#define _CRT_USE_C_COMPLEX_H
#include <complex.h>
typedef _Fcomplex mlx_complex64_t;
#elif defined(__cplusplus)
/* C++ has no `float _Complex` in the standard; GCC and Clang accept it. */
typedef float _Complex mlx_complex64_t;
#else
#include <complex.h>
typedef float _Complex mlx_complex64_t;
#endif

#include "mlx/c/half.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An N-dimensional array (see string.h for handle conventions). */
typedef struct mlx_array_ {
  void* ctx;
} mlx_array;

/** An empty array handle, for initialising variables. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((unused))
#endif
static mlx_array mlx_array_empty;

/** Element type. The values are MLX's numbering. */
typedef enum mlx_dtype_ {
  MLX_BOOL,
  MLX_UINT8,
  MLX_UINT16,
  MLX_UINT32,
  MLX_UINT64,
  MLX_INT8,
  MLX_INT16,
  MLX_INT32,
  MLX_INT64,
  MLX_FLOAT16,
  MLX_FLOAT32,
  MLX_FLOAT64,
  MLX_BFLOAT16,
  MLX_COMPLEX64,
} mlx_dtype;

/** Bytes per element of `dtype` (0 and an error for an unknown value). */
size_t mlx_dtype_size(mlx_dtype dtype);

/**
 * Writes MLX's printed form of the array, e.g. "array([1, 2], dtype=int32)",
 * into `*str` (evaluates the array). The caller frees `*str`.
 */
int mlx_array_tostring(mlx_string* str, const mlx_array arr);

/** An empty handle (no allocation, nothing to free). */
mlx_array mlx_array_new(void);

/** Frees the array. Arrays shared with vectors, maps or outputs stay alive. */
int mlx_array_free(mlx_array arr);

/* New 0-d arrays. The caller frees the result. */
mlx_array mlx_array_new_bool(bool val);
/** int32. */
mlx_array mlx_array_new_int(int val);
mlx_array mlx_array_new_float32(float val);
/** Same as mlx_array_new_float32. */
mlx_array mlx_array_new_float(float val);
mlx_array mlx_array_new_float64(double val);
/** Same as mlx_array_new_float64. */
mlx_array mlx_array_new_double(double val);
/** complex64. */
mlx_array mlx_array_new_complex(float real_val, float imag_val);

/**
 * A new array holding a copy of `data`: row-major elements of `dtype` whose
 * `dim` dimensions are in `shape` (`shape` may be NULL when `dim` is 0).
 * The caller keeps `data` and frees the result.
 */
mlx_array mlx_array_new_data(
    const void* data,
    const int* shape,
    int dim,
    mlx_dtype dtype);

/**
 * As mlx_array_new_data. The data is copied, so on success `dtor(data)` is
 * called before this returns (the buffer is no longer needed); on failure
 * it is not called and the caller still owns `data`.
 */
mlx_array mlx_array_new_data_managed(
    void* data,
    const int* shape,
    int dim,
    mlx_dtype dtype,
    void (*dtor)(void*));

/** As mlx_array_new_data_managed, calling `dtor(payload)`. */
mlx_array mlx_array_new_data_managed_payload(
    void* data,
    const int* shape,
    int dim,
    mlx_dtype dtype,
    void* payload,
    void (*dtor)(void*));

/* Set `*arr` (an empty handle gets a new array; a live one is replaced in
   place, which invalidates pointers previously read from it). */
int mlx_array_set(mlx_array* arr, const mlx_array src);
int mlx_array_set_bool(mlx_array* arr, bool val);
int mlx_array_set_int(mlx_array* arr, int val);
int mlx_array_set_float32(mlx_array* arr, float val);
int mlx_array_set_float(mlx_array* arr, float val);
int mlx_array_set_float64(mlx_array* arr, double val);
int mlx_array_set_double(mlx_array* arr, double val);
int mlx_array_set_complex(mlx_array* arr, float real_val, float imag_val);
int mlx_array_set_data(
    mlx_array* arr,
    const void* data,
    const int* shape,
    int dim,
    mlx_dtype dtype);

/* Properties (0 on error). */
size_t mlx_array_itemsize(const mlx_array arr);
size_t mlx_array_size(const mlx_array arr);
size_t mlx_array_nbytes(const mlx_array arr);
size_t mlx_array_ndim(const mlx_array arr);
/** The `ndim` dimensions, owned by the array (valid until set or freed). */
const int* mlx_array_shape(const mlx_array arr);
/**
 * Row-major strides in elements, owned by the array. They describe the
 * pointers mlx_array_data_* return, which are always row-major.
 */
const size_t* mlx_array_strides(const mlx_array arr);
/** Size of dimension `dim` (negative counts from the end). */
int mlx_array_dim(const mlx_array arr, int dim);
/** The element type (MLX_BOOL on error). */
mlx_dtype mlx_array_dtype(const mlx_array arr);

/** Computes the array (outputs of imported functions are lazy). */
int mlx_array_eval(mlx_array arr);

/*
 * The value of a one-element array, written to `*res`. Fails (non-zero)
 * when the array has not exactly one element or its dtype is not the one
 * named (mlx-c reinterprets; here the dtype must match).
 */
int mlx_array_item_bool(bool* res, const mlx_array arr);
int mlx_array_item_uint8(uint8_t* res, const mlx_array arr);
int mlx_array_item_uint16(uint16_t* res, const mlx_array arr);
int mlx_array_item_uint32(uint32_t* res, const mlx_array arr);
int mlx_array_item_uint64(uint64_t* res, const mlx_array arr);
int mlx_array_item_int8(int8_t* res, const mlx_array arr);
int mlx_array_item_int16(int16_t* res, const mlx_array arr);
int mlx_array_item_int32(int32_t* res, const mlx_array arr);
int mlx_array_item_int64(int64_t* res, const mlx_array arr);
int mlx_array_item_float32(float* res, const mlx_array arr);
int mlx_array_item_float64(double* res, const mlx_array arr);
int mlx_array_item_complex64(mlx_complex64_t* res, const mlx_array arr);
#ifdef HAS_FLOAT16
int mlx_array_item_float16(float16_t* res, const mlx_array arr);
#endif
#ifdef HAS_BFLOAT16
int mlx_array_item_bfloat16(bfloat16_t* res, const mlx_array arr);
#endif

/*
 * The elements, row-major and contiguous, owned by the array: valid until
 * it is set or freed. The array is evaluated if needed (mlx-c returns NULL
 * for an unevaluated array). NULL, after the error handler, when the dtype
 * is not the one named or evaluation fails.
 */
const bool* mlx_array_data_bool(const mlx_array arr);
const uint8_t* mlx_array_data_uint8(const mlx_array arr);
const uint16_t* mlx_array_data_uint16(const mlx_array arr);
const uint32_t* mlx_array_data_uint32(const mlx_array arr);
const uint64_t* mlx_array_data_uint64(const mlx_array arr);
const int8_t* mlx_array_data_int8(const mlx_array arr);
const int16_t* mlx_array_data_int16(const mlx_array arr);
const int32_t* mlx_array_data_int32(const mlx_array arr);
const int64_t* mlx_array_data_int64(const mlx_array arr);
const float* mlx_array_data_float32(const mlx_array arr);
const double* mlx_array_data_float64(const mlx_array arr);
const mlx_complex64_t* mlx_array_data_complex64(const mlx_array arr);
#ifdef HAS_FLOAT16
const float16_t* mlx_array_data_float16(const mlx_array arr);
#endif
#ifdef HAS_BFLOAT16
const bfloat16_t* mlx_array_data_bfloat16(const mlx_array arr);
#endif

/* Internal in mlx-c too: use at your own risk. */
/** Whether the array has been evaluated. */
int _mlx_array_is_available(bool* res, const mlx_array arr);
/** Evaluates the array (evaluation is synchronous here). */
int _mlx_array_wait(const mlx_array arr);
/** Layout of the evaluated elements (before any row-major copy). */
int _mlx_array_is_contiguous(bool* res, const mlx_array arr);
int _mlx_array_is_row_contiguous(bool* res, const mlx_array arr);
int _mlx_array_is_col_contiguous(bool* res, const mlx_array arr);

#ifdef __cplusplus
}
#endif

#endif
