"""MobileNetV3's inverted residual block, made to exercise the blocked
layout's elementwise steps (src/graph/blocked.c): an expansion to 72
channels (not a multiple of the block: padded), hard swish, a 5x5 depthwise
convolution of those padded channels, a squeeze-and-excitation gate (global
pooling, 1x1 convolutions, hard sigmoid, the gate multiplied into every
plane) and SiLU (x * sigmoid(x), a Mul of one shape). Exported by Debian's
torch 1.13 at opset 14 (HardSwish, HardSigmoid) with PyTorch's outputs; the
gate's and the depthwise layer's statistics are made non-trivial so that a
wrong channel order would show. Usage: export_se.py OUT_DIR"""
import sys

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(11)
out = sys.argv[1]


class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Conv2d(3, 24, 3, 2, 1)
        s.expand = nn.Conv2d(24, 72, 1)
        s.dw = nn.Conv2d(72, 72, 5, 1, 2, groups=72)
        s.squeeze = nn.Conv2d(72, 24, 1)
        s.excite = nn.Conv2d(24, 72, 1)
        s.project = nn.Conv2d(72, 24, 1)
        s.head = nn.Conv2d(24, 32, 3, 1, 1)
        s.fc = nn.Linear(32, 10)

    def forward(s, x):
        x = nn.functional.hardswish(s.stem(x))
        y = nn.functional.hardswish(s.expand(x))
        y = nn.functional.hardswish(s.dw(y))
        gate = nn.functional.hardsigmoid(s.excite(torch.relu(s.squeeze(nn.functional.adaptive_avg_pool2d(y, 1)))))
        y = s.project(y * gate) + x
        h = s.head(y)
        h = h * torch.sigmoid(h)
        return s.fc(nn.functional.adaptive_avg_pool2d(h, 1).flatten(1))


m = Block().eval()
x = torch.randn(3, 3, 64, 64)
np.save(out + "/se_x.npy", x.numpy())
with torch.no_grad():
    np.save(out + "/se_torch.npy", m(x).numpy())
torch.onnx.export(m, x, out + "/se.onnx", opset_version=14, input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
