"""Compares crossbind's logits with PyTorch's float32 ones and with the float64 truth.

usage: compare.py CROSSBIND.npy TORCH.npy F64.npy

Passes when crossbind is within atol 5e-4 + rtol 1e-3 of PyTorch everywhere
(tests/README.md, ImageNet CNNs) and no further from the float64 truth than
twice PyTorch's own float32 error plus 1e-6: as accurate as PyTorch.
"""
import sys

import numpy as np

got, torch32, truth = (np.load(p).astype(np.float64) for p in sys.argv[1:4])
assert got.shape == torch32.shape, (got.shape, torch32.shape)
close = np.abs(got - torch32) <= 5e-4 + 1e-3 * np.abs(torch32)
ours, theirs = np.abs(got - truth).max(), np.abs(torch32 - truth).max()
print(f"    max |crossbind - torch| {np.abs(got - torch32).max():.2e}; error vs float64: crossbind {ours:.2e}, "
      f"torch {theirs:.2e}")
assert close.all(), "outside the tolerance"
assert ours <= 2 * theirs + 1e-6, "less accurate than PyTorch's float32"
