"""Exports an MLP with Python MLX, for `cargo run --example eval_mlp -- FILE`
to run in Rust (like MLX's C++ eval_mlp example). Written in our own words.

Usage: python examples/eval_mlp.py eval_mlp.mlxfn
"""
import sys

import mlx.core as mx
import mlx.nn as nn
import numpy as np


class MLP(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = [nn.Linear(i, o) for i, o in zip(dims[:-1], dims[1:])]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = nn.relu(layer(x))
        return self.layers[-1](x)


mx.random.seed(0)
model = MLP([32, 64, 64, 10])
mx.eval(model.parameters())
x = mx.random.normal((4, 32))
path = sys.argv[1] if len(sys.argv) > 1 else "eval_mlp.mlxfn"
mx.export_function(path, lambda x: model(x), x)
# The input and MLX's output, for the Rust side to compare against.
np.save(path + ".x.npy", np.array(x))
np.save(path + ".y.npy", np.array(model(x)))
print(f"exported {path}; Python says model(x)[0, :4] = {model(x)[0, :4]}")
