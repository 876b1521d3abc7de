#!/usr/bin/env python3
"""Checks of the TensorFlow/Python binding that need TensorFlow itself (run
by tests/runner_tensorflow-python_test.sh with the binding's environment):

  roundtrip MODEL...   canonical -> Keras -> canonical is bit-exact (with the
                       starting weights as the reference for the summed RNN
                       biases), and Keras -> canonical -> Keras is bit-exact
                       without one; every tensor, random values.
  compare A.npy B.npy TOL   largest absolute difference of two output files <= TOL.
  close A.npy REF.npy ATOL RTOL   the tolerance rule of tests/README.md.
  export-all MODEL WEIGHTS DIR [F1,F2..]   DIR/final.<format> for each export format (default all).
  formats-agree MODEL WEIGHTS DIR X.npy ATOL RTOL   h5, keras, savedmodel and tfjs exports
                       loaded back as `eval` loads them: logits on X against the Keras model's.
  random-init MODEL OUT.safetensors   random canonical weights for MODEL.
  forward MODEL INIT X.npy OUT.npy     the Keras model's outputs from canonical weights.
  grurb-grad INIT X.npy Y.npy SGD_FINAL TOL   gradients of the mean BCE
                       against crossbind's one SGD step with lr 1 (g = w0 - w1).
  grurb-adam INIT X.npy Y.npy LR STEPS ADAM_FINAL TOL [RUN_JSON]   STEPS Adam
                       steps of Keras' GRU-rb against crossbind's final weights
                       (and the losses after each step against its run.json).

Each prints what it measured and exits 1 when a bound is broken.
"""
import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pytorch"))
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import cb_keras_map  # noqa: E402
import cb_tf_export  # noqa: E402
import cb_safetensors  # noqa: E402
import crossbind_tf  # noqa: E402

crossbind_tf.tf = tf


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def roundtrip(models):
    ok = True
    rng = np.random.default_rng(20261202)
    for name in models:
        model = crossbind_tf.build(name)
        # random canonical weights of the right shapes (independent bias pairs, so the sums matter)
        shapes = {k: v.shape for k, v in crossbind_tf.get_canonical(model, name).items()}
        canon = {k: (rng.integers(0, 1000, s).astype(np.int64) if k.endswith("num_batches_tracked")
                     else rng.standard_normal(s).astype(np.float32)) for k, s in shapes.items()}
        crossbind_tf.set_canonical(model, name, canon)
        back = crossbind_tf.get_canonical(model, name, reference=canon)
        bad = [k for k in canon if not bits_equal(canon[k], back[k])]
        # Keras -> canonical -> Keras without a reference
        kw = {layer: model.get_layer(layer).get_weights() for layer in cb_keras_map.keras_layers(name)}
        again = cb_keras_map.to_keras(name, cb_keras_map.to_canonical(name, kw))
        bad_k = [f"{layer}[{i}]" for layer in kw for i, (a, b) in enumerate(zip(kw[layer], again[layer]))
                 if not bits_equal(a, b)]
        n = sum(int(np.size(v)) for k, v in canon.items() if not k.endswith("num_batches_tracked"))
        print(f"    {name}: {len(canon)} tensors, {n} values; canonical->Keras->canonical differs in "
              f"{len(bad)} {bad[:3]}; Keras->canonical->Keras differs in {len(bad_k)} {bad_k[:3]}")
        ok = ok and not bad and not bad_k
    return ok


def compare(a, b, tol):
    x, y = np.load(a), np.load(b)
    if x.shape != y.shape:
        print(f"    shapes differ: {x.shape} vs {y.shape}")
        return False
    d = float(np.max(np.abs(x.astype(np.float64) - y)))
    same = int((x.argmax(1) == y.argmax(1)).sum()) if x.ndim == 2 and x.shape[1] > 1 else None
    print(f"    largest |difference| {d:.3e} over {x.size} values (bound {tol:g})"
          + (f"; same argmax {same}/{len(x)}" if same is not None else ""))
    return d <= tol


def close(a, b, atol, rtol):
    """The tolerance rule of tests/README.md: |a - r| <= atol + rtol |r|, r = B."""
    x, r = np.load(a).astype(np.float64), np.load(b).astype(np.float64)
    if x.shape != r.shape:
        print(f"    shapes differ: {x.shape} vs {r.shape}")
        return False
    d = np.abs(x - r)
    worst = float(np.max(d / (atol + rtol * np.abs(r))))
    print(f"    largest |difference| {float(d.max()):.3e} over {x.size} values; worst ratio to the bound "
          f"(atol {atol:g}, rtol {rtol:g}) {worst:.3f}")
    return worst <= 1.0


def export_all(name, weights, out, formats=None):
    """The export formats (default: all) from one weights file, in one
    process (each format's seconds printed)."""
    model, _, _ = crossbind_tf.load_model(name, weights)
    os.makedirs(out, exist_ok=True)
    formats = formats.split(",") if formats else cb_tf_export.FORMATS
    done, errors = crossbind_tf.export_formats(model, name, {f: os.path.join(out, f"final.{f}") for f in formats})
    print(f"    {name}: " + ", ".join(f"{f} {t:.2f}s" for f, t in done.items()))
    return not errors


def formats_agree(name, weights, out, xfile, atol, rtol):
    """Exports the formats this binding loads back (h5, keras, savedmodel,
    tfjs), loads each as `eval` does and compares its logits on X with the
    Keras model's from WEIGHTS (the tolerance rule)."""
    formats = ["h5", "keras", "savedmodel", "tfjs"]
    if not export_all(name, weights, out, ",".join(formats)):
        return False
    x = np.load(xfile)
    x = x.astype(np.int32) if crossbind_tf.binary(name) else x

    def logits(path):
        model, _, _ = crossbind_tf.load_model(name, path)
        return crossbind_tf.logits_model(model, name)(x, training=False).numpy().astype(np.float64)
    ref = logits(weights)
    ok = True
    for f in formats:
        got = logits(os.path.join(out, f"final.{f}"))
        d = np.abs(got - ref)
        worst = float(np.max(d / (atol + rtol * np.abs(ref))))
        print(f"    {name} {f}: largest |difference| {float(d.max()):.3e} over {ref.size} values, "
              f"worst ratio to the bound {worst:.3f}")
        ok = ok and got.shape == ref.shape and worst <= 1.0
    return ok


def grurb_model(init):
    model = crossbind_tf.build("gru-rb", dropout=0.0)
    t, _ = cb_safetensors.read(init)
    crossbind_tf.set_canonical(model, "gru-rb", t)
    return model, t


def forward(name, init, xfile, out):
    """The Keras model's outputs (probabilities for the IMDb models) on X."""
    model = crossbind_tf.build(name, dropout=0.0)
    t, _ = cb_safetensors.read(init)
    crossbind_tf.set_canonical(model, name, t)
    x = np.load(xfile)
    x = x.astype(np.int32) if crossbind_tf.binary(name) else x
    np.save(out, model(x, training=False).numpy().astype(np.float32))
    return True


def random_init(name, out):
    """Canonical weights drawn U(-1/sqrt(H), 1/sqrt(H)) (embedding N(0,1)),
    with independent bias pairs: exercises every block of the mapping."""
    rng = np.random.default_rng(20261203)
    model = crossbind_tf.build(name)
    t = {}
    for k, v in crossbind_tf.get_canonical(model, name).items():
        if k.endswith("num_batches_tracked"):
            t[k] = np.zeros((), np.int64)
        elif k == "embedding.weight":
            t[k] = rng.standard_normal(v.shape).astype(np.float32)
        else:
            t[k] = rng.uniform(-1 / 512 ** 0.5 * 2, 1 / 512 ** 0.5 * 2, v.shape).astype(np.float32)
    cb_safetensors.write(out, t, {"model": name, "format": "crossbind-weights/1"})
    return True


def keras_grads(model, x, y):
    with tf.GradientTape() as tape:
        p = model(x, training=True)
        loss = tf.reduce_mean(-(y[:, None] * tf.math.log(p) + (1 - y[:, None]) * tf.math.log(1 - p)))
    grads = tape.gradient(loss, model.trainable_variables)
    return loss, {v.name: (tf.convert_to_tensor(g).numpy() if g is not None else np.zeros(v.shape, np.float32))
                  for v, g in zip(model.trainable_variables, grads)}


def _by_layer(model, values):
    """{layer: [arrays]} from a {variable name: array} of the model's trainable variables."""
    out = {}
    for layer in cb_keras_map.keras_layers("gru-rb"):
        out[layer] = [values[w.name] for w in model.get_layer(layer).trainable_weights]
    return out


def grurb_grad(init, xfile, yfile, sgd_final, tol):
    model, t0 = grurb_model(init)
    x, y = np.load(xfile).astype(np.int32), np.load(yfile).astype(np.float32)
    loss, g = keras_grads(model, tf.constant(x), tf.constant(y))
    # Keras' one GRU-rb bias: its gradient is the gradient of b_ih and of b_hh alike
    gk = _by_layer(model, g)
    kb = gk["rnn"][2]
    h = kb.shape[0] // 3
    kb_canon = np.concatenate([kb[h:2 * h], kb[:h], kb[2 * h:]])
    canon_g = cb_keras_map.to_canonical("gru-rb", gk)
    canon_g["rnn.bias_ih_l0"] = canon_g["rnn.bias_hh_l0"] = kb_canon
    t1, _ = cb_safetensors.read(sgd_final)
    ok = True
    print(f"    Keras loss {float(loss):.7f}")
    for k in canon_g:
        cb = t0[k].astype(np.float64) - t1[k]
        d = float(np.max(np.abs(cb - canon_g[k])))
        scale = float(np.max(np.abs(canon_g[k])))
        print(f"    grad {k}: largest |difference| {d:.3e} (largest |gradient| {scale:.3e})")
        ok = ok and d <= tol
    return ok


def grurb_adam(init, xfile, yfile, lr, steps, adam_final, tol, run_json=None):
    """Keras' GRU-rb forward and backward; Adam on PyTorch's parameters:
    the Keras bias is b_ih + b_hh, and each of the pair gets its gradient
    (as crossbind and PyTorch update them). Keras' Adam puts epsilon outside
    the bias correction (var -= lr sqrt(1-b2^t)/(1-b1^t) m / (sqrt(v) + eps)),
    PyTorch inside it (sqrt(v)/sqrt(1-b2^t) + eps): step t uses Keras eps =
    1e-8 sqrt(1-b2^t), PyTorch's 1e-8 (a fixed 1e-8 is 30x PyTorch's at step
    1 and moves parameters with gradients near 1e-7 by visibly less)."""
    model, t0 = grurb_model(init)
    x, y = tf.constant(np.load(xfile).astype(np.int32)), tf.constant(np.load(yfile).astype(np.float32))
    k0 = cb_keras_map.to_keras("gru-rb", t0)
    h = k0["rnn"][2].shape[0] // 3

    def swap(a):
        return np.concatenate([a[h:2 * h], a[:h], a[2 * h:]])
    b_ih = tf.Variable(swap(t0["rnn.bias_ih_l0"]).astype(np.float32))
    b_hh = tf.Variable(swap(t0["rnn.bias_hh_l0"]).astype(np.float32))
    bias = model.get_layer("rnn").trainable_weights[2]
    others = [v for v in model.trainable_variables if v is not bias]
    opt = tf.keras.optimizers.Adam(learning_rate=lr, epsilon=1e-8)
    losses = []
    for step in range(1, steps + 1):
        opt.epsilon = 1e-8 * (1 - 0.999 ** step) ** 0.5
        bias.assign(b_ih + b_hh)
        with tf.GradientTape() as tape:
            p = model(x, training=True)
            loss = tf.reduce_mean(-(y[:, None] * tf.math.log(p) + (1 - y[:, None]) * tf.math.log(1 - p)))
        grads = tape.gradient(loss, others + [bias])
        gb = tf.convert_to_tensor(grads[-1])
        opt.apply_gradients(list(zip([tf.convert_to_tensor(g) for g in grads[:-1]], others))
                            + [(gb, b_ih), (gb, b_hh)])
        losses.append(float(loss))
    bias.assign(b_ih + b_hh)
    p = model(x, training=False)
    losses.append(float(tf.reduce_mean(-(y[:, None] * tf.math.log(p) + (1 - y[:, None]) * tf.math.log(1 - p)))))
    kw = {layer: model.get_layer(layer).get_weights() for layer in cb_keras_map.keras_layers("gru-rb")}
    canon = cb_keras_map.to_canonical("gru-rb", kw)
    canon["rnn.bias_ih_l0"], canon["rnn.bias_hh_l0"] = swap(b_ih.numpy()), swap(b_hh.numpy())
    t1, _ = cb_safetensors.read(adam_final)
    print(f"    Keras losses before each step and after the last: {', '.join(f'{v:.7f}' for v in losses)}")
    ok = True
    if run_json:
        import json
        cb = [e["train_loss"] for e in json.load(open(run_json))["epochs"]]
        d = max(abs(a - b) for a, b in zip(cb, losses[1:]))
        print(f"    crossbind's losses after each step: {', '.join(f'{v:.7f}' for v in cb)}; "
              f"largest |difference| {d:.3e} (bound {tol:g})")
        ok = len(cb) == steps and d <= tol
    for k in canon:
        d = float(np.max(np.abs(canon[k].astype(np.float64) - t1[k])))
        moved = float(np.max(np.abs(t1[k].astype(np.float64) - t0[k])))
        print(f"    after {steps} Adam steps {k}: largest |difference| {d:.3e} (largest move {moved:.3e})")
        ok = ok and d <= tol
    return ok


def main():
    a = sys.argv[1:]
    if not a:
        print(__doc__)
        sys.exit(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    cmd = a[0]
    if cmd == "roundtrip":
        ok = roundtrip(a[1:])
    elif cmd == "compare":
        ok = compare(a[1], a[2], float(a[3]))
    elif cmd == "close":
        ok = close(a[1], a[2], float(a[3]), float(a[4]))
    elif cmd == "export-all":
        ok = export_all(a[1], a[2], a[3], a[4] if len(a) > 4 else None)
    elif cmd == "formats-agree":
        ok = formats_agree(a[1], a[2], a[3], a[4], float(a[5]), float(a[6]))
    elif cmd == "forward":
        ok = forward(a[1], a[2], a[3], a[4])
    elif cmd == "random-init":
        ok = random_init(a[1], a[2])
    elif cmd == "grurb-grad":
        ok = grurb_grad(a[1], a[2], a[3], a[4], float(a[5]))
    elif cmd == "grurb-adam":
        ok = grurb_adam(a[1], a[2], a[3], float(a[4]), int(a[5]), a[6], float(a[7]), a[8] if len(a) > 8 else None)
    else:
        print(f"unknown check {cmd}", file=sys.stderr)
        sys.exit(2)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
