// Imports an exported function and calls it from C++ through the RAII
// header mlx/cpp/mlx.hpp:
//
//   run FILE INPUT.npy [INPUT.npy ...]
//
// Reads float32/int32 .npy inputs, prints each output's shape and its
// elements (one per line, 9 significant digits) after a header line.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "mlx/cpp/mlx.hpp"

namespace {

// A minimal .npy reader: version 1-3, little-endian float32 or int32, C order.
mlx::Array load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    throw std::runtime_error(path + ": not a .npy file");
  }
  size_t len_size = bytes[6] == 1 ? 2 : 4;
  size_t header_len = 0;
  for (size_t i = 0; i < len_size; i++) {
    header_len |= size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  }
  size_t start = 8 + len_size;
  std::string header = bytes.substr(start, header_len);
  mlx_dtype dtype;
  if (header.find("'<f4'") != std::string::npos) {
    dtype = MLX_FLOAT32;
  } else if (header.find("'<i4'") != std::string::npos) {
    dtype = MLX_INT32;
  } else {
    throw std::runtime_error(path + ": only float32 and int32 inputs: " + header);
  }
  if (header.find("'fortran_order': False") == std::string::npos) {
    throw std::runtime_error(path + ": Fortran order is not supported");
  }
  std::vector<int> shape;
  std::istringstream dims(header.substr(header.find('(') + 1));
  for (int d; dims >> d;) {
    shape.push_back(d);
    char sep;
    dims >> sep;  // ',' or ')'
    if (sep == ')') break;
  }
  return mlx::Array(bytes.data() + start + header_len, shape, dtype);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " FILE INPUT.npy [INPUT.npy ...]\n";
    return 2;
  }
  try {
    auto forward = mlx::import_function(argv[1]);
    auto x = load_npy(argv[2]);
    if (argc == 3) {
      auto out = forward({x})[0];
      std::cout << "first output: " << out.str() << "\n";
    }

    std::vector<mlx::Array> inputs{x};
    for (int i = 3; i < argc; i++) inputs.push_back(load_npy(argv[i]));
    auto outputs = forward(inputs);
    for (size_t i = 0; i < outputs.size(); i++) {
      std::cout << "output " << i << " shape";
      for (int d : outputs[i].shape()) std::cout << " " << d;
      std::cout << "\n";
      for (float v : outputs[i].to_vector<float>()) {
        char text[32];
        std::snprintf(text, sizeof text, "%.9g", v);
        std::cout << text << "\n";
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
