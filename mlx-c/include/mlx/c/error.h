/* mlx-rs-export: C ABI in mlx-c's names (ml-explore/mlx-c @ fba4470). */
/* Error reporting.                                                     */

#ifndef MLX_ERROR_H
#define MLX_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/** Receives the message of every failure, and the installed `data`. */
typedef void (*mlx_error_handler_func)(const char* msg, void* data);

/**
 * Installs `handler` (NULL: the default). A failing function calls it with
 * a message naming the function and saying what was expected and what was
 * found, then returns its failure value.
 *
 * The default handler prints "MLX error: <message>" to stdout and exits the
 * process with status -1, as mlx-c's does: install a handler that returns
 * to handle errors through return codes.
 *
 * `data` is passed to every call of `handler`; `dtor(data)` runs when this
 * handler is replaced (if `dtor` is not NULL). Unlike mlx-c, which passes
 * NULL instead of `data` when `dtor` is NULL, `data` is always passed.
 *
 * The handler must return normally: no longjmp, no C++ exception through
 * it (record the message, then check the return code).
 */
void mlx_set_error_handler(
    mlx_error_handler_func handler,
    void* data,
    void (*dtor)(void*));

#ifdef __cplusplus
}
#endif

#endif
