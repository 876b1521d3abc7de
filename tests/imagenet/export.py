"""Exports a torchvision ImageNet CNN with random weights to ONNX, with the
inputs and PyTorch's outputs in float32 and float64.

usage: export.py MODEL OPSET SEED OUT_DIR

Running statistics come from one training-mode batch (momentum 1), so that
activations stay of order one through the depth as in a trained network (the
initial statistics, mean 0 and variance 1, let a 90-layer network's values
grow to 1e13). The float64 outputs are the same model in double precision:
the truth both float32 engines are measured against.
"""
import sys

import numpy as np
import torch
import torchvision

name, opset, seed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.manual_seed(seed)
size = 299 if name == "inception_v3" else 224
extra = {"aux_logits": False, "init_weights": True} if name == "inception_v3" else {}
model = getattr(torchvision.models, name)(weights=None, **extra)
for module in model.modules():
    if isinstance(module, torch.nn.BatchNorm2d):
        module.momentum = 1.0
model.train()
with torch.no_grad():
    model(torch.randn(4, 3, size, size))
model.eval()
x = torch.randn(2, 3, size, size)
np.save(f"{out}/{name}_x.npy", x.numpy())
with torch.no_grad():
    np.save(f"{out}/{name}_torch.npy", model(x).numpy())
torch.onnx.export(model, x, f"{out}/{name}.onnx", opset_version=opset, input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
with torch.no_grad():
    np.save(f"{out}/{name}_f64.npy", model.double()(x.double()).numpy())
