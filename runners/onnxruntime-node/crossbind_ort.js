#!/usr/bin/env node
// The ONNX Runtime / JavaScript binding of the crossbind study: inference in
// serialization mode (ONNX files) with the same eval options and JSON as the
// other bindings, `run` on .npy tensors, and `delta`: one model on each input
// alone at one graph optimisation level, for `crossbind delta`.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { readNpy, writeNpy } = require('./npy');
const { loadTest } = require('./data');
const { bench } = require('./bench');

const DEFAULT_DATA = '/usr/share/datasets/fashion-mnist';

function fail(msg) {
  process.stderr.write(`crossbind-ort: error: ${msg}\n`);
  process.exit(1);
}

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    fail(`onnxruntime-node is not installed (run scripts/setup.sh): ${e.message}`);
  }
}

function usage() {
  return 'usage: crossbind_ort.js eval [MODEL] --weights FILE.onnx [--data DIR] [--batch N] [--repeat N]\n' +
    '         [--limit-test N] [--threads N] [--predictions FILE] [--logits FILE.npy] [--json]\n' +
    '       crossbind_ort.js run --onnx FILE --input X.npy ... --output Y.npy ... [--threads N]\n' +
    '       crossbind_ort.js bench --model MODEL --kind infer|latency|startup --weights FILE.onnx [--batch N]\n' +
    '         [--samples N] [--repeat N] [--threads N]   (a MODEL it does not know: the shape of FILE\'s input)\n' +
    '       crossbind_ort.js delta --model FILE.onnx --inputs X.npy --out DIR --opt-level disabled|basic|extended|all\n' +
    '         --threads N --reps R --warmup K [--capture]\n';
}

function parse(argv, spec) {
  const opts = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') { process.stdout.write(usage()); process.exit(0); }
    if (!a.startsWith('--')) { opts._.push(a); continue; }
    const key = a.slice(2);
    if (!(key in spec)) fail(`unknown option '${a}'`);
    if (spec[key] === 'flag') { opts[key] = true; continue; }
    if (i + 1 >= argv.length) fail(`option ${a} needs a value`);
    const v = argv[++i];
    if (spec[key] === 'int') {
      if (!/^[0-9]+$/.test(v) || Number(v) < 1) fail(`${a} must be a positive integer, got '${v}'`);
      opts[key] = Number(v);
    } else if (spec[key] === 'count') {
      if (!/^[0-9]+$/.test(v)) fail(`${a} must be a non-negative integer, got '${v}'`);
      opts[key] = Number(v);
    } else if (spec[key] === 'list') {
      (opts[key] = opts[key] || []).push(v);
    } else {
      opts[key] = v;
    }
  }
  return opts;
}

function checkOnnx(path) {
  let head;
  try {
    const fd = fs.openSync(path, 'r');
    head = Buffer.alloc(2);
    fs.readSync(fd, head, 0, 2, 0);
    fs.closeSync(fd);
  } catch (e) {
    fail(`cannot open ${path}: ${e.message}`);
  }
  if (head[0] !== 0x08) fail(`${path} is not an ONNX model: ONNX Runtime loads models in serialization mode only`);
}

async function session(ort, path, threads, level = 'all') {
  checkOnnx(path);
  try {
    return await ort.InferenceSession.create(path, {
      intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
      graphOptimizationLevel: level,
    });
  } catch (e) {
    fail(`${path}: ONNX Runtime cannot load it: ${e.message}`);
  }
}

// Macro F1 and macro one-vs-rest AUC (ties averaged), as the other bindings.
function f1Macro(pred, labels, k) {
  let sum = 0, used = 0;
  for (let c = 0; c < k; c++) {
    let tp = 0, fp = 0, fn = 0;
    for (let i = 0; i < pred.length; i++) {
      if (pred[i] === c && labels[i] === c) tp++;
      else if (pred[i] === c) fp++;
      else if (labels[i] === c) fn++;
    }
    if (tp + fp + fn === 0) continue;
    sum += (2 * tp) / (2 * tp + fp + fn);
    used++;
  }
  return used ? sum / k : NaN;
}

function aucBinary(score, positive) {
  const n = score.length;
  const idx = Array.from({ length: n }, (_, i) => i).sort((a, b) => score[a] - score[b]);
  let pos = 0, rankSum = 0;
  for (let i = 0; i < n;) {
    let j = i;
    while (j + 1 < n && score[idx[j + 1]] === score[idx[i]]) j++;
    const rank = (i + j + 2) / 2;
    for (let t = i; t <= j; t++) if (positive[idx[t]]) { rankSum += rank; pos++; }
    i = j + 1;
  }
  const neg = n - pos;
  if (!pos || !neg) return NaN;
  return (rankSum - (pos * (pos + 1)) / 2) / (pos * neg);
}

function aucMacro(probs, labels, k) {
  const vals = [];
  for (let c = 0; c < k; c++) {
    const s = new Float64Array(labels.length), p = new Uint8Array(labels.length);
    for (let i = 0; i < labels.length; i++) { s[i] = probs[i * k + c]; p[i] = labels[i] === c; }
    const v = aucBinary(s, p);
    if (!Number.isNaN(v)) vals.push(v);
  }
  return vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : NaN;
}

async function evalPass(ort, sess, d, batch, k) {
  const input = sess.inputNames[0], output = sess.outputNames[0];
  const logits = new Float32Array(d.n * k);
  const t0 = process.hrtime.bigint();
  for (let start = 0; start < d.n; start += batch) {
    const bs = Math.min(batch, d.n - start);
    const x = new ort.Tensor(d.dtype || 'float32', d.images.subarray(start * d.sample, (start + bs) * d.sample), [bs, ...d.dims]);
    const r = await sess.run({ [input]: x });
    logits.set(r[output].data, start * k);
  }
  return { time: Number(process.hrtime.bigint() - t0) / 1e9, logits };
}

// A binary model outputs one sigmoid probability per sample: prediction
// p >= 0.5, binary cross-entropy, F1 over both classes, AUC of p.
function scoreBinary(p, labels, withMetrics) {
  const n = labels.length, pred = new Int32Array(n), probs = Float64Array.from(p);
  let correct = 0, loss = 0;
  for (let i = 0; i < n; i++) {
    pred[i] = p[i] >= 0.5 ? 1 : 0;
    if (pred[i] === labels[i]) correct++;
    // PyTorch's BCELoss clamps each log term at -100
    loss -= Math.max(labels[i] ? Math.log(p[i]) : Math.log(1 - p[i]), -100);
  }
  return {
    pred, probs, correct, loss: loss / n,
    f1: withMetrics ? f1Macro(pred, labels, 2) : NaN,
    auc: withMetrics ? aucBinary(probs, Uint8Array.from(labels, (l) => l === 1)) : NaN,
  };
}

function score(logits, labels, k, withMetrics) {
  if (k === 1) return scoreBinary(logits, labels, withMetrics);
  const n = labels.length, pred = new Int32Array(n), probs = new Float64Array(n * k);
  let correct = 0, loss = 0;
  for (let i = 0; i < n; i++) {
    const row = logits.subarray(i * k, (i + 1) * k);
    let best = 0, m = row[0];
    for (let j = 1; j < k; j++) if (row[j] > row[best]) best = j;
    for (let j = 1; j < k; j++) if (row[j] > m) m = row[j];
    let sum = 0;
    for (let j = 0; j < k; j++) sum += Math.exp(row[j] - m);
    for (let j = 0; j < k; j++) probs[i * k + j] = Math.exp(row[j] - m) / sum;
    loss += Math.log(sum) + m - row[labels[i]];
    pred[i] = best;
    if (best === labels[i]) correct++;
  }
  return {
    pred, probs, correct, loss: loss / n,
    f1: withMetrics ? f1Macro(pred, labels, k) : NaN, auc: withMetrics ? aucMacro(probs, labels, k) : NaN,
  };
}

async function cmdEval(argv) {
  const o = parse(argv, { weights: 'str', data: 'str', batch: 'int', repeat: 'int', 'limit-test': 'int',
    threads: 'int', predictions: 'str', logits: 'str', json: 'flag' });
  if (!o.weights) fail('eval: --weights FILE.onnx is required');
  const model = o._[0] || 'onnx', batch = o.batch || 128, repeat = o.repeat || 5;
  const threads = o.threads || os.cpus().length;
  const ort = loadOrt();
  const sess = await session(ort, o.weights, threads);
  let d;
  try {
    d = loadTest(o.data || DEFAULT_DATA, o['limit-test'] || 0);
  } catch (e) {
    fail(e.message);
  }
  // The class count from one sample's output.
  const one = await sess.run({ [sess.inputNames[0]]: new ort.Tensor(d.dtype || 'float32', d.images.subarray(0, d.sample), [1, ...d.dims]) });
  const k = one[sess.outputNames[0]].data.length;
  await evalPass(ort, sess, d, batch, k); // warm-up
  const times = [], counts = [];
  let last;
  for (let i = 0; i < repeat; i++) {
    last = await evalPass(ort, sess, d, batch, k);
    times.push(last.time);
    counts.push(score(last.logits, d.labels, k, false).correct);
  }
  const r = score(last.logits, d.labels, k, true);
  if (o.logits) writeNpy(o.logits, [d.n, k], last.logits);
  if (o.predictions) {
    const lines = ['index,label,prediction,' + Array.from({ length: k }, (_, j) => `p${j}`).join(',')];
    for (let i = 0; i < d.n; i++)
      lines.push(`${i},${d.labels[i]},${r.pred[i]},` + Array.from(r.probs.subarray(i * k, (i + 1) * k), (v) => v.toPrecision(9)).join(','));
    fs.writeFileSync(o.predictions, lines.join('\n') + '\n');
  }
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  const res = {
    binding: 'onnxruntime-node', model, load_mode: 'serialization', format: 'ONNX', weights: o.weights,
    correct: r.correct, total: d.n, accuracy: r.correct / d.n, loss: r.loss, f1_macro: r.f1, auc_macro: r.auc,
    batch, threads, times_s: times, correct_per_pass: counts, mean_time_s: mean, onnxruntime: ort.env.versions ? ort.env.versions.node : null,
  };
  if (o.json) process.stdout.write(JSON.stringify(res) + '\n');
  else process.stdout.write(`${model}: ${r.correct}/${d.n} correct, accuracy ${res.accuracy.toFixed(4)}, loss ${r.loss.toFixed(4)}, ` +
    `macro F1 ${r.f1.toFixed(4)}, AUC ${r.auc.toFixed(4)}, mean time ${mean.toFixed(4)}s over ${repeat} passes\n`);
}

async function cmdRun(argv) {
  const o = parse(argv, { onnx: 'str', weights: 'str', input: 'list', output: 'list', threads: 'int' });
  const file = o.onnx || o.weights;
  if (!file || !o.input || !o.output) fail('run: --onnx FILE, --input and --output are required');
  const ort = loadOrt();
  const sess = await session(ort, file, o.threads || os.cpus().length);
  if (o.input.length !== sess.inputNames.length) fail(`the model has ${sess.inputNames.length} inputs, ${o.input.length} given`);
  if (o.output.length > sess.outputNames.length) fail(`the model has ${sess.outputNames.length} outputs`);
  const feeds = {};
  o.input.forEach((p, i) => {
    let t;
    try {
      t = readNpy(p);
    } catch (e) {
      fail(e.message);
    }
    feeds[sess.inputNames[i]] = new ort.Tensor(t.dtype, t.data, t.dims);
  });
  let r;
  try {
    r = await sess.run(feeds);
  } catch (e) {
    fail(`ONNX Runtime failed: ${e.message}`);
  }
  o.output.forEach((p, i) => {
    const t = r[sess.outputNames[i]];
    writeNpy(p, t.dims, t.data);
  });
}

async function cmdBench(argv) {
  const o = parse(argv, { model: 'str', kind: 'str', weights: 'str', batch: 'int', samples: 'int', repeat: 'int',
    threads: 'int' });
  if (!o.model || !o.kind || !o.weights) fail('bench: --model, --kind and --weights FILE.onnx are required');
  const ort = loadOrt();
  const sess = await session(ort, o.weights, o.threads || os.cpus().length);
  await bench(ort, sess, o, fail);
}

// ---------------------------------------------------------------- delta

// onnxruntime-node's SessionOptions.graphOptimizationLevel names, which its
// addon maps to ORT_DISABLE_ALL, ORT_ENABLE_BASIC, ORT_ENABLE_EXTENDED and
// ORT_ENABLE_ALL.
const OPT_LEVELS = ['disabled', 'basic', 'extended', 'all'];

function writeJson(file, obj) {
  const text = Array.isArray(obj) ? `[\n${obj.map((v) => JSON.stringify(v)).join(',\n')}\n]\n` : JSON.stringify(obj) + '\n';
  const tmp = `${file}.tmp.${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

function ortVersion() {
  return JSON.parse(fs.readFileSync(path.join(path.dirname(require.resolve('onnxruntime-node')), '..', 'package.json'))).version;
}

// The inputs: float32 images [n, C, H, W], or int64 token ids [n, L] for a
// model whose input is int64 (an embedding's), n >= 1, matching the model's
// input where its shape is known. Returns the array with its ORT type.
function deltaInputs(file, sess) {
  let t;
  try {
    t = readNpy(file);
  } catch (e) {
    fail(e.code === 'ENOENT' ? `cannot open inputs ${file}: no such file` : e.message);
  }
  const meta = sess.inputMetadata && sess.inputMetadata[0];
  const tokens = Boolean(meta && meta.isTensor && meta.type === 'int64');
  if (t.descr !== (tokens ? '<i8' : '<f4')) fail(`${file}: inputs must be ${tokens ? 'int64 token ids' : 'float32'}, not ${t.descr}`);
  const rank = tokens ? 2 : 4;
  const want = meta && meta.isTensor && meta.shape.length === rank ? meta.shape : tokens ? [null, null] : [null, 3, null, null];
  if (t.dims.length !== rank || t.dims[0] < 1 || t.dims.slice(1).some((d, i) => typeof want[i + 1] === 'number' ? d !== want[i + 1] : d < 1))
    fail(`${file}: inputs have shape [${t.dims.join(', ')}], the model needs [n, ${want.slice(1).map((d) => typeof d === 'number' ? d : '?').join(', ')}] with n >= 1`);
  t.type = tokens ? 'int64' : 'float32';
  return t;
}

// Each input alone (batch 1): the process's first run (input 0) timed on its
// own, K untimed runs of input 0, then R timed runs of each input in turn,
// the clock around the awaited run alone; only the first output (the logits)
// is fetched. --capture: input 0 once more with every output; each output
// after the first is an intermediate value the caller added to the graph.
async function cmdDelta(argv) {
  const o = parse(argv, { model: 'str', inputs: 'str', out: 'str', 'opt-level': 'str', threads: 'int', reps: 'int',
    warmup: 'count', capture: 'flag' });
  for (const k of ['model', 'inputs', 'out', 'opt-level', 'threads', 'reps', 'warmup'])
    if (o[k] === undefined) fail(`delta: --${k} is required`);
  const level = o['opt-level'];
  if (!OPT_LEVELS.includes(level)) fail(`delta: unknown --opt-level '${level}' (${OPT_LEVELS.join(', ')})`);
  const ort = loadOrt();
  if (!fs.existsSync(o.inputs)) fail(`cannot open inputs ${o.inputs}: no such file`);
  const sess = await session(ort, o.model, o.threads, level);
  const x = deltaInputs(o.inputs, sess);
  try {
    fs.mkdirSync(o.out, { recursive: true });
  } catch (e) {
    fail(`cannot make ${o.out}: ${e.message}`);
  }
  const [n, ...dims] = x.dims, size = dims.reduce((a, d) => a * d, 1);
  const input = sess.inputNames[0], logitsName = sess.outputNames[0];
  const feeds = Array.from({ length: n }, (_, i) => ({ [input]: new ort.Tensor(x.type, x.data.subarray(i * size, (i + 1) * size), [1, ...dims]) }));
  const run = async (i, fetches) => {
    try {
      return await sess.run(feeds[i], fetches);
    } catch (e) {
      return fail(`ONNX Runtime failed on input ${i}: ${e.message}`);
    }
  };
  const seconds = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;
  let t0 = process.hrtime.bigint();
  let r = await run(0, [logitsName]);
  const first = seconds(t0);
  const k = r[logitsName].data.length;
  const logits = new Float32Array(n * k);
  for (let w = 0; w < o.warmup; w++) await run(0, [logitsName]);
  const perInput = [];
  for (let i = 0; i < n; i++) {
    const row = [];
    for (let rep = 0; rep < o.reps; rep++) {
      t0 = process.hrtime.bigint();
      r = await run(i, [logitsName]);
      row.push(seconds(t0));
      if (rep === 0) logits.set(r[logitsName].data, i * k);
    }
    perInput.push(row);
  }
  writeNpy(path.join(o.out, 'outputs.npy'), [n, k], logits);
  if (o.capture) {
    const dir = path.join(o.out, 'capture');
    fs.mkdirSync(dir, { recursive: true });
    r = await run(0);
    const index = [];
    sess.outputNames.slice(1).forEach((name, i) => {
      const t = r[name], file = `${String(i).padStart(4, '0')}.npy`;
      try {
        writeNpy(path.join(dir, file), t.dims, t.data, t.type);
      } catch (e) {
        fail(`output ${name}: ${e.message}`);
      }
      index.push({ index: i, name, shape: Array.from(t.dims), dtype: t.type, file });
    });
    writeJson(path.join(dir, 'index.json'), index);
  }
  writeJson(path.join(o.out, 'times.json'), {
    first_call_s: first, reps: o.reps, warmup: o.warmup, threads: o.threads, per_input_s: perInput,
    framework: 'onnxruntime', version: ortVersion(), opt_level: level, execution_provider: 'cpu', device: 'cpu',
    inter_op_threads: 1, node: process.version, model: o.model, inputs: n,
  });
  const all = perInput.flat().sort((a, b) => a - b);
  process.stdout.write(`${path.basename(o.model)}: ${n} inputs x ${o.reps} runs at level ${level}, first call ` +
    `${(first * 1e3).toFixed(1)} ms, median ${(all[all.length >> 1] * 1e3).toFixed(2)} ms (onnxruntime-node ` +
    `${ortVersion()}, ${o.threads} threads) -> ${o.out}\n`);
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === 'eval') cmdEval(rest);
else if (cmd === 'bench') cmdBench(rest);
else if (cmd === 'run') cmdRun(rest);
else if (cmd === 'delta') cmdDelta(rest).catch((e) => fail(e.message));
else if (cmd === '-h' || cmd === '--help') process.stdout.write(usage());
else { process.stderr.write(usage()); fail(`unknown command '${cmd || ''}'`); }
