"""The mapping between crossbind's canonical weights (PyTorch state-dict names
and layouts, as runners/pytorch/crossbind_torch.py and `crossbind train`
write them to safetensors) and the Keras models of runners/tensorflow.

Keras layers carry the names below; `layer.get_weights()` order is given in
brackets. Shapes: O out, I in, k kernel size, H hidden, D input width.

| canonical (PyTorch)                  | Keras layer [index]                 | transform to Keras                              |
|--------------------------------------|-------------------------------------|-------------------------------------------------|
| convN.weight [O,I,k,k] (OIHW)        | convN [0] kernel [k,k,I,O] (HWIO)   | transpose(2,3,1,0); back: transpose(3,2,0,1)    |
| convN.bias [O]                       | convN [1]                           | as is                                           |
| fc*.weight [O,I] (Linear)            | fc* [0] kernel [I,O]                | transpose                                       |
| fc.weight of LeNet-1 [10,300]        | fc [0] kernel [300,10]              | rows reordered: PyTorch flattens C,H,W          |
|                                      |                                     | (12,5,5), Keras flattens H,W,C: reshape         |
|                                      |                                     | (10,12,5,5).transpose(2,3,1,0).reshape(300,10)  |
| features.i.weight (VGG conv, no bias)| features_i [0] kernel               | OIHW -> HWIO                                    |
| features.j.weight / .bias (BN)       | features_j [0] gamma / [1] beta     | as is                                           |
| features.j.running_mean / _var       | features_j [2] moving_mean / [3]    | as is (both frameworks keep the variance        |
|                                      |   moving_variance                   | estimate; see the BatchNorm note)               |
| features.j.num_batches_tracked       | (none)                              | dropped; back: the reference's value, else 0    |
| classifier.i.weight / .bias          | classifier_i [0] / [1]              | transpose / as is                               |
| embedding.weight [10000,300]         | embedding [0]                       | as is                                           |
| LSTM rnn.weight_ih_l0 [4H,D]         | rnn [0] kernel [D,4H]               | transpose; gate order PyTorch i,f,g,o =         |
|                                      |                                     | Keras i,f,c,o: the same blocks, no reordering   |
| LSTM rnn.weight_hh_l0 [4H,H]         | rnn [1] recurrent_kernel [H,4H]     | transpose                                       |
| LSTM rnn.bias_ih_l0 + bias_hh_l0     | rnn [2] bias [4H]                   | summed (Keras has one bias); back: see below    |
| GRU rnn.weight_ih_l0 [3H,D] r,z,n    | rnn [0] kernel [D,3H] z,r,h         | blocks r,z swapped, then transpose              |
| GRU rnn.weight_hh_l0 [3H,H]          | rnn [1] recurrent_kernel [H,3H]     | blocks r,z swapped, then transpose              |
| GRU rnn.bias_ih_l0 / bias_hh_l0      | rnn [2] bias [2,3H] (reset_after)   | row 0 input bias, row 1 recurrent bias, each    |
|                                      |                                     | with r,z swapped: lossless                      |
| GRU-rb rnn.bias_ih_l0 + bias_hh_l0   | rnn [2] bias [3H] (reset_after=F)   | r,z swapped, summed; back: see below            |
| fc.weight [1,512] / fc.bias [1]      | fc [0] [512,1] / [1]                | transpose / as is                               |

Equivalences behind the table:
- GRU with reset_after=True is PyTorch's GRU: n = tanh(W_in x + b_in + r *
  (W_hn h + b_hn)), h' = (1 - z) n + z h (Keras: h' = z h + (1 - z) hh).
- GRU with reset_after=False (GRU-rb) is crossbind's reset-before GRU: n =
  tanh(W_in x + b_in + W_hn (r * h) + b_hn). b_hn is outside the reset
  product, so only b_in + b_hn matters, as for every gate of the LSTM.
- Summed biases: the forward pass depends on b_ih + b_hh only, so the map to
  Keras sums them (float32, one rounding). The way back splits the Keras bias
  with a reference (the canonical weights the run started from): an
  unchanged sum gives back the reference pair bit for bit; a changed one
  gives b_hh = the reference's b_hh and b_ih = bias - b_hh. Without a
  reference, b_ih = bias and b_hh = 0. Both ways are therefore exact:
  canonical -> Keras -> canonical (with the reference) and Keras ->
  canonical -> Keras (with or without it). Training differs, though: PyTorch
  gives b_ih and b_hh the same gradient and moves each by it (their sum by
  twice an SGD step), Keras moves the one bias once.
- LeNets: the TensorFlow models pad 28x28 to 32x32 and use valid
  convolutions; PyTorch pads the first convolution by 2. The weights are the
  same; only LeNet-1's flatten order (C,H,W vs H,W,C) needs the dense
  reordering above (LeNet-5 and VGG-16 flatten 1x1 maps).
- BatchNorm: the statistics map one to one, but the update rule does not:
  PyTorch uses momentum 0.1 (new = 0.9 old + 0.1 batch, batch variance
  unbiased) and eps 1e-5; Keras' defaults, which the protocol keeps for the
  TensorFlow side, are momentum 0.99 (new = 0.99 old + 0.01 batch, biased
  variance) and eps 1e-3. A model moved across computes with the eps of the
  framework that runs it.
"""
import numpy as np

VGG16_PLAN = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
HIDDEN = 512


def _vgg_layers():
    """(conv index, bn index) of the PyTorch VGG16 module's features."""
    out, i = [], 0
    for v in VGG16_PLAN:
        if v == "M":
            i += 1
        else:
            out.append((i, i + 1))
            i += 3
    return out


def canonical_names(model):
    """The canonical tensor names of a model, in PyTorch's state-dict order."""
    if model == "lenet1":
        return [f"{l}.{p}" for l in ("conv1", "conv2", "fc") for p in ("weight", "bias")]
    if model == "lenet5":
        return [f"{l}.{p}" for l in ("conv1", "conv2", "conv3", "fc1", "fc2") for p in ("weight", "bias")]
    if model == "vgg16":
        names = []
        for c, b in _vgg_layers():
            names.append(f"features.{c}.weight")
            names += [f"features.{b}.{p}" for p in
                      ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")]
        names += [f"classifier.{i}.{p}" for i in (0, 3, 6) for p in ("weight", "bias")]
        return names
    if model in ("lstm", "gru", "gru-rb"):
        return ["embedding.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0", "rnn.bias_hh_l0",
                "fc.weight", "fc.bias"]
    raise KeyError(model)


def keras_layers(model):
    """The Keras layer names that hold weights, and how many arrays each has."""
    if model == "lenet1":
        return {"conv1": 2, "conv2": 2, "fc": 2}
    if model == "lenet5":
        return {"conv1": 2, "conv2": 2, "conv3": 2, "fc1": 2, "fc2": 2}
    if model == "vgg16":
        out = {}
        for c, b in _vgg_layers():
            out[f"features_{c}"] = 1
            out[f"features_{b}"] = 4
        out.update({f"classifier_{i}": 2 for i in (0, 3, 6)})
        return out
    return {"embedding": 1, "rnn": 3, "fc": 2}


def _oihw_to_hwio(w):
    return np.ascontiguousarray(w.transpose(2, 3, 1, 0))


def _hwio_to_oihw(k):
    return np.ascontiguousarray(k.transpose(3, 2, 0, 1))


def _swap_rz(a, axis=0):
    """PyTorch's GRU blocks r,z,n <-> Keras' z,r,h (an involution)."""
    h = a.shape[axis] // 3
    first, second, rest = np.split(a, [h, 2 * h], axis=axis)
    return np.ascontiguousarray(np.concatenate([second, first, rest], axis=axis))


def _lenet1_fc_to_keras(w):
    return np.ascontiguousarray(w.reshape(10, 12, 5, 5).transpose(2, 3, 1, 0).reshape(300, 10))


def _lenet1_fc_to_canonical(k):
    return np.ascontiguousarray(k.reshape(5, 5, 12, 10).transpose(3, 2, 0, 1).reshape(10, 300))


def _f32(a):
    return np.asarray(a, dtype=np.float32)


def to_keras(model, t):
    """Canonical tensors (name -> array) to {keras layer name: [arrays in
    get_weights() order]}. Raises KeyError naming a missing tensor."""
    missing = [n for n in canonical_names(model) if n not in t and not n.endswith("num_batches_tracked")]
    if missing:
        raise KeyError(", ".join(missing))
    t = {k: (v if k.endswith("num_batches_tracked") else _f32(v)) for k, v in t.items()}
    out = {}
    if model in ("lenet1", "lenet5"):
        convs = ("conv1", "conv2") + (("conv3",) if model == "lenet5" else ())
        for c in convs:
            out[c] = [_oihw_to_hwio(t[c + ".weight"]), t[c + ".bias"].copy()]
        if model == "lenet1":
            out["fc"] = [_lenet1_fc_to_keras(t["fc.weight"]), t["fc.bias"].copy()]
        else:
            for d in ("fc1", "fc2"):
                out[d] = [np.ascontiguousarray(t[d + ".weight"].T), t[d + ".bias"].copy()]
        return out
    if model == "vgg16":
        for c, b in _vgg_layers():
            out[f"features_{c}"] = [_oihw_to_hwio(t[f"features.{c}.weight"])]
            out[f"features_{b}"] = [t[f"features.{b}.{p}"].copy()
                                    for p in ("weight", "bias", "running_mean", "running_var")]
        for i in (0, 3, 6):
            out[f"classifier_{i}"] = [np.ascontiguousarray(t[f"classifier.{i}.weight"].T),
                                      t[f"classifier.{i}.bias"].copy()]
        return out
    out["embedding"] = [t["embedding.weight"].copy()]
    wih, whh, bih, bhh = (t["rnn." + n] for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"))
    if model == "lstm":
        out["rnn"] = [np.ascontiguousarray(wih.T), np.ascontiguousarray(whh.T), bih + bhh]
    elif model == "gru":
        out["rnn"] = [np.ascontiguousarray(_swap_rz(wih).T), np.ascontiguousarray(_swap_rz(whh).T),
                      np.stack([_swap_rz(bih), _swap_rz(bhh)])]
    else:  # gru-rb
        out["rnn"] = [np.ascontiguousarray(_swap_rz(wih).T), np.ascontiguousarray(_swap_rz(whh).T),
                      _swap_rz(bih + bhh)]
    out["fc"] = [np.ascontiguousarray(t["fc.weight"].T), t["fc.bias"].copy()]
    return out


def _split_bias(total, ref_ih, ref_hh):
    """Keras' one bias back to PyTorch's pair (see the module docstring)."""
    if ref_ih is None or ref_hh is None:
        return total.copy(), np.zeros_like(total)
    ref_ih, ref_hh = _f32(ref_ih), _f32(ref_hh)
    if np.array_equal((ref_ih + ref_hh).view(np.uint32), total.view(np.uint32)):
        return ref_ih.copy(), ref_hh.copy()
    return (total - ref_hh).astype(np.float32), ref_hh.copy()


def to_canonical(model, k, reference=None):
    """{keras layer name: [arrays]} to canonical tensors in state-dict order.
    `reference`: the canonical tensors the model started from (splits the
    summed RNN biases, gives BatchNorm's num_batches_tracked)."""
    ref = reference or {}
    k = {n: [_f32(a) for a in arrs] for n, arrs in k.items()}
    t = {}
    if model in ("lenet1", "lenet5"):
        convs = ("conv1", "conv2") + (("conv3",) if model == "lenet5" else ())
        for c in convs:
            t[c + ".weight"], t[c + ".bias"] = _hwio_to_oihw(k[c][0]), k[c][1].copy()
        if model == "lenet1":
            t["fc.weight"], t["fc.bias"] = _lenet1_fc_to_canonical(k["fc"][0]), k["fc"][1].copy()
        else:
            for d in ("fc1", "fc2"):
                t[d + ".weight"], t[d + ".bias"] = np.ascontiguousarray(k[d][0].T), k[d][1].copy()
    elif model == "vgg16":
        for c, b in _vgg_layers():
            t[f"features.{c}.weight"] = _hwio_to_oihw(k[f"features_{c}"][0])
            for p, a in zip(("weight", "bias", "running_mean", "running_var"), k[f"features_{b}"]):
                t[f"features.{b}.{p}"] = a.copy()
            nbt = ref.get(f"features.{b}.num_batches_tracked")
            t[f"features.{b}.num_batches_tracked"] = (np.asarray(nbt, dtype=np.int64).reshape(())
                                                      if nbt is not None else np.zeros((), dtype=np.int64))
        for i in (0, 3, 6):
            t[f"classifier.{i}.weight"] = np.ascontiguousarray(k[f"classifier_{i}"][0].T)
            t[f"classifier.{i}.bias"] = k[f"classifier_{i}"][1].copy()
    else:
        t["embedding.weight"] = k["embedding"][0].copy()
        kern, rec, bias = k["rnn"]
        if model == "lstm":
            t["rnn.weight_ih_l0"], t["rnn.weight_hh_l0"] = np.ascontiguousarray(kern.T), np.ascontiguousarray(rec.T)
            t["rnn.bias_ih_l0"], t["rnn.bias_hh_l0"] = _split_bias(bias, ref.get("rnn.bias_ih_l0"),
                                                                   ref.get("rnn.bias_hh_l0"))
        else:
            t["rnn.weight_ih_l0"] = _swap_rz(np.ascontiguousarray(kern.T))
            t["rnn.weight_hh_l0"] = _swap_rz(np.ascontiguousarray(rec.T))
            if model == "gru":
                t["rnn.bias_ih_l0"], t["rnn.bias_hh_l0"] = _swap_rz(bias[0]), _swap_rz(bias[1])
            else:
                t["rnn.bias_ih_l0"], t["rnn.bias_hh_l0"] = _split_bias(_swap_rz(bias), ref.get("rnn.bias_ih_l0"),
                                                                       ref.get("rnn.bias_hh_l0"))
        t["fc.weight"], t["fc.bias"] = np.ascontiguousarray(k["fc"][0].T), k["fc"][1].copy()
    return {n: t[n] for n in canonical_names(model)}
