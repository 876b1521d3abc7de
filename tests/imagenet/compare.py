"""Compares crossbind's logits with PyTorch's float32 ones and with the float64 truth.

usage: compare.py CROSSBIND.npy TORCH.npy F64.npy [NAME]

NAME (default torch) names the float32 framework in the output
(tests/keras_apps_test.sh compares with TensorFlow).

Passes when crossbind is within atol 5e-4 + rtol 1e-3 of PyTorch everywhere
(tests/README.md, ImageNet CNNs) and no further from the float64 truth than
twice PyTorch's own float32 error plus 1e-6: as accurate as PyTorch.
"""
import sys

import numpy as np

got, torch32, truth = (np.load(p).astype(np.float64) for p in sys.argv[1:4])
name = sys.argv[4] if len(sys.argv) > 4 else "torch"
assert got.shape == torch32.shape, (got.shape, torch32.shape)
close = np.abs(got - torch32) <= 5e-4 + 1e-3 * np.abs(torch32)
ours, theirs = np.abs(got - truth).max(), np.abs(torch32 - truth).max()
rel = (np.abs(got - torch32) / np.maximum(np.abs(torch32), 1e-30)).max()
print(f"    max |crossbind - {name}| {np.abs(got - torch32).max():.2e} (relative {rel:.2e}); error vs float64: "
      f"crossbind {ours:.2e}, {name} {theirs:.2e}")
assert close.all(), "outside the tolerance"
assert ours <= 2 * theirs + 1e-6, f"less accurate than {name}'s float32"
