"""A network made to exercise the blocked-layout rewrite of inference
(src/graph/blocked.c) in every branch, exported by torch 1.13 to ONNX with
PyTorch's outputs: a 3-channel image into a blocked convolution (plain
input), ReLU and ReLU6 (Clip) post-ops, residual Adds fused as sums and one
kept on its own (its operand is read again afterwards), a depthwise, a
grouped and a dilated convolution, max pooling with padding, average
pooling with and without windows past the padding (the latter stays
outside), tanh on blocked values, a channel Concat, 12 channels (not a
multiple of the block: padded), a batch normalisation
as a post-op (before the ReLU's) and one on its own (its operand is read
again), a 2x2 max pooling, global pooling and a linear layer; then a
branch of 20 channels (padded on every block size: 24 or 32) through tanh,
Adds, 2x2 max pooling and global pooling in the padded layout, a batch
normalisation that leaves it, and a convolution reading that plain value
reordered in with padding; last a 3x3 convolution on 2x2 planes (12
outputs per channel at batch 3: the few-output product) with its ReLU. Batch normalisations are exported
as such (TrainingMode.PRESERVE of a model in eval mode), not folded into the
convolutions. Usage: export.py OUT_DIR"""
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(5)
# PRESERVE warns about constant folding for models in training mode; this one is in eval mode.
warnings.filterwarnings("ignore", message="It is recommended that constant folding")
out = sys.argv[1]


class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Conv2d(3, 32, 3, 1, 1)
        s.a = nn.Conv2d(32, 32, 3, 1, 1)
        s.dw = nn.Conv2d(32, 32, 3, 1, 2, dilation=2, groups=32)
        s.b = nn.Conv2d(32, 32, 1)
        s.g = nn.Conv2d(32, 32, 3, 1, 1, groups=2)
        s.c = nn.Conv2d(32, 16, 1)
        s.d = nn.Conv2d(32, 16, 3, 1, 1)
        s.odd = nn.Conv2d(32, 12, 1)
        s.back = nn.Conv2d(12, 32, 1)
        s.e = nn.Conv2d(32, 32, 3, 1, 1)
        s.bn1, s.bn2 = nn.BatchNorm2d(32), nn.BatchNorm2d(32)
        s.odd2, s.odd3 = nn.Conv2d(32, 20, 1), nn.Conv2d(32, 20, 3, 1, 1)
        s.bn3 = nn.BatchNorm2d(20)
        s.back2 = nn.Conv2d(20, 16, 1)
        s.few = nn.Conv2d(32, 16, 3, 1, 1)
        for bn in (s.bn1, s.bn2, s.bn3):  # statistics and affine parameters away from the identity
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.5, 0.5)
        s.fc = nn.Linear(64 + 20 + 16 + 16, 10)

    def forward(s, x):
        x = torch.relu(s.stem(x))
        x = nn.functional.max_pool2d(x, 3, 2, 1)            # 32 x 32
        y = torch.clamp(s.a(x), 0, 6)                       # Clip post-op
        x = x + s.b(torch.relu(s.dw(y)))                    # sum into x's buffer
        z = s.g(x)
        w = z + x                                           # an Add on its own: z is read again
        w = torch.tanh(w) + z
        w = nn.functional.avg_pool2d(w, 3, 1, 1)            # counts padding, no overhang
        cat = torch.cat([s.c(w), s.d(w)], 1)                # 32 channels
        o = s.back(torch.relu(s.odd(cat)))                  # 12 channels: plain
        o = nn.functional.avg_pool2d(o + cat, 3, 2, 1)            # far padding unused: stays outside
        q = torch.relu(s.bn1(s.e(o)))                       # batch normalisation and ReLU as post-ops
        u = s.bn2(q) + q                                    # a batch normalisation on its own: q is read again
        u = nn.functional.max_pool2d(u, 2)                  # 2x2 max pooling: crossbind's own blocked loop
        p = nn.functional.adaptive_avg_pool2d(torch.cat([u, u], 1), 1).flatten(1)
        v = torch.tanh(s.odd2(u))                           # 20 channels, padded: tanh on its own
        t = nn.functional.max_pool2d(s.odd3(u) + v + v, 2)  # Adds on their own (v is read again), 2x2 loop
        r = s.back2(s.bn3(t))                               # batch normalisation outside; reordered in, padded
        f = torch.relu(s.few(nn.functional.max_pool2d(u, 4)))  # 2x2 planes
        gap = nn.functional.adaptive_avg_pool2d
        return s.fc(torch.cat([p, gap(t, 1).flatten(1), gap(r, 1).flatten(1), gap(f, 1).flatten(1)], 1))


m = Net().eval()
x = torch.randn(3, 3, 64, 64)
np.save(out + "/blk_x.npy", x.numpy())
with torch.no_grad():
    np.save(out + "/blk_torch.npy", m(x).numpy())
torch.onnx.export(m, x, out + "/blk.onnx", opset_version=13, input_names=["x"], output_names=["logits"],
                  training=torch.onnx.TrainingMode.PRESERVE,
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
