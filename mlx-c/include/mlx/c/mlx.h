/* mlx-rs-export: C ABI in mlx-c's names (ml-explore/mlx-c @ fba4470). */
/* Everything this library offers. mlx-c's other headers (ops, closures,
   streams, devices, io, transforms) have no counterpart here.         */

#ifndef MLX_ALL_H
#define MLX_ALL_H

#include "mlx/c/array.h"
#include "mlx/c/error.h"
#include "mlx/c/export.h"
#include "mlx/c/half.h"
#include "mlx/c/map.h"
#include "mlx/c/string.h"
#include "mlx/c/vector.h"

#endif
