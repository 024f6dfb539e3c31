/* A tiny .npy reader and writer over the mlx-c API (little-endian, C order). */

#ifndef RUN_NPY_H
#define RUN_NPY_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlx/c/mlx.h"

/* numpy's descr for each dtype; bfloat16 (which numpy lacks) as its bits. */
static const char* npy_descr(mlx_dtype dtype) {
  switch (dtype) {
    case MLX_BOOL: return "|b1";
    case MLX_UINT8: return "|u1";
    case MLX_UINT16: return "<u2";
    case MLX_UINT32: return "<u4";
    case MLX_UINT64: return "<u8";
    case MLX_INT8: return "|i1";
    case MLX_INT16: return "<i2";
    case MLX_INT32: return "<i4";
    case MLX_INT64: return "<i8";
    case MLX_FLOAT16: return "<f2";
    case MLX_FLOAT32: return "<f4";
    case MLX_FLOAT64: return "<f8";
    case MLX_BFLOAT16: return "<u2";
    case MLX_COMPLEX64: return "<c8";
  }
  return NULL;
}

static int npy_dtype(const char* descr, mlx_dtype* out) {
  static const mlx_dtype all[] = {
      MLX_BOOL, MLX_UINT8, MLX_UINT16, MLX_UINT32, MLX_UINT64,
      MLX_INT8, MLX_INT16, MLX_INT32, MLX_INT64, MLX_FLOAT16,
      MLX_FLOAT32, MLX_FLOAT64, MLX_COMPLEX64};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
    const char* d = npy_descr(all[i]);
    /* '<' and '|' both mean "no byte swapping needed" for one-byte types. */
    if (strcmp(d + 1, descr + 1) == 0 && (descr[0] == '<' || descr[0] == '|')) {
      *out = all[i];
      return 0;
    }
  }
  return 1;
}

/* Reads `path` into `*arr`. Returns 0 on success; prints why otherwise. */
static int npy_read(const char* path, mlx_array* arr) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    return 1;
  }
  unsigned char pre[10];
  int rc = 1;
  char* header = NULL;
  void* data = NULL;
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "%s: not a .npy file\n", path);
    goto done;
  }
  size_t hlen;
  if (pre[6] == 1) {
    if (fread(pre + 8, 1, 2, f) != 2) goto truncated;
    hlen = pre[8] | (pre[9] << 8);
  } else {
    unsigned char l[4];
    if (fread(l, 1, 4, f) != 4) goto truncated;
    hlen = l[0] | (l[1] << 8) | ((size_t)l[2] << 16) | ((size_t)l[3] << 24);
  }
  header = malloc(hlen + 1);
  if (!header || fread(header, 1, hlen, f) != hlen) goto truncated;
  header[hlen] = 0;

  char descr[8] = {0};
  const char* d = strstr(header, "'descr':");
  const char* fo = strstr(header, "'fortran_order':");
  const char* s = strstr(header, "'shape':");
  if (!d || !fo || !s || sscanf(d, "'descr': '%7[^']'", descr) != 1) {
    fprintf(stderr, "%s: unreadable header: %s\n", path, header);
    goto done;
  }
  if (strncmp(fo + 16, " True", 5) == 0) {
    fprintf(stderr, "%s: Fortran order is not supported\n", path);
    goto done;
  }
  mlx_dtype dtype;
  if (npy_dtype(descr, &dtype)) {
    fprintf(stderr, "%s: unsupported dtype '%s'\n", path, descr);
    goto done;
  }
  int shape[16];
  int ndim = 0;
  size_t count = 1;
  const char* p = strchr(s, '(');
  if (!p) goto bad_shape;
  p++;
  while (*p && *p != ')') {
    char* end;
    long v = strtol(p, &end, 10);
    if (end == p) {
      p++; /* spaces and commas */
      continue;
    }
    if (ndim == 16 || v < 0) goto bad_shape;
    shape[ndim++] = (int)v;
    count *= (size_t)v;
    p = end;
  }
  size_t nbytes = count * mlx_dtype_size(dtype);
  data = malloc(nbytes ? nbytes : 1);
  if (!data || fread(data, 1, nbytes, f) != nbytes) goto truncated;
  mlx_array a = mlx_array_new_data(data, shape, ndim, dtype);
  if (!a.ctx) goto done; /* the error handler said why */
  mlx_array_set(arr, a);
  mlx_array_free(a);
  rc = 0;
  goto done;
bad_shape:
  fprintf(stderr, "%s: unreadable shape in header: %s\n", path, header);
  goto done;
truncated:
  fprintf(stderr, "%s: truncated\n", path);
done:
  free(header);
  free(data);
  fclose(f);
  return rc;
}

/* Writes `arr` to `path` (evaluates it). Returns 0 on success. */
static int npy_write(const char* path, mlx_array arr) {
  mlx_dtype dtype = mlx_array_dtype(arr);
  const void* data = NULL;
  /* One typed accessor per element width is enough to reach the bytes. */
  switch (dtype) {
    case MLX_BOOL: data = mlx_array_data_bool(arr); break;
    case MLX_UINT8: data = mlx_array_data_uint8(arr); break;
    case MLX_UINT16: data = mlx_array_data_uint16(arr); break;
    case MLX_UINT32: data = mlx_array_data_uint32(arr); break;
    case MLX_UINT64: data = mlx_array_data_uint64(arr); break;
    case MLX_INT8: data = mlx_array_data_int8(arr); break;
    case MLX_INT16: data = mlx_array_data_int16(arr); break;
    case MLX_INT32: data = mlx_array_data_int32(arr); break;
    case MLX_INT64: data = mlx_array_data_int64(arr); break;
    case MLX_FLOAT32: data = mlx_array_data_float32(arr); break;
    case MLX_FLOAT64: data = mlx_array_data_float64(arr); break;
    case MLX_COMPLEX64: data = mlx_array_data_complex64(arr); break;
    default:
      fprintf(stderr, "%s: writing %s arrays needs the half-precision "
              "accessors, which this platform's headers leave out\n",
              path, npy_descr(dtype));
      return 1;
  }
  if (!data) return 1;
  char shape[256] = "";
  size_t ndim = mlx_array_ndim(arr);
  const int* dims = mlx_array_shape(arr);
  for (size_t i = 0; i < ndim; i++) {
    char dim[32];
    snprintf(dim, sizeof dim, "%d,%s", dims[i], (ndim > 1 && i + 1 < ndim) ? " " : "");
    strncat(shape, dim, sizeof shape - strlen(shape) - 1);
  }
  if (ndim > 1) shape[strlen(shape) - 1] = 0; /* (2, 3) not (2, 3,) */
  char header[512];
  int n = snprintf(header, sizeof header,
                   "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                   npy_descr(dtype), shape);
  int total = 10 + n + 1;
  int pad = (64 - total % 64) % 64;
  memset(header + n, ' ', pad);
  header[n + pad] = '\n';
  int hlen = n + pad + 1;
  FILE* f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "%s: cannot create\n", path);
    return 1;
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  size_t nbytes = mlx_array_nbytes(arr);
  int ok = fwrite(pre, 1, 10, f) == 10 &&
           fwrite(header, 1, (size_t)hlen, f) == (size_t)hlen &&
           fwrite(data, 1, nbytes, f) == nbytes;
  if (fclose(f) != 0) ok = 0;
  if (!ok) fprintf(stderr, "%s: write failed\n", path);
  return ok ? 0 : 1;
}

#endif
