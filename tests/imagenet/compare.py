"""Compares crossbind's logits with PyTorch's float32 ones and with the float64 truth.

usage: compare.py CROSSBIND.npy TORCH.npy F64.npy [NAME]

NAME (default torch) names the float32 framework in the output
(tests/keras_apps_test.sh compares with TensorFlow).

Passes when crossbind is within atol 5e-4 + rtol 1e-3 of PyTorch everywhere
(tests/README.md, ImageNet CNNs) and no further from the float64 truth than
twice PyTorch's own float32 error plus 1e-6: as accurate as PyTorch.

Where PyTorch's own float32 error exceeds the absolute tolerance (logits far
from order one: torchvision's ResNet-101 with its own initial weights and
unit batch-normalisation statistics gives logits of 1e5, each about 0.01
from float64 in both engines), a logit near zero can be outside
atol + rtol * |logit| of PyTorch's by rounding alone; there the second
clause (as accurate as PyTorch against float64) decides alone. Every model
of the test suites has PyTorch's error within atol, and both clauses.
"""
import sys

import numpy as np

got, torch32, truth = (np.load(p).astype(np.float64) for p in sys.argv[1:4])
name = sys.argv[4] if len(sys.argv) > 4 else "torch"
assert got.shape == torch32.shape, (got.shape, torch32.shape)
ours, theirs = np.abs(got - truth).max(), np.abs(torch32 - truth).max()
ATOL, RTOL = 5e-4, 1e-3
close = np.abs(got - torch32) <= ATOL + RTOL * np.abs(torch32)
if theirs > ATOL and not close.all():  # the framework's own rounding is beyond atol
    print(f"    {int((~close).sum())} element(s) outside atol + rtol of {name}; {name}'s own float32 error "
          f"({theirs:.2e}) exceeds atol, so accuracy against float64 decides")
    close[:] = True
rel = (np.abs(got - torch32) / np.maximum(np.abs(torch32), 1e-30)).max()
print(f"    max |crossbind - {name}| {np.abs(got - torch32).max():.2e} (relative {rel:.2e}); error vs float64: "
      f"crossbind {ours:.2e}, {name} {theirs:.2e}")
assert close.all(), "outside the tolerance"
assert ours <= 2 * theirs + 1e-6, f"less accurate than {name}'s float32"
