/*
 * Imports an exported function (Python MLX's .mlxfn or this library's
 * native format) and calls it, using only mlx-c's names (the few
 * extensions used are guarded by MLX_C_EXTENSIONS, so this also builds
 * against mlx-c itself).
 *
 *   run FILE [INPUT.npy ...] [--kw NAME=INPUT.npy ...] [--out DIR]
 *       [--trust] [--from-bytes] [--quiet]
 *
 * Inputs come from .npy files; with none given, the inputs of the file's
 * first trace are made here in C (0, 0.1, 0.2, ...). Outputs are printed,
 * and written to DIR/out0.npy, DIR/out1.npy, ... with --out.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlx/c/mlx.h"
#include "npy.h"

static int errors = 0;

/* Report and carry on: every call's return code says what to do next. */
static void on_error(const char* msg, void* data) {
  (void)data;
  errors++;
  fprintf(stderr, "error: %s\n", msg);
}

static void print_array(const char* name, mlx_array arr) {
  mlx_string str = mlx_string_new();
  if (mlx_array_tostring(&str, arr) == 0) {
    printf("%s =\n%s\n", name, mlx_string_data(str));
  }
  mlx_string_free(str);
}

#ifdef MLX_C_EXTENSIONS
/* Fills `args`/`kwargs` with made-up inputs for the file's first trace. */
static int make_inputs(mlx_imported_function fn, mlx_vector_array args,
                       mlx_map_string_to_array kwargs) {
  mlx_vector_array shapes = mlx_vector_array_new();
  mlx_map_string_to_array kw_shapes = mlx_map_string_to_array_new();
  int rc = mlx_imported_function_signature_inputs(&shapes, &kw_shapes, fn, 0);
  /* Positional inputs, then keyword inputs in key order. */
  size_t n = rc ? 0 : mlx_vector_array_size(shapes);
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(kw_shapes);
  for (size_t i = 0; rc == 0; i++) {
    mlx_array spec = mlx_array_new();
    const char* key = NULL;
    if (i < n) {
      rc = mlx_vector_array_get(&spec, shapes, i);
    } else if (mlx_map_string_to_array_iterator_next(&key, &spec, it) != 0) {
      mlx_array_free(spec);
      break;
    }
    mlx_dtype dtype = mlx_array_dtype(spec);
    size_t count = mlx_array_size(spec);
    size_t item = mlx_dtype_size(dtype);
    unsigned char* data = calloc(count ? count : 1, item);
    for (size_t j = 0; j < count; j++) {
      double v = 0.1 * (double)j;
      switch (dtype) {
        case MLX_FLOAT32: ((float*)data)[j] = (float)v; break;
        case MLX_FLOAT64: ((double*)data)[j] = v; break;
        case MLX_INT32: ((int32_t*)data)[j] = (int32_t)j; break;
        case MLX_INT64: ((int64_t*)data)[j] = (int64_t)j; break;
        default: break; /* zeros */
      }
    }
    mlx_array input = mlx_array_new_data(data, mlx_array_shape(spec),
                                         (int)mlx_array_ndim(spec), dtype);
    free(data);
    if (!input.ctx) {
      rc = 1;
    } else if (key) {
      rc = mlx_map_string_to_array_insert(kwargs, key, input);
    } else {
      rc = mlx_vector_array_append_value(args, input);
    }
    mlx_array_free(input);
    mlx_array_free(spec);
  }
  mlx_map_string_to_array_iterator_free(it);
  mlx_map_string_to_array_free(kw_shapes);
  mlx_vector_array_free(shapes);
  return rc;
}

static mlx_imported_function import_from_bytes(const char* path,
                                               mlx_import_options opts) {
  mlx_imported_function fn = {NULL};
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    return fn;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* bytes = malloc(size > 0 ? (size_t)size : 1);
  if (bytes && fread(bytes, 1, (size_t)size, f) == (size_t)size) {
    fn = mlx_imported_function_new_from_bytes(bytes, (size_t)size, opts);
  }
  free(bytes);
  fclose(f);
  return fn;
}
#endif

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: %s FILE [INPUT.npy ...] [--kw NAME=INPUT.npy ...] "
            "[--out DIR] [--trust] [--from-bytes] [--quiet]\n",
            argv[0]);
    return 2;
  }
  mlx_set_error_handler(on_error, NULL, NULL);

  const char* file = argv[1];
  const char* out_dir = NULL;
  int trust = 0, from_bytes = 0, quiet = 0, failed = 0;
  mlx_vector_array args = mlx_vector_array_new();
  mlx_map_string_to_array kwargs = mlx_map_string_to_array_new();
  mlx_vector_array outputs = mlx_vector_array_new();
  mlx_array input = mlx_array_new();
  mlx_imported_function fn = {NULL};

  for (int i = 2; i < argc && !failed; i++) {
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (strcmp(argv[i], "--trust") == 0) {
      trust = 1;
    } else if (strcmp(argv[i], "--from-bytes") == 0) {
      from_bytes = 1;
    } else if (strcmp(argv[i], "--quiet") == 0) {
      quiet = 1;
    } else if (strcmp(argv[i], "--kw") == 0 && i + 1 < argc) {
      char* spec = argv[++i];
      char* eq = strchr(spec, '=');
      if (!eq) {
        fprintf(stderr, "--kw wants NAME=FILE.npy, got %s\n", spec);
        failed = 1;
        break;
      }
      *eq = 0;
      failed = npy_read(eq + 1, &input) ||
               mlx_map_string_to_array_insert(kwargs, spec, input);
    } else {
      failed = npy_read(argv[i], &input) ||
               mlx_vector_array_append_value(args, input);
    }
  }

#ifdef MLX_C_EXTENSIONS
  mlx_import_options opts = mlx_import_options_new();
  if (!failed && trust) mlx_import_options_set_verify_checksums(opts, false);
  if (!failed) {
    fn = from_bytes ? import_from_bytes(file, opts)
                    : mlx_imported_function_new_with_options(file, opts);
  }
  mlx_import_options_free(opts);
#else
  if (trust || from_bytes) {
    fprintf(stderr, "--trust and --from-bytes need mlx-rs-export's extensions\n");
    failed = 1;
  }
  if (!failed) fn = mlx_imported_function_new(file);
#endif
  failed = failed || !fn.ctx;

#ifdef MLX_C_EXTENSIONS
  if (!failed && !quiet) {
    mlx_string meta = mlx_string_new();
    mlx_vector_string sigs = mlx_vector_string_new();
    if (mlx_imported_function_metadata(&meta, fn) == 0 &&
        mlx_imported_function_signatures(&sigs, fn) == 0) {
      printf("metadata: \"%s\"\n", mlx_string_data(meta));
      for (size_t i = 0; i < mlx_vector_string_size(sigs); i++) {
        char* sig = NULL;
        mlx_vector_string_get(&sig, sigs, i);
        printf("trace %zu: %s\n", i, sig);
      }
    }
    mlx_vector_string_free(sigs);
    mlx_string_free(meta);
  }
  if (!failed && mlx_vector_array_size(args) == 0 && argc == 2) {
    failed = make_inputs(fn, args, kwargs);
  }
#endif

  if (!failed) {
    failed = mlx_imported_function_apply_kwargs(&outputs, fn, args, kwargs);
  }
  for (size_t i = 0; !failed && i < mlx_vector_array_size(outputs); i++) {
    mlx_array out = mlx_array_new();
    failed = mlx_vector_array_get(&out, outputs, i) || mlx_array_eval(out);
    if (!failed && !quiet) {
      char name[32];
      snprintf(name, sizeof name, "output %zu", i);
      print_array(name, out);
    }
    if (!failed && out_dir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/out%zu.npy", out_dir, i);
      failed = npy_write(path, out);
    }
    mlx_array_free(out);
  }

  mlx_imported_function_free(fn);
  mlx_array_free(input);
  mlx_vector_array_free(outputs);
  mlx_map_string_to_array_free(kwargs);
  mlx_vector_array_free(args);
  if (failed || errors) {
    fprintf(stderr, "failed (%d error%s reported)\n", errors, errors == 1 ? "" : "s");
    return 1;
  }
  return 0;
}
