"""The ImageNet CNNs of differential testing (DeltaNN's MobileNetV2,
ResNet-101 and Inception-v3, with ResNet-18/50) as torchvision builds them,
with seeded random weights, and their export to ONNX: the file `crossbind
bench` gives every binding that loads ONNX for these models.

Running statistics come from one training-mode batch (momentum 1), so that
activations stay of order one through the depth as in a trained network
(the initial statistics, mean 0 and variance 1, let a 90-layer network's
values grow to 1e13). Needs torchvision (the PyPI environment of
runners/pytorch-python, not Debian's torch).
"""
import torch

SIDES = {"mobilenet_v2": 224, "resnet18": 224, "resnet50": 224, "resnet101": 224, "inception_v3": 299}


def build(name, seed):
    """torchvision's `name` in evaluation mode, weights from `seed`."""
    import torchvision  # only this command needs it

    if name not in SIDES:
        raise ValueError(f"unknown ImageNet model {name} (known: {', '.join(sorted(SIDES))})")
    torch.manual_seed(seed)
    side = SIDES[name]
    extra = {"aux_logits": False, "init_weights": True} if name == "inception_v3" else {}
    model = getattr(torchvision.models, name)(weights=None, **extra)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = 1.0
    model.train()
    with torch.no_grad():
        model(torch.randn(4, 3, side, side))
    return model.eval()


def export(model, name, path, opset):
    """The model as ONNX, batch dimension free."""
    side = SIDES[name]
    torch.onnx.export(model, torch.zeros(1, 3, side, side), path, opset_version=opset, input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      dynamo=False)


def add_parser(sub):
    p = sub.add_parser("imagenet-export", help="a torchvision ImageNet CNN with seeded random weights, as ONNX")
    p.add_argument("model", choices=sorted(SIDES))
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--opset", type=int, default=13, choices=range(11, 18))


def run(args):
    export(build(args.model, args.seed), args.model, args.out, args.opset)
    print(f"wrote {args.out} ({args.model}, seed {args.seed}, opset {args.opset}, torch {torch.__version__})")
