"""Exports a torchvision ImageNet CNN with random weights to ONNX (the
runner's own export, runners/pytorch/cb_imagenet.py), with the inputs and
PyTorch's outputs in float32 and float64.

usage: export.py MODEL OPSET SEED OUT_DIR [--dynamo]

--dynamo exports through torch.export (cb_imagenet.export), the weights in
OUT_DIR/MODEL.onnx.data.

The float64 outputs are the same model in double precision: the truth both
float32 engines are measured against.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runners", "pytorch"))
import cb_imagenet  # noqa: E402

name, opset, seed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dynamo = sys.argv[5:] == ["--dynamo"]
model = cb_imagenet.build(name, seed)
side = cb_imagenet.SIDES[name]
x = torch.randn(2, 3, side, side)
# The last linear layer is scaled so that the logits' standard deviation is
# one: MobileNetV3's and EfficientNet's classifiers start at N(0, 0.01),
# and their logits can come out near 1e-5, where compare.py's atol would
# pass anything (the others' are 0.15 to 2).
with torch.no_grad():
    spread = model(x).std().item()
    last = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
    last.weight /= spread
    last.bias /= spread
np.save(f"{out}/{name}_x.npy", x.numpy())
with torch.no_grad():
    np.save(f"{out}/{name}_torch.npy", model(x).numpy())
cb_imagenet.export(model, name, f"{out}/{name}.onnx", opset, dynamo)
with torch.no_grad():
    np.save(f"{out}/{name}_f64.npy", model.double()(x.double()).numpy())
