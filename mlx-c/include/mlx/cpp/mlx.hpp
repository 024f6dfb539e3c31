// mlx-rs-export: a small RAII C++ layer over the C API (mlx/c/mlx.h).
//
//   auto forward = mlx::import_function("model.mlxfn");
//   auto out = forward({x})[0];
//
// Handles are owned by value types that free them once; failures throw
// mlx::Error with the library's message. Including this header installs an
// error handler (on first use of any wrapper) that records the message for
// the throw instead of printing and exiting.

#ifndef MLX_CPP_MLX_HPP
#define MLX_CPP_MLX_HPP

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mlx/c/mlx.h"

namespace mlx {

/// A failure reported by the library.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

inline std::string& last_error() {
  thread_local std::string message;
  return message;
}

inline void record_error(const char* msg, void*) {
  last_error() = msg ? msg : "unknown error";
}

inline void install_handler() {
  static const bool installed = (mlx_set_error_handler(record_error, nullptr, nullptr), true);
  (void)installed;
}

/// Throws the recorded message when `failed`.
inline void check(bool failed) {
  if (failed) {
    std::string msg = std::move(last_error());
    last_error().clear();
    throw Error(msg.empty() ? "mlx call failed" : msg);
  }
}

template <typename T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr mlx_dtype value = MLX_BOOL; };
template <> struct dtype_of<uint8_t> { static constexpr mlx_dtype value = MLX_UINT8; };
template <> struct dtype_of<uint16_t> { static constexpr mlx_dtype value = MLX_UINT16; };
template <> struct dtype_of<uint32_t> { static constexpr mlx_dtype value = MLX_UINT32; };
template <> struct dtype_of<uint64_t> { static constexpr mlx_dtype value = MLX_UINT64; };
template <> struct dtype_of<int8_t> { static constexpr mlx_dtype value = MLX_INT8; };
template <> struct dtype_of<int16_t> { static constexpr mlx_dtype value = MLX_INT16; };
template <> struct dtype_of<int32_t> { static constexpr mlx_dtype value = MLX_INT32; };
template <> struct dtype_of<int64_t> { static constexpr mlx_dtype value = MLX_INT64; };
template <> struct dtype_of<float> { static constexpr mlx_dtype value = MLX_FLOAT32; };
template <> struct dtype_of<double> { static constexpr mlx_dtype value = MLX_FLOAT64; };

template <typename T> const T* data(mlx_array a);
template <> inline const bool* data<bool>(mlx_array a) { return mlx_array_data_bool(a); }
template <> inline const uint8_t* data<uint8_t>(mlx_array a) { return mlx_array_data_uint8(a); }
template <> inline const uint16_t* data<uint16_t>(mlx_array a) { return mlx_array_data_uint16(a); }
template <> inline const uint32_t* data<uint32_t>(mlx_array a) { return mlx_array_data_uint32(a); }
template <> inline const uint64_t* data<uint64_t>(mlx_array a) { return mlx_array_data_uint64(a); }
template <> inline const int8_t* data<int8_t>(mlx_array a) { return mlx_array_data_int8(a); }
template <> inline const int16_t* data<int16_t>(mlx_array a) { return mlx_array_data_int16(a); }
template <> inline const int32_t* data<int32_t>(mlx_array a) { return mlx_array_data_int32(a); }
template <> inline const int64_t* data<int64_t>(mlx_array a) { return mlx_array_data_int64(a); }
template <> inline const float* data<float>(mlx_array a) { return mlx_array_data_float32(a); }
template <> inline const double* data<double>(mlx_array a) { return mlx_array_data_float64(a); }

}  // namespace detail

/// An array; copies share the underlying (immutable) array.
class Array {
 public:
  /// A copy of `values` shaped `shape` (row-major).
  template <typename T>
  Array(const std::vector<T>& values, const std::vector<int>& shape) {
    detail::install_handler();
    handle_ = mlx_array_new_data(values.data(), shape.data(), static_cast<int>(shape.size()),
                                 detail::dtype_of<T>::value);
    detail::check(!handle_.ctx);
  }
  /// Raw elements of `dtype` (copied).
  Array(const void* data, const std::vector<int>& shape, mlx_dtype dtype) {
    detail::install_handler();
    handle_ = mlx_array_new_data(data, shape.data(), static_cast<int>(shape.size()), dtype);
    detail::check(!handle_.ctx);
  }
  /// Takes ownership of a C handle.
  explicit Array(mlx_array owned) : handle_(owned) { detail::install_handler(); }

  Array(const Array& other) { detail::check(mlx_array_set(&handle_, other.handle_) != 0); }
  Array(Array&& other) noexcept : handle_(other.handle_) { other.handle_.ctx = nullptr; }
  Array& operator=(Array other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~Array() { mlx_array_free(handle_); }

  std::vector<int> shape() const {
    const int* dims = mlx_array_shape(handle_);
    detail::check(!dims && ndim() > 0);
    return std::vector<int>(dims, dims + ndim());
  }
  size_t ndim() const { return mlx_array_ndim(handle_); }
  size_t size() const { return mlx_array_size(handle_); }
  mlx_dtype dtype() const { return mlx_array_dtype(handle_); }

  /// Computes the array.
  void eval() const { detail::check(mlx_array_eval(handle_) != 0); }

  /// The elements, row-major (evaluates; throws if T is not the dtype).
  template <typename T>
  std::vector<T> to_vector() const {
    const T* p = detail::data<T>(handle_);
    detail::check(!p);
    return std::vector<T>(p, p + size());
  }

  /// MLX's printed form, "array([...], dtype=float32)".
  std::string str() const {
    mlx_string s = mlx_string_new();
    bool failed = mlx_array_tostring(&s, handle_) != 0;
    std::string text = failed ? "" : mlx_string_data(s);
    mlx_string_free(s);
    detail::check(failed);
    return text;
  }

  /// The C handle, still owned by this object.
  mlx_array handle() const { return handle_; }

 private:
  mlx_array handle_ = {nullptr};
};

/// A function imported from a file; move-only, callable from any thread.
class Function {
 public:
  explicit Function(mlx_imported_function owned) : handle_(owned) {}
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;
  Function(Function&& other) noexcept : handle_(other.handle_) { other.handle_.ctx = nullptr; }
  Function& operator=(Function&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~Function() { mlx_imported_function_free(handle_); }

  /// Calls the trace whose signature the inputs match; outputs are lazy.
  std::vector<Array> operator()(const std::vector<Array>& args,
                                const std::map<std::string, Array>& kwargs = {}) const {
    mlx_vector_array c_args = mlx_vector_array_new();
    mlx_map_string_to_array c_kwargs = mlx_map_string_to_array_new();
    mlx_vector_array c_out = mlx_vector_array_new();
    bool failed = false;
    for (const Array& a : args) {
      failed = failed || mlx_vector_array_append_value(c_args, a.handle()) != 0;
    }
    for (const auto& kv : kwargs) {
      failed = failed || mlx_map_string_to_array_insert(c_kwargs, kv.first.c_str(),
                                                        kv.second.handle()) != 0;
    }
    failed = failed || mlx_imported_function_apply_kwargs(&c_out, handle_, c_args, c_kwargs) != 0;
    std::vector<Array> outputs;
    for (size_t i = 0; !failed && i < mlx_vector_array_size(c_out); i++) {
      mlx_array out = mlx_array_new();
      failed = mlx_vector_array_get(&out, c_out, i) != 0;
      outputs.emplace_back(out);
    }
    mlx_vector_array_free(c_out);
    mlx_map_string_to_array_free(c_kwargs);
    mlx_vector_array_free(c_args);
    detail::check(failed);
    return outputs;
  }

#ifdef MLX_C_EXTENSIONS
  /// The metadata string stored in the file (extension).
  std::string metadata() const {
    mlx_string s = mlx_string_new();
    bool failed = mlx_imported_function_metadata(&s, handle_) != 0;
    std::string text = failed ? "" : mlx_string_data(s);
    mlx_string_free(s);
    detail::check(failed);
    return text;
  }

  /// One line per trace, e.g. "(float32[2, 3], bias=float32[3])" (extension).
  std::vector<std::string> signatures() const {
    mlx_vector_string v = mlx_vector_string_new();
    bool failed = mlx_imported_function_signatures(&v, handle_) != 0;
    std::vector<std::string> lines;
    for (size_t i = 0; !failed && i < mlx_vector_string_size(v); i++) {
      char* line = nullptr;
      failed = mlx_vector_string_get(&line, v, i) != 0;
      if (!failed) lines.emplace_back(line);
    }
    mlx_vector_string_free(v);
    detail::check(failed);
    return lines;
  }
#endif

 private:
  mlx_imported_function handle_ = {nullptr};
};

/// Imports the function(s) in `path` (MLX's .mlxfn or the native format).
inline Function import_function(const std::string& path) {
  detail::install_handler();
  mlx_imported_function f = mlx_imported_function_new(path.c_str());
  detail::check(!f.ctx);
  return Function(f);
}

}  // namespace mlx

#endif
