// The TensorFlow / JavaScript side of `crossbind bench` (runners/README.md,
// "Benchmark worker"): one measurement of one model, one JSON line. Inputs
// are the synthetic ones every binding makes: sample s is the flat index
// range [s * size, (s + 1) * size) of the input in PyTorch's NCHW order
// (moved to TF.js' NHWC), pixel i = (i % 251) / 251, token i = (i * 7919) %
// 10000; label s % 10 (s % 2 for the binary models). Batches are made outside
// the timed region; training steps run through model.trainOnBatch,
// predictions through model.predict in inference mode.
'use strict';
const fs = require('fs');
const { performance } = require('perf_hooks');
const { logitsModel, BINARY } = require('./models');

// Per-sample input shape in TF.js' order.
const INPUT_SHAPES = { lenet1: [28, 28, 1], lenet5: [28, 28, 1], vgg16: [32, 32, 3], lstm: [300], gru: [300], 'gru-rb': [300] };
const NCHW = { lenet1: [1, 28, 28], lenet5: [1, 28, 28], vgg16: [3, 32, 32] };

function batchOf(tf, model, s0, n) {
  if (BINARY.has(model)) {
    const x = new Int32Array(n * 300);
    for (let k = 0; k < x.length; k++) x[k] = ((s0 * 300 + k) * 7919) % 10000;
    const y = Float32Array.from({ length: n }, (_, i) => (s0 + i) % 2);
    return [tf.tensor(x, [n, 300], 'int32'), tf.tensor(y, [n, 1])];
  }
  const [c, h, w] = NCHW[model], size = c * h * w;
  const x = new Float32Array(n * size);
  for (let s = 0; s < n; s++)
    for (let ci = 0; ci < c; ci++)
      for (let p = 0; p < h * w; p++) x[s * size + p * c + ci] = (((s0 + s) * size + ci * h * w + p) % 251) / 251;
  const y = Float32Array.from({ length: n }, (_, i) => (s0 + i) % 10);
  return [tf.tensor(x, [n, h, w, c]), tf.tensor(y, [n, 1])];
}

function predict(tf, fwd, model, x) {
  const out = tf.tidy(() => fwd.predict(x, { batchSize: x.shape[0] })); // the whole batch at once (predict splits by 32 by default)
  const v = out.dataSync();
  out.dispose();
  const n = x.shape[0], k = v.length / n, pred = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    if (BINARY.has(model)) { pred[i] = v[i] >= 0.5 ? 1 : 0; continue; }
    let best = 0;
    for (let j = 1; j < k; j++) if (v[i * k + j] > v[i * k + best]) best = j;
    pred[i] = best;
  }
  return pred;
}

// This process's peak resident memory (VmHWM), KiB; -1 if unknown.
function vmhwmKib() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) : -1;
  } catch (e) {
    return -1;
  }
}

async function run(tf, net, model, o, protocol) {
  const fwd = logitsModel(tf, net, model);
  if (o.kind === 'startup') {
    const [x] = batchOf(tf, model, 0, 1);
    const label = predict(tf, fwd, model, x)[0];
    // When the answer was ready, on the clock the harness started us by (CLOCK_MONOTONIC).
    process.stdout.write(JSON.stringify({ label, monotonic_s: Number(process.hrtime.bigint()) / 1e9, vmhwm_kib: vmhwmKib() }) + '\n');
    return;
  }
  const times = [];
  if (o.kind === 'train') {
    const [kind, lr] = protocol;
    net.compile({ optimizer: kind === 'adam' ? tf.train.adam(lr) : tf.train.sgd(lr),
      loss: BINARY.has(model) ? 'binaryCrossentropy' : 'sparseCategoricalCrossentropy' });
    const step = async (x, y) => {
      const t0 = performance.now();
      await net.trainOnBatch(x, y);
      const t = (performance.now() - t0) / 1000;
      x.dispose(); y.dispose();
      return t;
    };
    await step(...batchOf(tf, model, 0, o.batch));
    for (let r = 0; r < o.repeat; r++) {
      let t = 0;
      for (let s0 = 0; s0 < o.samples; s0 += o.batch) t += await step(...batchOf(tf, model, s0, Math.min(o.batch, o.samples - s0)));
      times.push(t);
    }
  } else if (o.kind === 'infer') {
    for (let r = 0; r <= o.repeat; r++) { // pass 0: warm-up
      let t = 0;
      for (let s0 = 0; s0 < o.samples; s0 += o.batch) {
        const [x, y] = batchOf(tf, model, s0, Math.min(o.batch, o.samples - s0));
        const t0 = performance.now();
        predict(tf, fwd, model, x);
        t += performance.now() - t0;
        x.dispose(); y.dispose();
      }
      if (r) times.push(t / 1000);
    }
  } else {
    for (let s = 0; s < o.samples + 5; s++) { // 5 warm-up samples
      const [x, y] = batchOf(tf, model, s, 1);
      const t0 = performance.now();
      predict(tf, fwd, model, x);
      if (s >= 5) times.push((performance.now() - t0) / 1000);
      x.dispose(); y.dispose();
    }
  }
  process.stdout.write(JSON.stringify({ times_s: times, tfjs: tf.version.tfjs, backend: tf.getBackend(),
    tensorflow: tf.backend().binding.TF_Version, intra_op_threads: Number(process.env.TF_NUM_INTRAOP_THREADS),
    vmhwm_kib: vmhwmKib() }) + '\n');
}

module.exports = { INPUT_SHAPES, run };
