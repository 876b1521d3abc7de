package crossbind.tfjava;

import crossbind.common.DataSplit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.tensorflow.Graph;
import org.tensorflow.Operand;
import org.tensorflow.Output;
import org.tensorflow.Result;
import org.tensorflow.Session;
import org.tensorflow.Tensor;
import org.tensorflow.framework.optimizers.GradientDescent;
import org.tensorflow.framework.optimizers.Momentum;
import org.tensorflow.framework.optimizers.Optimizer;
import org.tensorflow.ndarray.Shape;
import org.tensorflow.ndarray.buffer.DataBuffers;
import org.tensorflow.op.Op;
import org.tensorflow.op.Ops;
import org.tensorflow.op.core.Placeholder;
import org.tensorflow.op.core.Unstack;
import org.tensorflow.op.core.Variable;
import org.tensorflow.op.nn.FusedBatchNorm;
import org.tensorflow.proto.ConfigProto;
import org.tensorflow.types.TFloat32;
import org.tensorflow.types.TInt32;
import org.tensorflow.types.family.TType;

/**
 * One of the study's models as a TensorFlow graph, built from Ops the way the Keras models of
 * runners/tensorflow/crossbind_tf.py are defined (protocol section 2a): LeNets on 28x28 images
 * zero-padded to 32x32 with valid convolutions, tanh and 2x2 max pooling; VGG-16 with
 * convolutions without bias, BatchNormalization (momentum 0.99, epsilon 1e-3) and ReLU; the RNNs
 * as Embedding(10000, 300), one LSTM or GRU layer of 512 unrolled over the 300 steps, dropout 0.5
 * and a dense sigmoid output. The graph holds an inference head (logits before the softmax, or
 * the sigmoid probability) and, for training, a second head in training mode (dropout on,
 * BatchNorm on batch statistics updating the moving ones) with its loss, its gradients
 * (Graph.addGradients, TensorFlow's C++ gradient registry) and the framework optimizer's step.
 */
final class TfModel implements AutoCloseable {
    /** What a training graph needs; null for an inference-only graph. */
    static final class TrainSpec {
        String optimizer = "sgd";
        float lr = 0.05f;
        float momentum = 0f;
        float weightDecay = 0f;
        float dropout = 0.5f;
        long seed;
    }

    final String name;
    final Graph graph;
    final Ops tf;
    final Placeholder<? extends TType> input;
    final Operand<TFloat32> output;
    Placeholder<? extends TType> labels;
    Operand<TFloat32> loss;
    Op trainStep;
    final List<Op> updates = new ArrayList<>();
    final Map<String, Variable<TFloat32>> vars = new LinkedHashMap<>();
    private final Map<String, Placeholder<TFloat32>> loadFeeds = new LinkedHashMap<>();
    private final List<Op> loadOps = new ArrayList<>();
    private final long[] seedCounter = {0};
    private final long seed;
    final Session session;

    TfModel(String name, long seed, TrainSpec train, int threads) {
        this.name = name;
        this.seed = seed;
        this.graph = new Graph();
        this.tf = Ops.create(graph);
        boolean tokens = Protocol.binary(name);
        long[] in = Protocol.inputShape(name);
        Shape inShape = Shape.of(concat(-1, in));
        input = tokens ? tf.withName("tokens").placeholder(TInt32.class, Placeholder.shape(inShape))
                : tf.withName("image").placeholder(TFloat32.class, Placeholder.shape(inShape));
        long tb = System.nanoTime();
        createVariables();
        Operand<TFloat32> z = forward(false, 0f);
        output = tokens ? tf.withName("probability").math.sigmoid(z) : tf.withName("logits").identity(z);
        for (Map.Entry<String, Variable<TFloat32>> e : vars.entrySet()) {
            Placeholder<TFloat32> p = tf.withSubScope("load").placeholder(TFloat32.class,
                    Placeholder.shape(e.getValue().shape()));
            loadFeeds.put(e.getKey(), p);
            loadOps.add(tf.withSubScope("load").assign(e.getValue(), p));
        }
        // TensorFlow's default session options (Grappler on), the threads as the Python runner sets them
        ConfigProto config = ConfigProto.newBuilder().setIntraOpParallelismThreads(threads)
                .setInterOpParallelismThreads(1).build();
        long tg = System.nanoTime();
        session = new Session(graph, config);
        session.initialize();
        if (train != null) {
            // Built after the model's variables hold their values: the optimizer's slots are
            // initialised from their variables' shapes (a second initialisation runs only these).
            buildTraining(train);
            session.initialize();
        }
        if (System.getenv("CROSSBIND_TRACE") != null) {
            System.err.printf("graph built in %.2fs, session initialised in %.2fs%n", (tg - tb) / 1e9,
                    (System.nanoTime() - tg) / 1e9);
        }
    }

    private static long[] concat(long first, long[] rest) {
        long[] out = new long[rest.length + 1];
        out[0] = first;
        System.arraycopy(rest, 0, out, 1, rest.length);
        return out;
    }

    private long nextSeed() {
        return seed * 1000003L + (++seedCounter[0]);
    }

    // ---------------------------------------------------------------- variables

    /** The variables with Keras' default initializers, written with TensorFlow's random ops (glorot-uniform kernels, orthogonal recurrent
     * kernels, zero biases with the LSTM's forget-gate bias 1, Embedding U(-0.05, 0.05), BatchNorm
     * gamma 1, beta 0, moving mean 0 and variance 1), drawn from the run's seed. */
    private void createVariables() {
        Ops init = tf.withInitScope();
        for (KerasWeights.Spec s : KerasWeights.specs(name)) {
            Operand<org.tensorflow.types.TInt64> dims = init.constant(s.shape);
            Operand<TFloat32> value;
            String p = s.name.substring(s.name.indexOf('/') + 1);
            if (p.equals("kernel")) { // glorot-uniform: U(+-sqrt(6 / (fan_in + fan_out)))
                long receptive = s.shape.length == 4 ? s.shape[0] * s.shape[1] : 1;
                long fanIn = s.shape[s.shape.length - 2] * receptive;
                long fanOut = s.shape[s.shape.length - 1] * receptive;
                float limit = (float) Math.sqrt(6.0 / (fanIn + fanOut));
                value = uniform(init, dims, -limit, limit);
            } else if (p.equals("recurrent_kernel")) {
                value = orthogonal(init, (int) s.shape[0], (int) s.shape[1]);
            } else if (p.equals("embeddings")) {
                value = uniform(init, dims, -0.05f, 0.05f);
            } else if (p.equals("gamma") || p.equals("moving_variance")) {
                value = init.ones(dims, TFloat32.class);
            } else if (s.name.equals("rnn/bias") && name.equals("lstm")) {
                float[] b = new float[s.size()];
                java.util.Arrays.fill(b, Protocol.HIDDEN, 2 * Protocol.HIDDEN, 1f); // unit forget bias
                value = init.constant(b);
            } else {
                value = init.zeros(dims, TFloat32.class);
            }
            String layer = s.name.substring(0, s.name.indexOf('/'));
            // "conv1_kernel": the optimizers name their slots after the variable, where "/" is refused
            vars.put(s.name, tf.withName(layer + "_" + p).variable(value));
        }
    }

    /** U(lo, hi) from the run's seed. (The framework's Glorot initializer gave only non-negative
     * values, all below Keras' limit, in 1.1.0.) */
    private Operand<TFloat32> uniform(Ops init, Operand<org.tensorflow.types.TInt64> dims, float lo, float hi) {
        Operand<TFloat32> u = init.random.randomUniform(dims, TFloat32.class,
                org.tensorflow.op.random.RandomUniform.seed(seed),
                org.tensorflow.op.random.RandomUniform.seed2(nextSeed()));
        return init.math.add(init.math.mul(u, init.constant(hi - lo)), init.constant(lo));
    }

    /** Keras' Orthogonal initializer for a [rows, cols] kernel with rows < cols: the Q of a QR
     * decomposition of a standard normal [cols, rows] matrix, its columns' signs made those of R's
     * diagonal, transposed. (The framework's Orthogonal fails on this shape in 1.1.0.) */
    private Operand<TFloat32> orthogonal(Ops init, int rows, int cols) {
        Operand<TFloat32> a = init.random.randomStandardNormal(init.constant(new long[] {cols, rows}),
                TFloat32.class, org.tensorflow.op.random.RandomStandardNormal.seed(seed),
                org.tensorflow.op.random.RandomStandardNormal.seed2(nextSeed()));
        org.tensorflow.op.linalg.Qr<TFloat32> qr = init.linalg.qr(a);
        Operand<TFloat32> d = init.math.sign(init.linalg.matrixDiagPart(qr.r(), init.constant(0),
                init.constant(0f)));
        return init.linalg.transpose(init.math.mul(qr.q(), d), init.constant(new int[] {1, 0}));
    }

    private Operand<TFloat32> read(String n) {
        return tf.identity(vars.get(n));
    }

    // ---------------------------------------------------------------- forward

    /** The model's output before the final activation (softmax or sigmoid). */
    private Operand<TFloat32> forward(boolean training, float dropout) {
        Ops t = tf.withSubScope(training ? "train" : "infer");
        if (name.startsWith("lenet")) {
            @SuppressWarnings("unchecked")
            Operand<TFloat32> x = (Operand<TFloat32>) input;
            x = t.pad(x, t.constant(new int[][] {{0, 0}, {2, 2}, {2, 2}, {0, 0}}), t.constant(0f));
            int convs = name.equals("lenet1") ? 2 : 3;
            for (int i = 1; i <= convs; i++) {
                x = t.math.tanh(conv(t, x, "conv" + i, "VALID", true));
                if (i < 3) {
                    x = maxPool(t, x);
                }
            }
            x = t.reshape(x, t.constant(new long[] {-1, name.equals("lenet1") ? 300 : 120}));
            if (name.equals("lenet1")) {
                return dense(t, x, "fc");
            }
            return dense(t, t.math.tanh(dense(t, x, "fc1")), "fc2");
        }
        if (name.equals("vgg16")) {
            @SuppressWarnings("unchecked")
            Operand<TFloat32> x = (Operand<TFloat32>) input;
            int idx = 0;
            for (int[] l : KerasWeights.vggLayers()) {
                while (idx < l[0]) { // the max pools before this convolution
                    x = maxPool(t, x);
                    idx++;
                }
                x = conv(t, x, "features_" + l[0], "SAME", false);
                x = t.nn.relu(batchNorm(t, x, "features_" + l[1], training));
                idx = l[0] + 3;
            }
            x = maxPool(t, x);
            x = t.reshape(x, t.constant(new long[] {-1, 512}));
            x = dropout(t, t.nn.relu(dense(t, x, "classifier_0")), training ? dropout : 0f);
            x = dropout(t, t.nn.relu(dense(t, x, "classifier_3")), training ? dropout : 0f);
            return dense(t, x, "classifier_6");
        }
        Operand<TFloat32> h = recurrent(t);
        h = dropout(t, h, training ? dropout : 0f);
        return dense(t, h, "fc");
    }

    private Operand<TFloat32> conv(Ops t, Operand<TFloat32> x, String layer, String padding, boolean bias) {
        Operand<TFloat32> y = t.nn.conv2d(x, read(layer + "/kernel"), List.of(1L, 1L, 1L, 1L), padding);
        return bias ? t.nn.biasAdd(y, read(layer + "/bias")) : y;
    }

    private Operand<TFloat32> maxPool(Ops t, Operand<TFloat32> x) {
        return t.nn.maxPool(x, t.constant(new int[] {1, 2, 2, 1}), t.constant(new int[] {1, 2, 2, 1}), "VALID");
    }

    private Operand<TFloat32> dense(Ops t, Operand<TFloat32> x, String layer) {
        return t.nn.biasAdd(t.linalg.matMul(x, read(layer + "/kernel")), read(layer + "/bias"));
    }

    /** Inverted dropout with the op's own seeds (Keras' Dropout: zero with probability p, scale the
     * rest by 1 / (1 - p)). */
    private Operand<TFloat32> dropout(Ops t, Operand<TFloat32> x, float p) {
        if (p <= 0f) {
            return x;
        }
        Operand<TFloat32> u = t.random.randomUniform(t.shape(x), TFloat32.class,
                org.tensorflow.op.random.RandomUniform.seed(seed), org.tensorflow.op.random.RandomUniform.seed2(nextSeed()));
        Operand<TFloat32> keep = t.dtypes.cast(t.math.greaterEqual(u, t.constant(p)), TFloat32.class);
        return t.math.mul(t.math.mul(x, keep), t.constant(1f / (1f - p)));
    }

    /** Keras' BatchNormalization (fused): in training, batch statistics normalise and the moving
     * statistics move by 1 - momentum (0.01) toward them; in inference, the moving statistics. */
    private Operand<TFloat32> batchNorm(Ops t, Operand<TFloat32> x, String layer, boolean training) {
        Variable<TFloat32> mean = vars.get(layer + "/moving_mean");
        Variable<TFloat32> var = vars.get(layer + "/moving_variance");
        if (!training) {
            return t.nn.fusedBatchNorm(x, read(layer + "/gamma"), read(layer + "/beta"), t.identity(mean),
                    t.identity(var), FusedBatchNorm.epsilon(1e-3f), FusedBatchNorm.isTraining(false)).y();
        }
        FusedBatchNorm<TFloat32, TFloat32> bn = t.nn.fusedBatchNorm(x, read(layer + "/gamma"),
                read(layer + "/beta"), t.identity(mean), t.identity(var), FusedBatchNorm.epsilon(1e-3f),
                FusedBatchNorm.isTraining(true), FusedBatchNorm.exponentialAvgFactor(0.01f));
        updates.add(t.assign(mean, bn.batchMean()));
        updates.add(t.assign(var, bn.batchVariance()));
        return bn.y();
    }

    /** The embedding and the recurrent layer unrolled over the sequence; the last step's output. */
    private Operand<TFloat32> recurrent(Ops t) {
        int hsz = Protocol.HIDDEN;
        int steps = Protocol.SEQ_LEN;
        boolean lstm = name.equals("lstm");
        int g = (lstm ? 4 : 3) * hsz;
        @SuppressWarnings("unchecked")
        Operand<TInt32> tokens = (Operand<TInt32>) input;
        Operand<TFloat32> e = t.gather(read("embedding/embeddings"), tokens, t.constant(0));
        Operand<TFloat32> xp = t.linalg.matMul(t.reshape(e, t.constant(new long[] {-1, Protocol.EMBED})),
                read("rnn/kernel"));
        Operand<TFloat32> bias = read("rnn/bias");
        Operand<TFloat32> recBias = null;
        if (name.equals("gru")) { // row 0 the input bias, row 1 the recurrent bias
            List<Output<TFloat32>> rows = t.unstack(bias, 2L, Unstack.axis(0L)).output();
            bias = rows.get(0);
            recBias = rows.get(1);
        }
        xp = t.reshape(t.nn.biasAdd(xp, bias), t.constant(new long[] {-1, steps, g}));
        List<Output<TFloat32>> xs = t.unstack(xp, (long) steps, Unstack.axis(1L)).output();
        Operand<TInt32> batch = t.gather(t.shape(tokens), t.constant(0), t.constant(0));
        Operand<TFloat32> h = t.fill(t.stack(List.of(batch, t.constant(hsz))), t.constant(0f));
        Operand<TFloat32> c = h;
        Operand<TFloat32> u = read("rnn/recurrent_kernel");
        Operand<TFloat32> uzr = null;
        Operand<TFloat32> uh = null;
        if (name.equals("gru-rb")) {
            List<Output<TFloat32>> parts = t.splitV(u, t.constant(new int[] {2 * hsz, hsz}), t.constant(1), 2L)
                    .output();
            uzr = parts.get(0);
            uh = parts.get(1);
        }
        Operand<TInt32> axis1 = t.constant(1);
        Operand<TFloat32> one = t.constant(1f);
        for (int s = 0; s < steps; s++) {
            Operand<TFloat32> x = xs.get(s);
            if (lstm) { // Keras' gate order i, f, c, o
                List<Output<TFloat32>> z = t.split(axis1, t.math.add(x, t.linalg.matMul(h, u)), 4L).output();
                c = t.math.add(t.math.mul(t.math.sigmoid(z.get(1)), c),
                        t.math.mul(t.math.sigmoid(z.get(0)), t.math.tanh(z.get(2))));
                h = t.math.mul(t.math.sigmoid(z.get(3)), t.math.tanh(c));
                continue;
            }
            List<Output<TFloat32>> xz = t.split(axis1, x, 3L).output(); // Keras' order z, r, h
            Operand<TFloat32> z;
            Operand<TFloat32> cand;
            if (recBias != null) { // reset_after=True: r scales the recurrent product (with its bias)
                List<Output<TFloat32>> hz = t.split(axis1, t.nn.biasAdd(t.linalg.matMul(h, u), recBias), 3L).output();
                z = t.math.sigmoid(t.math.add(xz.get(0), hz.get(0)));
                Operand<TFloat32> r = t.math.sigmoid(t.math.add(xz.get(1), hz.get(1)));
                cand = t.math.tanh(t.math.add(xz.get(2), t.math.mul(r, hz.get(2))));
            } else { // reset_after=False: r scales the state before the product
                List<Output<TFloat32>> hz = t.split(axis1, t.linalg.matMul(h, uzr), 2L).output();
                z = t.math.sigmoid(t.math.add(xz.get(0), hz.get(0)));
                Operand<TFloat32> r = t.math.sigmoid(t.math.add(xz.get(1), hz.get(1)));
                cand = t.math.tanh(t.math.add(xz.get(2), t.linalg.matMul(t.math.mul(r, h), uh)));
            }
            h = t.math.add(t.math.mul(z, h), t.math.mul(t.math.sub(one, z), cand));
        }
        return h;
    }

    // ---------------------------------------------------------------- training

    @SuppressWarnings({"unchecked", "rawtypes"})
    private void buildTraining(TrainSpec spec) {
        Ops t = tf.withSubScope("train");
        Operand<TFloat32> z = forward(true, spec.dropout);
        if (Protocol.binary(name)) {
            Placeholder<TFloat32> y = tf.withName("label").placeholder(TFloat32.class,
                    Placeholder.shape(Shape.of(-1)));
            labels = y;
            Operand<TFloat32> logit = t.reshape(z, t.constant(new long[] {-1}));
            // binary cross-entropy of sigmoid(logit): softplus(logit) - y * logit
            loss = t.math.mean(t.math.sub(t.math.softplus(logit), t.math.mul(y, logit)), t.constant(0));
        } else {
            Placeholder<TInt32> y = tf.withName("label").placeholder(TInt32.class, Placeholder.shape(Shape.of(-1)));
            labels = y;
            // SparseSoftmaxCrossEntropyWithLogits has no C++ gradient: the dense form on one-hot labels
            Operand<TFloat32> onehot = t.oneHot(y, t.constant(10), t.constant(1f), t.constant(0f));
            loss = t.math.mean(t.nn.softmaxCrossEntropyWithLogits(z, onehot).loss(), t.constant(0));
        }
        if (spec.weightDecay > 0f) { // the TensorFlow code's L2 on the last dense layer (VGG-16)
            Operand<TFloat32> l2 = t.math.add(sumSquares(t, "classifier_6/kernel"), sumSquares(t, "classifier_6/bias"));
            loss = t.math.add(loss, t.math.mul(t.constant(spec.weightDecay), l2));
        }
        List<Variable<TFloat32>> trainable = new ArrayList<>();
        for (Map.Entry<String, Variable<TFloat32>> e : vars.entrySet()) {
            if (!e.getKey().contains("/moving_")) {
                trainable.add(e.getValue());
            }
        }
        Output<?>[] xs = new Output<?>[trainable.size()];
        for (int i = 0; i < xs.length; i++) {
            xs[i] = trainable.get(i).asOutput();
        }
        Output<?>[] grads = graph.addGradients(loss.asOutput(), xs);
        List<Optimizer.GradAndVar<? extends TType>> gv = new ArrayList<>();
        for (int i = 0; i < xs.length; i++) {
            gv.add(new Optimizer.GradAndVar((Output) grads[i], (Output) xs[i]));
        }
        Optimizer opt;
        if (spec.optimizer.equals("adam")) {
            opt = new KerasAdam(graph, spec.lr, 0.9f, 0.999f, 1e-7f); // Keras' defaults (epsilon 1e-7)
        } else if (spec.momentum > 0f) {
            opt = new Momentum(graph, spec.lr, spec.momentum, false);
        } else {
            opt = new GradientDescent(graph, spec.lr);
        }
        trainStep = opt.applyGradients(gv, "step");
    }

    private Operand<TFloat32> sumSquares(Ops t, String n) {
        Operand<TFloat32> sq = t.math.square(read(n));
        return t.sum(sq, t.range(t.constant(0), t.rank(sq), t.constant(1)));
    }

    // ---------------------------------------------------------------- weights

    /** Writes Keras-layout values into the variables (one session run). */
    void assign(Map<String, float[]> values) {
        Session.Runner r = session.runner();
        List<Tensor> owned = new ArrayList<>();
        try {
            for (Map.Entry<String, Placeholder<TFloat32>> e : loadFeeds.entrySet()) {
                float[] v = values.get(e.getKey());
                TFloat32 tensor = TFloat32.tensorOf(vars.get(e.getKey()).shape(), DataBuffers.of(v, true, false));
                owned.add(tensor);
                r.feed(e.getValue(), tensor);
            }
            for (Op op : loadOps) {
                r.addTarget(op);
            }
            r.run().close();
        } finally {
            owned.forEach(Tensor::close);
        }
    }

    /** The variables' values in Keras layouts. */
    Map<String, float[]> values() {
        Session.Runner r = session.runner();
        List<String> names = new ArrayList<>(vars.keySet());
        for (String n : names) {
            r.fetch(vars.get(n));
        }
        Map<String, float[]> out = new LinkedHashMap<>();
        try (Result res = r.run()) {
            for (int i = 0; i < names.size(); i++) {
                TFloat32 v = (TFloat32) res.get(i);
                float[] a = new float[(int) v.size()];
                v.asRawTensor().data().asFloats().read(a);
                out.put(names.get(i), a);
            }
        }
        return out;
    }

    // ---------------------------------------------------------------- running

    /** A batch of samples [s0, s0 + n) of a split as the input tensor. */
    Tensor inputTensor(DataSplit d, int s0, int n) {
        int size = 1;
        for (long v : d.sampleShape) {
            size *= (int) v;
        }
        Shape shape = Shape.of(concat(n, d.sampleShape));
        if (d.images != null) {
            float[] x = java.util.Arrays.copyOfRange(d.images, s0 * size, (s0 + n) * size);
            return TFloat32.tensorOf(shape, DataBuffers.of(x, true, false));
        }
        int[] x = new int[n * size];
        for (int i = 0; i < x.length; i++) {
            x[i] = (int) d.tokens[s0 * size + i];
        }
        return TInt32.tensorOf(shape, DataBuffers.of(x, true, false));
    }

    Tensor labelTensor(DataSplit d, int s0, int n) {
        if (Protocol.binary(name)) {
            float[] y = new float[n];
            for (int i = 0; i < n; i++) {
                y[i] = d.labels[s0 + i];
            }
            return TFloat32.tensorOf(Shape.of(n), DataBuffers.of(y, true, false));
        }
        int[] y = new int[n];
        for (int i = 0; i < n; i++) {
            y[i] = (int) d.labels[s0 + i];
        }
        return TInt32.tensorOf(Shape.of(n), DataBuffers.of(y, true, false));
    }

    /** The inference head on one input batch: [n * classes] floats. */
    float[] predict(Tensor x) {
        try (Result r = session.runner().feed(input, x).fetch(output).run()) {
            TFloat32 o = (TFloat32) r.get(0);
            float[] out = new float[(int) o.size()];
            o.asRawTensor().data().asFloats().read(out);
            return out;
        }
    }

    /** The training head's loss on one batch, without a step (subactivity timing). */
    float lossOf(Tensor x, Tensor y) {
        try (Result r = session.runner().feed(input, x).feed(labels, y).fetch(loss).run()) {
            return ((TFloat32) r.get(0)).getFloat();
        }
    }

    /** One training step on one batch: the optimizer's update and BatchNorm's moving statistics. */
    void step(Tensor x, Tensor y) {
        Session.Runner r = session.runner().feed(input, x).feed(labels, y).addTarget(trainStep);
        for (Op u : updates) {
            r.addTarget(u);
        }
        r.run().close();
    }

    @Override
    public void close() {
        session.close();
        graph.close();
    }
}
