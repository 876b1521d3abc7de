#!/usr/bin/env node
// The TensorFlow / JavaScript binding of the crossbind study: the study's
// models as TF.js layers models (models.js), trained with model.fit and
// evaluated with model.predict on @tensorflow/tfjs-node, whose native addon
// runs every op through TensorFlow's C library (the tensorflow-cpu 2.18.1
// wheel of runners/tensorflow-python, see install.sh). Same command line,
// data files and JSON as the other runners (runners/README.md).
//
// Weights go in and out as crossbind's canonical safetensors (weights.js,
// the mapping of runners/tensorflow/cb_keras_map.py); TF.js' own layers-model
// format (a directory with model.json and weight shards) is written as
// final.tfjs/ and loaded by eval.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { performance } = require('perf_hooks');

const SEEDS = [287426343, 1850616268, 2068338201, 1202616822, 868822724];
const MODELS = ['lenet1', 'lenet5', 'vgg16', 'lstm', 'gru', 'gru-rb'];
const DATA_FORMATS = { lenet1: 'mnist', lenet5: 'mnist', vgg16: 'cifar', lstm: 'imdb', gru: 'imdb', 'gru-rb': 'imdb' };
const DEFAULT_DIRS = { mnist: '/usr/share/datasets/fashion-mnist', cifar: 'data/cifar-stand-in', imdb: 'data/imdb-prepared' };
const PROTOCOL = { lenet1: ['sgd', 0.05, 128, 200], lenet5: ['sgd', 0.05, 128, 200], vgg16: ['sgd', 0.05, 128, 200],
  lstm: ['adam', 8e-5, 256, 30], gru: ['adam', 3e-4, 256, 30], 'gru-rb': ['adam', 3e-4, 256, 30] };

function fail(msg) {
  process.stderr.write(`crossbind-tfjs: error: ${msg}\n`);
  process.exit(1);
}

const USAGE = `usage: crossbind_tfjs.js train MODEL [--run I | --seed S] [--epochs E] [--batch B] [--threads T]
         [--data DIR] [--out DIR] [--quiet] [--limit-train N] [--limit-test N] [--optimizer sgd|adam]
         [--lr L] [--momentum M] [--weight-decay W] [--init FILE.safetensors] [--no-dropout] [--shuffle]
         [--subactivities] [--device cpu]
       crossbind_tfjs.js eval MODEL --weights FILE.safetensors|DIR.tfjs [--data DIR] [--batch B]
         [--repeat R] [--threads T] [--limit-test N] [--logits FILE.npy] [--predictions FILE] [--json] [--device cpu]
       crossbind_tfjs.js bench --model M --kind train|infer|latency|startup --weights FILE [--batch B]
         [--samples N] [--repeat R] [--threads T]
models: ${MODELS.join(', ')} (gru: the reset-after GRU, a custom RNN cell; gru-rb: TF.js' GRU layer)
`;

// argv -> options by spec (flag, int (>= 1), count (>= 0), num, str, choice list).
function parse(argv, spec) {
  const o = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') { process.stdout.write(USAGE); process.exit(0); }
    if (!a.startsWith('--')) { o._.push(a); continue; }
    const key = a.slice(2), kind = spec[key];
    if (kind === undefined) fail(`unknown option '${a}'`);
    if (kind === 'flag') { o[key] = true; continue; }
    if (i + 1 >= argv.length) fail(`option ${a} needs a value`);
    const v = argv[++i];
    if (kind === 'int' || kind === 'count') {
      if (!/^[0-9]+$/.test(v) || (kind === 'int' && Number(v) < 1)) fail(`${a} must be ${kind === 'int' ? 'a positive' : 'a non-negative'} integer, got '${v}'`);
      o[key] = Number(v);
    } else if (kind === 'num') {
      if (!/^[-+0-9.eE]+$/.test(v) || !Number.isFinite(Number(v)) || Number(v) < 0) fail(`${a} must be a non-negative number, got '${v}'`);
      o[key] = Number(v);
    } else if (Array.isArray(kind)) {
      if (!kind.includes(v)) fail(`${a} must be one of ${kind.join(', ')}, got '${v}'`);
      o[key] = v;
    } else {
      o[key] = v;
    }
  }
  return o;
}

function modelArg(name) {
  if (!name) fail('a model is required (' + MODELS.join(', ') + ')');
  if (!MODELS.includes(name)) fail(`unknown model '${name}' (known: ${MODELS.join(', ')})`);
  return name;
}

// TensorFlow reads its thread counts from the environment when the addon
// creates its eager context, so they are set before tfjs-node loads.
function loadTf(threads) {
  process.env.TF_NUM_INTRAOP_THREADS = String(threads);
  process.env.TF_NUM_INTEROP_THREADS = '1';
  if (process.env.TF_CPP_MIN_LOG_LEVEL === undefined) process.env.TF_CPP_MIN_LOG_LEVEL = '2';
  if (process.env.TF_DETERMINISTIC_OPS === undefined) process.env.TF_DETERMINISTIC_OPS = '1';
  let tf;
  try {
    tf = require('@tensorflow/tfjs-node');
  } catch (e) {
    fail(`@tensorflow/tfjs-node is not installed or its addon does not load (run: bash runners/tensorflow-js/install.sh): ${e.message.split('\n')[0]}`);
  }
  if (tf.getBackend() !== 'tensorflow') fail(`the TF.js backend is '${tf.getBackend()}', not TensorFlow's C library`);
  return tf;
}

// TF.js draws its random numbers (initialisers, dropout masks) from
// Math.random unless given a seed: seeding it makes a run repeatable.
function seedAll(seed) {
  require('seedrandom')(String(seed), { global: true });
}

function loadData(model, dir, train, limit) {
  const d = require('./data');
  const fmt = DATA_FORMATS[model];
  try {
    return { mnist: d.loadMnist, cifar: d.loadCifar, imdb: d.loadImdb }[fmt](dir || DEFAULT_DIRS[fmt], train, limit || 0);
  } catch (e) {
    return fail(e.message);
  }
}

function inputTensor(tf, data, start, end) {
  const per = data.shape.reduce((a, b) => a * b, 1);
  const part = data.x.subarray(start * per, end * per);
  return tf.tensor(part, [end - start, ...data.shape], data.x instanceof Int32Array ? 'int32' : 'float32');
}

// ------------------------------------------------------------------ metrics

// Mean F1 over the classes that occur in the labels or the predictions.
function f1Macro(pred, labels, k) {
  const scores = [];
  for (let c = 0; c < k; c++) {
    let tp = 0, fp = 0, fn = 0;
    for (let i = 0; i < pred.length; i++) {
      if (pred[i] === c && labels[i] === c) tp++;
      else if (pred[i] === c) fp++;
      else if (labels[i] === c) fn++;
    }
    if (tp + fp + fn) scores.push((2 * tp) / (2 * tp + fp + fn));
  }
  return scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : NaN;
}

// One-vs-rest AUC over the ranks of the scores, ties sharing their mean rank.
function aucBinary(score, positive) {
  const n = score.length;
  if (score.some((v) => Number.isNaN(v))) return NaN;
  const idx = Array.from({ length: n }, (_, i) => i).sort((a, b) => score[a] - score[b] || a - b);
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
    for (let i = 0; i < labels.length; i++) { s[i] = probs[i * k + c]; p[i] = labels[i] === c ? 1 : 0; }
    const v = aucBinary(s, p);
    if (!Number.isNaN(v)) vals.push(v);
  }
  return vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : NaN;
}

// One pass over a data set in file order, inference mode: the outputs
// (logits, or the sigmoid probability) and their scores.
function evaluate(tf, fwd, data, batch, binary, withMetrics) {
  const k = binary ? 1 : data.classes;
  const out = new Float32Array(data.n * k);
  const t0 = performance.now();
  for (let s = 0; s < data.n; s += batch) {
    const e = Math.min(data.n, s + batch);
    const y = tf.tidy(() => fwd.predict(inputTensor(tf, data, s, e), { batchSize: e - s })); // one batch (predict splits by 32 by default)
    out.set(y.dataSync(), s * k);
    y.dispose();
  }
  const time = (performance.now() - t0) / 1000;
  const n = data.n, pred = new Int32Array(n);
  let correct = 0, loss = 0, probs = null;
  if (binary) {
    for (let i = 0; i < n; i++) {
      const p = Math.min(Math.max(out[i], 1e-12), 1 - 1e-12), yv = data.y[i];
      loss -= yv * Math.log(p) + (1 - yv) * Math.log(1 - p);
      pred[i] = out[i] >= 0.5 ? 1 : 0;
      if (pred[i] === yv) correct++;
    }
    if (withMetrics) probs = Float64Array.from(out);
  } else {
    probs = new Float64Array(n * k);
    for (let i = 0; i < n; i++) {
      const row = out.subarray(i * k, (i + 1) * k);
      let m = -Infinity, best = 0;
      for (let j = 0; j < k; j++) { if (row[j] > m) m = row[j]; if (row[j] > row[best]) best = j; }
      let sum = 0;
      for (let j = 0; j < k; j++) sum += Math.exp(row[j] - m);
      for (let j = 0; j < k; j++) probs[i * k + j] = Math.exp(row[j] - m) / sum;
      loss += Math.log(sum) + m - row[data.y[i]];
      pred[i] = best;
      if (best === data.y[i]) correct++;
    }
  }
  const labels = Int32Array.from(data.y);
  let f1 = NaN, auc = NaN;
  if (withMetrics) {
    f1 = f1Macro(pred, labels, binary ? 2 : k);
    auc = binary ? aucBinary(probs, labels.map((v) => v === 1)) : aucMacro(probs, labels, k);
  }
  return { correct, accuracy: correct / n, loss: loss / n, f1, auc, time, pred, probs, out, k };
}

// JSON has no NaN or Infinity: undefined values are null.
function finite(obj) {
  return JSON.parse(JSON.stringify(obj, (k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v)));
}

function writeJson(file, obj) {
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(finite(obj), null, 2) + '\n');
  fs.renameSync(tmp, file);
}

function writeNpy(file, dims, data) {
  let h = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims.map((d) => d + ',').join(' ')}), }`;
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const pre = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length & 255, h.length >> 8]);
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(h, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
  fs.renameSync(tmp, file);
}

// ------------------------------------------------------------ loading models

// 'safetensors', 'tfjs' (a layers-model directory or its model.json) or null.
function weightsKind(file) {
  let st;
  try {
    st = fs.statSync(file);
  } catch (e) {
    fail(`cannot open weights ${file}: ${e.code === 'ENOENT' ? 'no such file or directory' : e.message}`);
  }
  if (st.isDirectory()) return fs.existsSync(path.join(file, 'model.json')) ? 'tfjs' : null;
  if (path.basename(file) === 'model.json') return 'tfjs';
  const head = Buffer.alloc(9);
  const fd = fs.openSync(file, 'r');
  const got = fs.readSync(fd, head, 0, 9, 0);
  fs.closeSync(fd);
  if (got === 9 && head[8] === 0x7b && head[5] === 0 && head[6] === 0 && head[7] === 0) return 'safetensors';
  return null;
}

// Keras' reset-after GRU (the study's GRU) has no TF.js layer: TF.js'
// tf.layers.gru refuses reset_after, so such a layers model cannot be
// deserialised. It is read as this runner's own GRU model (the same layer
// names, models.js) with the file's weights, layer by layer in the order
// the file lists them (Keras' order: kernel, recurrent_kernel, bias).
function kerasResetAfterGru(json) {
  let doc;
  try { doc = JSON.parse(fs.readFileSync(json, 'utf8')); } catch (e) { return false; }
  const layers = (((doc.modelTopology || {}).model_config || {}).config || {}).layers || [];
  return layers.some((l) => l && l.class_name === 'GRU' && l.config && l.config.reset_after === true);
}

async function loadGruWeights(tf, name, json) {
  if (name !== 'gru') throw new Error(`it holds a reset-after GRU, which ${name} is not`);
  const { build } = require('./models');
  const artifacts = await tf.io.fileSystem(path.resolve(json)).load();
  const named = tf.io.decodeWeights(artifacts.weightData, artifacts.weightSpecs);
  const model = build(tf, name, { loading: true });
  for (const layer of model.layers) {
    if (!layer.weights.length) continue;
    const mine = artifacts.weightSpecs.filter((w) => w.name.split('/')[0] === layer.name).map((w) => named[w.name]);
    if (mine.length !== layer.weights.length) {
      throw new Error(`layer ${layer.name}: the file has ${mine.length} weights, the model ${layer.weights.length}`);
    }
    layer.setWeights(mine); // setWeights checks every shape
  }
  return model;
}

async function loadModel(tf, name, file, expectShape) {
  const { build, gruResetAfterCell } = require('./models');
  const W = require('./weights');
  const kind = weightsKind(file);
  gruResetAfterCell(tf); // registered, so that a saved GRU model deserialises
  if (kind === 'safetensors') {
    const model = build(tf, name, { loading: true });
    try {
      W.setCanonical(tf, model, name, W.readSafetensors(file));
    } catch (e) {
      fail(e.message.startsWith(file) || e.message.includes(file) ? e.message : `${file}: ${e.message}`);
    }
    return { model, mode: 'parameters', kind };
  }
  if (kind === 'tfjs') {
    const json = fs.statSync(file).isDirectory() ? path.join(file, 'model.json') : file;
    let model;
    try {
      model = kerasResetAfterGru(json) ? await loadGruWeights(tf, name, json)
        : await tf.loadLayersModel(`file://${path.resolve(json)}`);
    } catch (e) {
      fail(`${file}: TF.js cannot load this layers model: ${e.message.split('\n')[0]}`);
    }
    const got = model.inputs[0].shape.slice(1).join('x');
    if (got !== expectShape.join('x')) fail(`${file}: the model takes inputs of shape [${got}], ${name} takes [${expectShape.join('x')}]`);
    return { model, mode: 'serialization', kind };
  }
  return fail(`${file}: unrecognised weights format (this binding loads safetensors and TF.js layers models: a directory with model.json)`);
}

// -------------------------------------------------------------------- train

async function cmdTrain(argv) {
  const o = parse(argv, { run: 'int', seed: 'count', epochs: 'int', batch: 'int', threads: 'int', data: 'str', out: 'str',
    quiet: 'flag', 'limit-train': 'count', 'limit-test': 'count', optimizer: ['sgd', 'adam'], lr: 'num', momentum: 'num',
    'weight-decay': 'num', init: 'str', 'no-dropout': 'flag', shuffle: 'flag', subactivities: 'flag', device: ['cpu'] });
  if (o._.length !== 1) fail('train: one model is required');
  const model = modelArg(o._[0]);
  if (o.seed !== undefined && o.run !== undefined) fail('give --seed or --run, not both');
  if (o.run !== undefined && o.run > 5) fail('--run must be 1 to 5');
  const seed = o.seed !== undefined ? o.seed : SEEDS[(o.run || 1) - 1];
  const wd = o['weight-decay'] || 0;
  if (wd && model !== 'vgg16')
    fail("--weight-decay is the L2 penalty on VGG-16's last dense layer (the TensorFlow code's form); other models have none");
  const proto = PROTOCOL[model];
  let optimizer = o.optimizer, lr = o.lr;
  if (optimizer === undefined) { optimizer = proto[0]; if (lr === undefined) lr = proto[1]; }
  if (lr === undefined) lr = optimizer === 'adam' ? 1e-3 : 0.05;
  const momentum = o.momentum || 0, batch = o.batch || proto[2], epochs = o.epochs || proto[3];
  const threads = o.threads || os.cpus().length;
  const out = o.out || `runs/${model}-${seed}-tfjs`;
  try {
    fs.mkdirSync(out, { recursive: true });
    fs.accessSync(out, fs.constants.W_OK);
  } catch (e) {
    fail(`output directory ${out} is not writable: ${e.message}`);
  }
  const runJson = path.join(out, 'run.json');
  fs.rmSync(runJson, { force: true });
  const dataDir = o.data || DEFAULT_DIRS[DATA_FORMATS[model]];
  const tr = loadData(model, o.data, true, o['limit-train']);
  const te = loadData(model, o.data, false, o['limit-test']);
  if (!tr.n || !te.n) fail(`${dataDir}: an empty training or test set`);
  const W = require('./weights');
  let init = null;
  if (o.init) {
    try {
      init = W.readSafetensors(o.init);
    } catch (e) {
      fail(e.message);
    }
  }
  const tf = loadTf(threads);
  const { build, logitsModel, BINARY } = require('./models');
  const binary = BINARY.has(model);
  seedAll(seed);
  // L2 on the last dense layer instead of weight decay: what the original
  // TensorFlow code does in the momentum variant (protocol 2a).
  const net = build(tf, model, { dropout: o['no-dropout'] ? 0 : 0.5, l2: wd, loading: !!init });
  if (init) {
    try {
      W.setCanonical(tf, net, model, init);
    } catch (e) {
      fail(`${o.init}: ${e.message}`);
    }
  }
  const startCanon = W.toCanonical(tf, model, net, init);
  const reference = init || Object.fromEntries(startCanon);
  const meta = { model, format: 'crossbind-weights/1', framework: 'tensorflow' };
  W.writeSafetensors(path.join(out, 'init.safetensors'), startCanon, meta);
  if (binary) fs.copyFileSync(path.join(dataDir, 'vocab.txt'), path.join(out, 'vocab.txt'));
  const opt = optimizer === 'adam' ? tf.train.adam(lr) // epsilon: TF.js' backend epsilon 1e-7, as Keras'
    : momentum ? tf.train.momentum(lr, momentum) : tf.train.sgd(lr);
  net.compile({ optimizer: opt, loss: binary ? 'binaryCrossentropy' : 'sparseCategoricalCrossentropy' });
  const fwd = logitsModel(tf, net, model);
  const xs = inputTensor(tf, tr, 0, tr.n);
  const ys = tf.tensor(Float32Array.from(tr.y), [tr.n, 1], 'float32');
  const versions = Object.assign({ node: process.versions.node, tensorflow: tf.backend().binding.TF_Version }, tf.version);
  const info = {
    format: 'crossbind-run/1', status: 'incomplete', binding: 'tensorflow-js', model, seed,
    run: o.run || (o.seed !== undefined ? 0 : 1), data: dataDir, n_train: tr.n, n_test: te.n, batch, optimizer, lr,
    momentum, weight_decay: wd, weight_decay_form: wd ? 'l2 on the last dense layer' : null, shuffle: !!o.shuffle,
    dropout: !o['no-dropout'], init: o.init || null, threads, backend: `tfjs-node (${tf.getBackend()})`, versions,
    machine: `${os.type()} ${os.release()} ${os.arch()}`,
    subactivities_note: o.subactivities ? 'not measured: TF.js computes the forward pass inside the gradient call' : undefined,
    epochs: [],
  };
  let evalTotal = 0, last;
  const t0 = performance.now();
  for (let epoch = 1; epoch <= epochs; epoch++) {
    const tEpoch = performance.now();
    let x = xs, y = ys;
    if (o.shuffle) {
      const order = tf.util.createShuffledIndices(tr.n); // draws from the seeded Math.random
      const idx = tf.tensor1d(Int32Array.from(order), 'int32');
      x = tf.gather(xs, idx);
      y = tf.gather(ys, idx);
      idx.dispose();
    }
    await net.fit(x, y, { batchSize: batch, epochs: 1, shuffle: false, verbose: 0, yieldEvery: 'never' });
    if (x !== xs) { x.dispose(); y.dispose(); }
    const tEval = performance.now();
    const trr = evaluate(tf, fwd, tr, batch, binary, false);
    const isLast = epoch === epochs;
    last = evaluate(tf, fwd, te, batch, binary, isLast);
    const evalS = (performance.now() - tEval) / 1000;
    evalTotal += evalS;
    info.epochs.push({ epoch, train_acc: trr.accuracy, test_acc: last.accuracy, train_loss: trr.loss, test_loss: last.loss,
      train_time_s: (tEval - tEpoch) / 1000, eval_time_s: evalS });
    if (!o.quiet)
      process.stderr.write(`epoch ${epoch}/${epochs}  train acc ${trr.accuracy.toFixed(4)} loss ${trr.loss.toFixed(4)}  ` +
        `test acc ${last.accuracy.toFixed(4)} loss ${last.loss.toFixed(4)}  (${((tEval - tEpoch) / 1000).toFixed(2)}s train, ${evalS.toFixed(2)}s eval)\n`);
    if (!isLast) writeJson(runJson, info);
  }
  const total = (performance.now() - t0) / 1000;
  W.writeSafetensors(path.join(out, 'final.safetensors'), W.toCanonical(tf, model, net, reference), meta);
  fs.rmSync(path.join(out, 'final.tfjs'), { recursive: true, force: true });
  await net.save(`file://${path.resolve(out, 'final.tfjs')}`);
  Object.assign(info, { status: 'complete', training_time_s: total - evalTotal, eval_time_s: evalTotal, total_time_s: total,
    test_accuracy: last.accuracy, test_correct: last.correct, f1_macro: last.f1, auc_macro: last.auc });
  writeJson(runJson, info);
  process.stdout.write(`${model}: test accuracy ${last.accuracy.toFixed(4)} (${last.correct}/${te.n}), macro F1 ${last.f1.toFixed(4)}, ` +
    `AUC ${last.auc.toFixed(4)}, training ${(total - evalTotal).toFixed(2)}s, eval ${evalTotal.toFixed(2)}s -> ${runJson}\n`);
}

// --------------------------------------------------------------------- eval

async function cmdEval(argv) {
  const o = parse(argv, { weights: 'str', data: 'str', batch: 'int', repeat: 'int', 'limit-test': 'count', threads: 'int',
    predictions: 'str', logits: 'str', json: 'flag', device: ['cpu'] });
  if (o._.length !== 1) fail('eval: one model is required');
  const model = modelArg(o._[0]);
  if (!o.weights) fail('eval: --weights FILE is required');
  const batch = o.batch || 128, repeat = o.repeat || 5, threads = o.threads || os.cpus().length;
  weightsKind(o.weights); // a missing file is refused before TensorFlow loads
  const te = loadData(model, o.data, false, o['limit-test']);
  if (!te.n) fail('an empty test set');
  const tf = loadTf(threads);
  const { logitsModel, BINARY } = require('./models');
  const binary = BINARY.has(model);
  const { model: net, mode, kind } = await loadModel(tf, model, o.weights, te.shape);
  const fwd = logitsModel(tf, net, model);
  const width = fwd.outputs[0].shape[fwd.outputs[0].shape.length - 1];
  if (width !== (binary ? 1 : te.classes)) fail(`${o.weights}: the model has ${width} outputs, ${model} has ${binary ? 1 : te.classes}`);
  evaluate(tf, fwd, te, batch, binary, false); // warm-up
  const times = [], counts = [];
  let r;
  for (let i = 0; i < repeat; i++) {
    r = evaluate(tf, fwd, te, batch, binary, i === repeat - 1);
    times.push(r.time);
    counts.push(r.correct);
  }
  if (o.logits) writeNpy(o.logits, [te.n, r.k], r.out);
  if (o.predictions) {
    const k = binary ? 1 : r.k;
    const lines = ['index,label,prediction,' + Array.from({ length: k }, (_, j) => `p${j}`).join(',')];
    for (let i = 0; i < te.n; i++)
      lines.push(`${i},${te.y[i]},${r.pred[i]},` + Array.from(r.probs.subarray(i * k, (i + 1) * k), (v) => v.toPrecision(9)).join(','));
    fs.writeFileSync(o.predictions, lines.join('\n') + '\n');
  }
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  const res = { binding: 'tensorflow-js', model, load_mode: mode, format: kind, weights: o.weights, correct: r.correct,
    total: te.n, accuracy: r.accuracy, loss: r.loss, f1_macro: r.f1, auc_macro: r.auc, batch, threads, times_s: times,
    correct_per_pass: counts, mean_time_s: mean, backend: tf.getBackend(), tfjs: tf.version.tfjs,
    tensorflow: tf.backend().binding.TF_Version };
  if (o.json) process.stdout.write(JSON.stringify(finite(res)) + '\n');
  else process.stdout.write(`${model}: ${r.correct}/${te.n} correct, accuracy ${r.accuracy.toFixed(4)}, loss ${r.loss.toFixed(4)}, ` +
    `macro F1 ${r.f1.toFixed(4)}, AUC ${r.auc.toFixed(4)}, mean time ${mean.toFixed(4)}s over ${repeat} passes\n`);
}

async function cmdBench(argv) {
  const o = parse(argv, { model: 'str', kind: ['train', 'infer', 'latency', 'startup'], weights: 'str', batch: 'int',
    samples: 'int', repeat: 'int', threads: 'int' });
  if (!o.model || !o.kind || !o.weights) fail('bench: --model, --kind and --weights are required');
  const model = modelArg(o.model);
  o.batch = o.batch || 1; o.samples = o.samples || 1; o.repeat = o.repeat || 1; o.threads = o.threads || 1;
  if (o.kind === 'train' && o.samples < o.batch) fail('bench: a training unit needs at least one whole batch (--samples >= --batch)');
  weightsKind(o.weights);
  const tf = loadTf(o.threads);
  seedAll(SEEDS[0]);
  const { INPUT_SHAPES, run } = require('./bench');
  const { model: net } = await loadModel(tf, model, o.weights, INPUT_SHAPES[model]);
  await run(tf, net, model, o, PROTOCOL[model]);
}

const [cmd, ...rest] = process.argv.slice(2);
const cmds = { train: cmdTrain, eval: cmdEval, bench: cmdBench };
if (cmd === '-h' || cmd === '--help') process.stdout.write(USAGE);
else if (!cmds[cmd]) { process.stderr.write(USAGE); fail(`unknown command '${cmd || ''}'`); }
else cmds[cmd](rest).catch((e) => fail(e.message.split('\n')[0]));
