#!/usr/bin/python3
"""Two ONNX files of one small image classifier (3x224x224 -> 10), equal
except for one layer: the second file's weights of `conv2` are scaled by
1.5, a divergence planted where the test knows it. Also prints the ONNX
node that reads the planted weight, which localisation must name.
Usage: planted.py OUT_DIR (Debian's torch 1.13 and python3-onnx)."""
import os
import sys

import onnx
import torch

out = sys.argv[1]
torch.manual_seed(7)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 5, stride=4, padding=2)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.conv3 = torch.nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        x = torch.relu(self.conv3(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


net = Net().eval()
x = torch.zeros(1, 3, 224, 224)
kw = dict(input_names=["x"], output_names=["logits"], dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}}, opset_version=13)
torch.onnx.export(net, x, os.path.join(out, "a.onnx"), **kw)
with torch.no_grad():
    net.conv2.weight.mul_(1.5)
torch.onnx.export(net, x, os.path.join(out, "b.onnx"), **kw)
m = onnx.load(os.path.join(out, "b.onnx"))
node = next(n for n in m.graph.node if any(i.endswith("conv2.weight") for i in n.input))
print(node.name)
