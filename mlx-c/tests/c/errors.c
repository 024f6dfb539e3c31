/*
 * Error paths of the C API: each check makes one bad call and expects a
 * failure value, one call of the error handler, and a message naming the
 * problem. Prints "ok NAME: MESSAGE" per check; exits 1 if any check fails.
 *
 *   errors FIXTURE.mlxfn GARBAGE_FILE     run the checks
 *   errors --default-handler               fail once with no handler set:
 *                                          mlx-c's default prints and exits
 */

#include <stdio.h>
#include <string.h>

#include "mlx/c/mlx.h"

static char last[4096];
static int calls = 0;

static void record(const char* msg, void* data) {
  calls++;
  snprintf(last, sizeof last, "%s", msg);
  (*(int*)data)++;
}

static int handler_data = 0;
static int failures = 0;

/* Expects `failed` and exactly one handler call whose message has `want`. */
static void expect(const char* name, int failed, int calls_before, const char* want) {
  int ok = failed && calls == calls_before + 1 && strstr(last, want) != NULL;
  printf("%s %s: %s\n", ok ? "ok" : "FAIL", name, calls == calls_before ? "(handler not called)" : last);
  if (!ok) {
    failures++;
    if (failed && !strstr(last, want)) printf("  expected the message to contain: %s\n", want);
  }
  last[0] = 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--default-handler") == 0) {
    printf("before the error\n");
    mlx_array empty = mlx_array_new();
    mlx_array_eval(empty);
    printf("not reached\n");
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: %s FIXTURE.mlxfn GARBAGE_FILE\n", argv[0]);
    return 2;
  }
  mlx_set_error_handler(record, &handler_data, NULL);
  int c;

  c = calls;
  mlx_imported_function missing = mlx_imported_function_new("/nonexistent/dir/model.mlxfn");
  expect("bad path", missing.ctx == NULL, c, "/nonexistent/dir/model.mlxfn");

  c = calls;
  mlx_imported_function garbage = mlx_imported_function_new(argv[2]);
  expect("bad file", garbage.ctx == NULL, c, argv[2]);

  c = calls;
  mlx_imported_function null_path = mlx_imported_function_new(NULL);
  expect("NULL path", null_path.ctx == NULL, c, "found NULL");

  mlx_imported_function fn = mlx_imported_function_new(argv[1]);
  if (!fn.ctx) {
    printf("FAIL cannot import %s: %s\n", argv[1], last);
    return 1;
  }

  /* The kwargs fixture takes x:(2,3) f32 with keywords; call it with x:(3,)
     and no keywords. */
  float three[3] = {1, 2, 3};
  int shape3[1] = {3};
  mlx_array x = mlx_array_new_data(three, shape3, 1, MLX_FLOAT32);
  mlx_vector_array args = mlx_vector_array_new_value(x);
  mlx_vector_array res = mlx_vector_array_new();
  c = calls;
  expect("wrong signature", mlx_imported_function_apply(&res, fn, args) != 0, c,
         "no exported signature matches");

  c = calls;
  expect("wrong dtype (data)", mlx_array_data_int32(x) == NULL, c,
         "dtype is float32, but int32 was requested");

  float one = 2.5f;
  mlx_array scalar = mlx_array_new_data(&one, NULL, 0, MLX_FLOAT32);
  int32_t i32 = 0;
  c = calls;
  expect("wrong dtype (item)", mlx_array_item_int32(&i32, scalar) != 0, c,
         "dtype is float32, but int32 was requested");
  float f32 = 0;
  if (mlx_array_item_float32(&f32, scalar) != 0 || f32 != 2.5f) {
    printf("FAIL item_float32 of a 2.5 scalar gave %g\n", f32);
    failures++;
  }

  c = calls;
  expect("item of a non-scalar", mlx_array_item_float32(&f32, x) != 0, c, "not 1");

  c = calls;
  expect("unknown dtype", mlx_array_new_data(three, shape3, 1, (mlx_dtype)99).ctx == NULL, c,
         "unknown mlx_dtype 99");

  int bad_shape[1] = {-2};
  c = calls;
  expect("negative dimension", mlx_array_new_data(three, bad_shape, 1, MLX_FLOAT32).ctx == NULL,
         c, "negative dimension");

  c = calls;
  expect("NULL data", mlx_array_new_data(NULL, shape3, 1, MLX_FLOAT32).ctx == NULL, c,
         "found NULL");

  mlx_array empty = mlx_array_new();
  c = calls;
  expect("empty array handle", mlx_array_eval(empty) != 0, c,
         "expected a non-empty mlx_array");

  mlx_imported_function no_fn = {NULL};
  c = calls;
  expect("empty function handle", mlx_imported_function_apply(&res, no_fn, args) != 0, c,
         "expected a non-empty mlx_imported_function");

  c = calls;
  expect("NULL result pointer", mlx_imported_function_apply(NULL, fn, args) != 0, c,
         "found NULL");

  mlx_array gone = mlx_array_new_float(1.0f);
  mlx_array_free(gone);
  c = calls;
  expect("freed handle used", mlx_array_ndim(gone) == 0, c, "is not live");
  c = calls;
  expect("double free", mlx_array_free(gone) != 0, c, "freed already");

  /* A handle of one type passed as another (only possible with a cast). */
  mlx_string s = mlx_string_new_data("text");
  mlx_array wrong = {s.ctx};
  c = calls;
  expect("mistyped handle", mlx_array_ndim(wrong) == 0, c,
         "found a handle to an mlx_string");
  mlx_string_free(s);

  mlx_array out = mlx_array_new();
  c = calls;
  expect("vector index out of range", mlx_vector_array_get(&out, args, 5) != 0, c,
         "index 5 is out of range for a vector of 1 arrays");

  mlx_map_string_to_array map = mlx_map_string_to_array_new();
  c = calls;
  int got = mlx_map_string_to_array_get(&out, map, "absent");
  if (got != 2 || calls != c) {
    printf("FAIL missing key: expected 2 without the handler, got %d\n", got);
    failures++;
  } else {
    printf("ok missing key: 2, handler not called\n");
  }

#ifdef MLX_C_EXTENSIONS
  const char truncated[] = "\x93NUMPY-not-a-function";
  c = calls;
  expect("bytes that are not a function",
         mlx_imported_function_new_from_bytes(truncated, sizeof truncated - 1,
                                              (mlx_import_options){NULL}).ctx == NULL,
         c, "<memory>");
  mlx_vector_array sig_args = mlx_vector_array_new();
  mlx_map_string_to_array sig_kwargs = mlx_map_string_to_array_new();
  c = calls;
  expect("signature index out of range",
         mlx_imported_function_signature_inputs(&sig_args, &sig_kwargs, fn, 7) != 0, c,
         "trace 7 does not exist: the file has 1 traces");
  mlx_vector_array_free(sig_args);
  mlx_map_string_to_array_free(sig_kwargs);
#endif

  /* The handler's data pointer reached every call. */
  if (handler_data != calls) {
    printf("FAIL handler data: counted %d of %d calls\n", handler_data, calls);
    failures++;
  }

  mlx_map_string_to_array_free(map);
  mlx_array_free(out);
  mlx_array_free(empty);
  mlx_array_free(scalar);
  mlx_vector_array_free(res);
  mlx_vector_array_free(args);
  mlx_array_free(x);
  mlx_imported_function_free(fn);
#ifdef MLX_C_EXTENSIONS
  if (_mlx_live_handles() != 0) {
    printf("FAIL %zu handles still live at exit\n", _mlx_live_handles());
    failures++;
  }
#endif
  printf("%d check%s failed\n", failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
