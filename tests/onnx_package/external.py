"""Writes a small CNN whose weights lie outside the model file (ONNX external
data, as onnx.save with save_as_external_data writes it and torch.onnx.export's
dynamo path does by default), with onnx's reference outputs, and damaged or
hostile variants of its external-data entries.

usage: external.py OUT_DIR

Writes OUT_DIR/x.npy, OUT_DIR/ref.npy and, each in its own directory
OUT_DIR/CASE/model.onnx (with its data files): accept_one_file (every
tensor in weights.bin), accept_subdirectory (in sub/w.bin), accept_link_inside
(weights.bin a link to real/w.bin), and the refused
cases refuse_* named by what is wrong.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
rng = np.random.default_rng(7)
x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
inits = [
    numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
    numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b"),
    numpy_helper.from_array(rng.standard_normal((4 * 36, 5)).astype(np.float32), "fc"),
]
nodes = [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"]),
    helper.make_node("Flatten", ["r"], ["f"]),
    helper.make_node("MatMul", ["f", "fc"], ["y"]),
]
graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
np.save(f"{out}/x.npy", x)
np.save(f"{out}/ref.npy", ReferenceEvaluator(model).run(None, {"x": x})[0])


def save(case, location="weights.bin"):
    d = f"{out}/{case}"
    os.makedirs(os.path.dirname(f"{d}/{location}"), exist_ok=True)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    onnx.save(m, f"{d}/model.onnx", save_as_external_data=True, all_tensors_to_one_file=True, location=location,
              size_threshold=0)
    return d


def edit(d, change):
    """Rewrites the external-data entries of the tensor 'fc' by change(dict)."""
    m = onnx.load(f"{d}/model.onnx", load_external_data=False)
    for t in m.graph.initializer:
        if t.name == "fc":
            entries = {e.key: e.value for e in t.external_data}
            change(entries)
            del t.external_data[:]
            for k, v in entries.items():
                t.external_data.add(key=k, value=v)
    onnx.save(m, f"{d}/model.onnx")


save("accept_one_file")
save("accept_subdirectory", "sub/w.bin")
edit(save("refuse_parent_directory"), lambda e: e.update(location="../weights.bin"))
edit(save("refuse_absolute_path"), lambda e: e.update(location="/etc/hostname"))
edit(save("refuse_missing_file"), lambda e: e.update(location="absent.bin"))
edit(save("refuse_offset_not_a_number"), lambda e: e.update(offset="12abc"))
edit(save("refuse_range_past_the_end"), lambda e: e.update(offset=str(os.path.getsize(f"{out}/accept_one_file/weights.bin"))))
edit(save("refuse_length_short_of_the_shape"), lambda e: e.update(length=str(int(e["length"]) - 4)))
d = save("refuse_directory_as_data")
edit(d, lambda e: e.update(location="dir"))
os.makedirs(f"{d}/dir")
# A link whose target stays inside the model's directory is followed; one
# that leads out of it is refused, though its name is harmless.
d = save("accept_link_inside")
os.makedirs(f"{d}/real")
os.rename(f"{d}/weights.bin", f"{d}/real/w.bin")
os.symlink("real/w.bin", f"{d}/weights.bin")
d = save("refuse_link_leaving_directory")
os.remove(f"{d}/weights.bin")
os.symlink(f"{out}/accept_one_file/weights.bin", f"{d}/weights.bin")
d = save("refuse_truncated_data_file")
with open(f"{d}/weights.bin", "r+b") as f:
    f.truncate(os.path.getsize(f"{d}/weights.bin") - 16)
