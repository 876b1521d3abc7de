// The ONNX Runtime / JavaScript side of `crossbind bench` (runners/README.md,
// "Benchmark worker"): one inference measurement of one model, printed as
// one JSON line. Inputs are the synthetic ones every binding makes: sample s
// is the flat index range [s * size, (s + 1) * size), pixel i = (i % 251) /
// 251, token i = (i * 7919) % 10000. Batches are made outside the timed
// region.
'use strict';
const fs = require('fs');
const { performance } = require('perf_hooks');

// Input shape per sample and dtype of the study's models.
const MODELS = {
  lenet1: [[1, 28, 28], 'float32'], lenet5: [[1, 28, 28], 'float32'], vgg16: [[3, 32, 32], 'float32'],
  lstm: [[300], 'int64'], gru: [[300], 'int64'], 'gru-rb': [[300], 'int64'],
  // The ImageNet CNNs (torchvision's, exported to ONNX by the PyTorch/Python runner).
  mobilenet_v2: [[3, 224, 224], 'float32'], resnet18: [[3, 224, 224], 'float32'], resnet50: [[3, 224, 224], 'float32'],
  resnet101: [[3, 224, 224], 'float32'], inception_v3: [[3, 299, 299], 'float32'],
  mobilenet_v3_small: [[3, 224, 224], 'float32'], mobilenet_v3_large: [[3, 224, 224], 'float32'],
  efficientnet_b0: [[3, 224, 224], 'float32'],
};

// Any other model (`crossbind bench --onnx FILE`, a file of the user's): the
// shape per sample and type of the file's one input, as the session reads
// them; its first dimension is the batch.
function fileSpec(sess, model, fail) {
  const meta = sess.inputMetadata && sess.inputMetadata[0];
  if (!meta || !meta.isTensor || sess.inputNames.length !== 1)
    fail(`bench: ${model}: the file must have one tensor input`);
  const dims = meta.shape.slice(1);
  if (meta.type !== 'float32' || meta.shape.length < 2 || !dims.every((d) => Number.isInteger(d) && d > 0))
    fail(`bench: ${model}: its input must be float32 [batch, fixed sizes...] (it is ${meta.type} [${meta.shape}])`);
  return [dims, 'float32'];
}

function batchOf(ort, spec, s0, n) {
  const [dims, dtype] = spec;
  const size = dims.reduce((a, b) => a * b, 1);
  if (dtype === 'int64') {
    const x = new BigInt64Array(n * size);
    for (let k = 0; k < n * size; k++) x[k] = BigInt(((s0 * size + k) * 7919) % 10000);
    return new ort.Tensor('int64', x, [n, ...dims]);
  }
  const x = new Float32Array(n * size);
  for (let k = 0; k < n * size; k++) x[k] = ((s0 * size + k) % 251) / 251;
  return new ort.Tensor('float32', x, [n, ...dims]);
}

// The predicted label of each sample (argmax; sigmoid >= 0.5 for one output).
function labels(out, n) {
  const k = out.length / n, pred = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    if (k === 1) { pred[i] = out[i] >= 0 ? 1 : 0; continue; }
    let best = 0;
    for (let j = 1; j < k; j++) if (out[i * k + j] > out[i * k + best]) best = j;
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

async function predict(sess, x) {
  const r = await sess.run({ [sess.inputNames[0]]: x });
  return labels(r[sess.outputNames[0]].data, x.dims[0]);
}

async function bench(ort, sess, o, fail) {
  const { model, kind } = o;
  const spec = model in MODELS ? MODELS[model] : fileSpec(sess, model, fail);
  const batch = o.batch || 1, samples = o.samples || 1, repeat = o.repeat || 1;
  if (kind === 'startup') {
    const pred = await predict(sess, batchOf(ort, spec, 0, 1));
    // When the answer was ready, on the clock the harness started us by (CLOCK_MONOTONIC).
    process.stdout.write(JSON.stringify({ label: pred[0], monotonic_s: Number(process.hrtime.bigint()) / 1e9, vmhwm_kib: vmhwmKib() }) + '\n');
    return;
  }
  const times = [];
  if (kind === 'infer') {
    for (let r = 0; r <= repeat; r++) { // pass 0: warm-up
      let t = 0;
      for (let s0 = 0; s0 < samples; s0 += batch) {
        const x = batchOf(ort, spec, s0, Math.min(batch, samples - s0));
        const t0 = performance.now();
        await predict(sess, x);
        t += performance.now() - t0;
      }
      if (r) times.push(t / 1000);
    }
  } else if (kind === 'latency') {
    for (let s = 0; s < samples + 5; s++) { // 5 warm-up samples
      const x = batchOf(ort, spec, s, 1);
      const t0 = performance.now();
      await predict(sess, x);
      if (s >= 5) times.push((performance.now() - t0) / 1000);
    }
  } else {
    fail(`bench: ONNX Runtime runs inference only; kind '${kind}' is not one it measures`);
  }
  process.stdout.write(JSON.stringify({ times_s: times, onnxruntime: ort.env.versions ? ort.env.versions.node : null,
    vmhwm_kib: vmhwmKib() }) + '\n');
}

module.exports = { bench };
