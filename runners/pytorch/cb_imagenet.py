"""The ImageNet CNNs of differential testing (DeltaNN's MobileNetV2,
ResNet-101 and Inception-v3, with ResNet-18/50) as torchvision builds them,
with seeded random weights, and their export to ONNX: the file `crossbind
bench` gives every binding that loads ONNX for these models, and the one
`crossbind delta` runs in every variant.

Running statistics come from one training-mode batch (momentum 1), so that
activations stay of order one through the depth as in a trained network
(the initial statistics, mean 0 and variance 1, let a 90-layer network's
values grow to 1e13). Needs torchvision: PyPI's 0.22 in the environment of
runners/pytorch-python, or Debian's python3-torchvision 0.14 beside Debian's
torch 1.13.
"""
import inspect
import os
import sys

import torch

SIDES = {"mobilenet_v2": 224, "resnet18": 224, "resnet50": 224, "resnet101": 224, "inception_v3": 299,
         "mobilenet_v3_small": 224, "mobilenet_v3_large": 224, "efficientnet_b0": 224}


def torchvision_or_exit(fail):
    """torchvision, or one error line and exit status 2 naming the package
    that provides it for this interpreter."""
    try:
        import torchvision
    except ImportError as e:
        where = ("apt-get install python3-torchvision" if sys.executable.startswith("/usr/bin/")
                 else "bash runners/pytorch-python/install.sh")
        print(f"crossbind-torch: error: torchvision is not installed for {sys.executable} (torch {torch.__version__}): "
              f"{e}; install it with: {where}", file=sys.stderr)
        sys.exit(2)
    return torchvision


def skeleton(name, fail):
    """torchvision's `name` with its own initial weights, in training mode.
    torchvision 0.13 and later take weights=None; older ones pretrained=False."""
    if name not in SIDES:
        fail(f"unknown ImageNet model {name} (known: {', '.join(sorted(SIDES))})")
    torchvision = torchvision_or_exit(fail)
    extra = {"aux_logits": False, "init_weights": True} if name == "inception_v3" else {}
    make = getattr(torchvision.models, name)
    try:
        return make(weights=None, **extra)
    except TypeError:
        return make(pretrained=False, **extra)


def _raise(msg):
    raise ValueError(msg)


def build(name, seed, fail=_raise):
    """torchvision's `name` in evaluation mode, weights from `seed`."""
    torch.manual_seed(seed)
    model = skeleton(name, fail)
    side = SIDES[name]
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = 1.0
    model.train()
    with torch.no_grad():
        model(torch.randn(4, 3, side, side))
    return model.eval()


def read_state(path, fail):
    """A state dict written by torch.save, read without running code from the
    file (weights_only, where this torch has it)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        fail(f"cannot open weights {path}: {e.strerror}")
    if head != b"PK\x03\x04":
        fail(f"{path}: not a PyTorch state dict (torch.save writes a zip archive)")
    try:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except TypeError:  # a torch without weights_only
            state = torch.load(path, map_location="cpu")
    except Exception as e:  # torch raises many types for bad files
        msg = " ".join(str(e).split())
        if "WeightsUnpickler error:" in msg:  # the reason, not torch's advice to load it unsafely
            msg = "it holds more than tensors: " + msg[msg.index("WeightsUnpickler error:"):]
        fail(f"cannot read weights {path}: {msg[:300]}")
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        fail(f"{path}: not a state dict (a mapping of names to tensors)")
    return state


def load_into(model, name, path, fail):
    """Loads the state dict in `path` into `model`, refusing one that does not
    fit it (keys missing or extra, a shape that differs) with one line."""
    state = read_state(path, fail)
    want = model.state_dict()
    missing = [k for k in want if k not in state]
    extra = [k for k in state if k not in want]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} of {name}'s tensors missing ({', '.join(missing[:3])}"
                         f"{', ...' if len(missing) > 3 else ''})")
        if extra:
            parts.append(f"{len(extra)} tensors {name} does not have ({', '.join(extra[:3])}"
                         f"{', ...' if len(extra) > 3 else ''})")
        fail(f"{path} does not fit {name}: " + "; ".join(parts))
    for k, v in want.items():
        if tuple(state[k].shape) != tuple(v.shape):
            fail(f"{path} does not fit {name}: {k} has shape {list(state[k].shape)}, the model needs {list(v.shape)}")
    model.load_state_dict(state)
    return model.eval()


def save_state(model, path):
    """The model's state dict (torch.save), written under a temporary name and renamed."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        torch.save(model.state_dict(), tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def export(model, name, path, opset, dynamo=False, fail=_raise):
    """The model as ONNX, batch dimension free. By default through the
    TorchScript exporter; torch 2.x also has one based on torch.export
    (`dynamo=True`, its default from 2.9: opset 18 or later, the weights as
    external data in PATH.data beside the file, onnxscript needed), which
    torch 1.13's export does not know."""
    side = SIDES[name]
    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    if dynamo:
        if not has_dynamo:
            fail(f"torch {torch.__version__} has no dynamo exporter (torch 2.5 or later has)")
        batch = torch.export.Dim("batch", min=1, max=4096)
        torch.onnx.export(model, (torch.zeros(2, 3, side, side),), path, dynamo=True, opset_version=opset,
                          input_names=["x"], output_names=["logits"], dynamic_shapes={"x": {0: batch}},
                          external_data=True)
        return
    which = {"dynamo": False} if has_dynamo else {}
    torch.onnx.export(model, torch.zeros(1, 3, side, side), path, opset_version=opset, input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, **which)


def add_parser(sub):
    p = sub.add_parser("imagenet-export", help="a torchvision ImageNet CNN with seeded random weights, as ONNX")
    p.add_argument("model", choices=sorted(SIDES))
    p.add_argument("--seed", type=int, help="weights from this seed (required unless --weights-in)")
    p.add_argument("--weights-in", help="weights from this state dict (torch.save) instead of a seed")
    p.add_argument("--weights-out", help="also write the exported weights as a state dict (torch.save)")
    p.add_argument("--out", required=True)
    p.add_argument("--opset", type=int, default=13, choices=range(11, 21))
    p.add_argument("--dynamo", action="store_true",
                   help="export through torch.export (opset 18 or later; the weights in OUT.data beside OUT)")


def run(args, fail):
    if (args.seed is None) == (args.weights_in is None):
        fail("imagenet-export: give exactly one of --seed S and --weights-in W.pt")
    if args.weights_in:
        model = load_into(skeleton(args.model, fail), args.model, args.weights_in, fail)
        origin = f"weights {args.weights_in}"
    else:
        model = build(args.model, args.seed, fail)
        origin = f"seed {args.seed}"
    if args.dynamo and args.opset < 18:
        fail("imagenet-export: the dynamo exporter writes opset 18 or later")
    export(model, args.model, args.out, args.opset, args.dynamo, fail)
    if args.weights_out:  # the state the export read, unchanged by it
        save_state(model, args.weights_out)
    print(f"wrote {args.out}{' and ' + args.weights_out if args.weights_out else ''} "
          f"({args.model}, {origin}, opset {args.opset}{', dynamo' if args.dynamo else ''}, torch {torch.__version__})")
