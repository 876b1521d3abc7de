// The protocol's models (section 2a) as TF.js layers models, layer for layer
// the Keras models of runners/tensorflow/crossbind_tf.py (same layer names,
// so that weights.js maps the same layers). Initialisers are TF.js' own
// defaults; the multi-class models end in a separate softmax layer, so that
// the logits before it can be read out (logitsModel).
'use strict';
const { VGG16_PLAN } = require('./weights');

const BINARY = new Set(['lstm', 'gru', 'gru-rb']);

// TF.js' GRU layer computes only the reset-before GRU (Keras'
// reset_after=False; a config with resetAfter true is refused). The study's
// GRU is the reset-after one (PyTorch's, Keras' default): this cell is that
// GRU as a custom TF.js RNN cell, with Keras' weight layout (kernel [D, 3H]
// and recurrent kernel [H, 3H] in gate order z, r, h; bias [2, 3H]: input
// bias, recurrent bias), wrapped in tf.layers.rnn:
//   z = sigmoid(x Wz + bz + h Uz + cz), r = sigmoid(x Wr + br + h Ur + cr)
//   n = tanh(x Wh + bh + r * (h Uh + ch)), h' = z h + (1 - z) n
function gruResetAfterCell(tf) {
  if (gruResetAfterCell.cls) return gruResetAfterCell.cls;
  class GRUResetAfterCell extends tf.layers.RNNCell {
    constructor(args) {
      super(args);
      this.units = args.units;
      this.stateSize = args.units;
      this.loading = !!args.loading;
    }

    build(inputShape) {
      const shape = Array.isArray(inputShape[0]) ? inputShape[0] : inputShape;
      const d = shape[shape.length - 1], h = this.units;
      this.kernel = this.addWeight('kernel', [d, 3 * h], 'float32', tf.initializers.glorotNormal({}));
      this.recurrentKernel = this.addWeight('recurrent_kernel', [h, 3 * h], 'float32',
        this.loading ? tf.initializers.zeros() : tf.initializers.orthogonal({}));
      this.bias = this.addWeight('bias', [2, 3 * h], 'float32', tf.initializers.zeros());
      this.built = true;
    }

    call(inputs) {
      return tf.tidy(() => {
        const [x, h] = inputs;
        const [bx, bh] = tf.unstack(this.bias.read());
        const [xz, xr, xh] = tf.split(tf.add(tf.matMul(x, this.kernel.read()), bx), 3, -1);
        const [hz, hr, hh] = tf.split(tf.add(tf.matMul(h, this.recurrentKernel.read()), bh), 3, -1);
        const z = tf.sigmoid(tf.add(xz, hz));
        const r = tf.sigmoid(tf.add(xr, hr));
        const n = tf.tanh(tf.add(xh, tf.mul(r, hh)));
        const out = tf.add(tf.mul(z, h), tf.mul(tf.sub(1, z), n));
        return [out, out];
      });
    }

    getConfig() {
      return Object.assign(super.getConfig(), { units: this.units });
    }

    static get className() {
      return 'GRUResetAfterCell';
    }
  }
  tf.serialization.registerClass(GRUResetAfterCell);
  gruResetAfterCell.cls = GRUResetAfterCell;
  return GRUResetAfterCell;
}

// loading: the weights are set right after (safetensors, --init), so the
// recurrent kernel skips TF.js' orthogonal initialiser (a QR decomposition of
// a 2048 x 512 matrix, about 20 s here).
function build(tf, name, { dropout = 0.5, l2 = 0, loading = false } = {}) {
  const L = tf.layers;
  if (name === 'lenet1' || name === 'lenet5') {
    const inp = tf.input({ shape: [28, 28, 1], name: 'image' });
    let x = L.zeroPadding2d({ padding: 2, name: 'pad' }).apply(inp); // 28x28 -> 32x32, then valid convolutions
    const chans = name === 'lenet1' ? [4, 12] : [6, 16];
    chans.forEach((c, i) => {
      x = L.conv2d({ filters: c, kernelSize: 5, activation: 'tanh', name: `conv${i + 1}` }).apply(x);
      x = L.maxPooling2d({ poolSize: 2, name: `pool${i + 1}` }).apply(x);
    });
    if (name === 'lenet5') x = L.conv2d({ filters: 120, kernelSize: 5, activation: 'tanh', name: 'conv3' }).apply(x);
    x = L.flatten({ name: 'flatten' }).apply(x);
    if (name === 'lenet1') {
      x = L.dense({ units: 10, name: 'fc' }).apply(x);
    } else {
      x = L.dense({ units: 84, activation: 'tanh', name: 'fc1' }).apply(x);
      x = L.dense({ units: 10, name: 'fc2' }).apply(x);
    }
    const out = L.softmax({ name: 'softmax' }).apply(x);
    return tf.model({ inputs: inp, outputs: out, name });
  }
  if (name === 'vgg16') {
    const inp = tf.input({ shape: [32, 32, 3], name: 'image' });
    let x = inp, i = 0;
    for (const v of VGG16_PLAN) {
      if (v === 'M') {
        x = L.maxPooling2d({ poolSize: 2, name: `features_${i}` }).apply(x);
        i += 1;
      } else {
        x = L.conv2d({ filters: v, kernelSize: 3, padding: 'same', useBias: false, name: `features_${i}` }).apply(x);
        x = L.batchNormalization({ name: `features_${i + 1}` }).apply(x); // momentum 0.99, epsilon 1e-3 (Keras' defaults)
        x = L.reLU({ name: `features_${i + 2}` }).apply(x);
        i += 3;
      }
    }
    x = L.flatten({ name: 'flatten' }).apply(x);
    x = L.dense({ units: 4096, activation: 'relu', name: 'classifier_0' }).apply(x);
    x = L.dropout({ rate: dropout, name: 'classifier_2' }).apply(x);
    x = L.dense({ units: 4096, activation: 'relu', name: 'classifier_3' }).apply(x);
    x = L.dropout({ rate: dropout, name: 'classifier_5' }).apply(x);
    const reg = l2 ? tf.regularizers.l2({ l2 }) : undefined;
    x = L.dense({ units: 10, name: 'classifier_6', kernelRegularizer: reg, biasRegularizer: reg }).apply(x);
    const out = L.softmax({ name: 'softmax' }).apply(x);
    return tf.model({ inputs: inp, outputs: out, name });
  }
  if (name === 'lstm' || name === 'gru-rb') {
    const inp = tf.input({ shape: [300], dtype: 'int32', name: 'tokens' });
    let x = L.embedding({ inputDim: 10000, outputDim: 300, name: 'embedding' }).apply(inp);
    // TF.js' recurrent activation defaults to hard sigmoid; Keras' (and the
    // study's) is the sigmoid. TF.js' GRU is the reset-before GRU (Keras'
    // reset_after=False), the study's GRU-rb.
    const rnn = name === 'lstm' ? L.lstm : L.gru;
    x = rnn({ units: 512, recurrentActivation: 'sigmoid', name: 'rnn',
      recurrentInitializer: loading ? 'zeros' : undefined }).apply(x);
    x = L.dropout({ rate: dropout, name: 'dropout' }).apply(x);
    const out = L.dense({ units: 1, activation: 'sigmoid', name: 'fc' }).apply(x);
    return tf.model({ inputs: inp, outputs: out, name: name.replace('-', '_') });
  }
  if (name === 'gru') {
    const inp = tf.input({ shape: [300], dtype: 'int32', name: 'tokens' });
    let x = L.embedding({ inputDim: 10000, outputDim: 300, name: 'embedding' }).apply(inp);
    const Cell = gruResetAfterCell(tf);
    x = L.rnn({ cell: new Cell({ units: 512, loading }), name: 'rnn' }).apply(x);
    x = L.dropout({ rate: dropout, name: 'dropout' }).apply(x);
    const out = L.dense({ units: 1, activation: 'sigmoid', name: 'fc' }).apply(x);
    return tf.model({ inputs: inp, outputs: out, name });
  }
  throw new Error(`${name}: TF.js has no layer for it`);
}

// The multi-class models' outputs before the softmax layer; the IMDb models'
// sigmoid probability (what the other bindings report).
function logitsModel(tf, model, name) {
  if (BINARY.has(name)) return model;
  const last = model.layers[model.layers.length - 1];
  if (last.getClassName() !== 'Softmax') return model;
  return tf.model({ inputs: model.inputs, outputs: last.input });
}

module.exports = { build, logitsModel, gruResetAfterCell, BINARY };
