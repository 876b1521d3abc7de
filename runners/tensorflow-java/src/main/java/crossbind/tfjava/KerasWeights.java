package crossbind.tfjava;

import crossbind.common.CliError;
import crossbind.common.Safetensors;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * crossbind's canonical weights (PyTorch state-dict names and layouts, as safetensors) to the
 * Keras layouts this binding's graphs use, and back: the mapping of runners/tensorflow/cb_keras_map.py
 * (its docstring is the reference). Convolution kernels OIHW to HWIO; dense weights transposed
 * (LeNet-1's rows reordered from C,H,W to H,W,C); BatchNorm gamma, beta and moving statistics as
 * they are; GRU gate blocks r,z,n to z,r,h; LSTM and GRU-rb biases summed (split back with the
 * weights the run started from); GRU's two biases as the rows of one [2, 3H] bias.
 */
final class KerasWeights {
    static final int[] VGG16_PLAN = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};

    private KerasWeights() {}

    /** One variable of the graph: its Keras name and shape. */
    static final class Spec {
        final String name;
        final long[] shape;

        Spec(String name, long... shape) {
            this.name = name;
            this.shape = shape;
        }

        int size() {
            long n = 1;
            for (long d : shape) {
                n *= d;
            }
            return (int) n;
        }
    }

    /** (convolution index, BatchNorm index, in channels, out channels) of VGG-16's features. */
    static List<int[]> vggLayers() {
        List<int[]> out = new ArrayList<>();
        int i = 0;
        int in = 3;
        for (int v : VGG16_PLAN) {
            if (v == 0) {
                i += 1;
            } else {
                out.add(new int[] {i, i + 1, in, v});
                in = v;
                i += 3;
            }
        }
        return out;
    }

    /** The model's variables in Keras' get_weights() order. */
    static List<Spec> specs(String model) {
        List<Spec> s = new ArrayList<>();
        int h = Protocol.HIDDEN;
        switch (model) {
            case "lenet1":
                s.add(new Spec("conv1/kernel", 5, 5, 1, 4));
                s.add(new Spec("conv1/bias", 4));
                s.add(new Spec("conv2/kernel", 5, 5, 4, 12));
                s.add(new Spec("conv2/bias", 12));
                s.add(new Spec("fc/kernel", 300, 10));
                s.add(new Spec("fc/bias", 10));
                break;
            case "lenet5":
                s.add(new Spec("conv1/kernel", 5, 5, 1, 6));
                s.add(new Spec("conv1/bias", 6));
                s.add(new Spec("conv2/kernel", 5, 5, 6, 16));
                s.add(new Spec("conv2/bias", 16));
                s.add(new Spec("conv3/kernel", 5, 5, 16, 120));
                s.add(new Spec("conv3/bias", 120));
                s.add(new Spec("fc1/kernel", 120, 84));
                s.add(new Spec("fc1/bias", 84));
                s.add(new Spec("fc2/kernel", 84, 10));
                s.add(new Spec("fc2/bias", 10));
                break;
            case "vgg16":
                for (int[] l : vggLayers()) {
                    s.add(new Spec("features_" + l[0] + "/kernel", 3, 3, l[2], l[3]));
                    for (String p : new String[] {"gamma", "beta", "moving_mean", "moving_variance"}) {
                        s.add(new Spec("features_" + l[1] + "/" + p, l[3]));
                    }
                }
                s.add(new Spec("classifier_0/kernel", 512, 4096));
                s.add(new Spec("classifier_0/bias", 4096));
                s.add(new Spec("classifier_3/kernel", 4096, 4096));
                s.add(new Spec("classifier_3/bias", 4096));
                s.add(new Spec("classifier_6/kernel", 4096, 10));
                s.add(new Spec("classifier_6/bias", 10));
                break;
            default: {
                int gates = model.equals("lstm") ? 4 : 3;
                s.add(new Spec("embedding/embeddings", Protocol.VOCAB, Protocol.EMBED));
                s.add(new Spec("rnn/kernel", Protocol.EMBED, gates * h));
                s.add(new Spec("rnn/recurrent_kernel", h, gates * h));
                s.add(model.equals("gru") ? new Spec("rnn/bias", 2, 3 * h) : new Spec("rnn/bias", gates * h));
                s.add(new Spec("fc/kernel", h, 1));
                s.add(new Spec("fc/bias", 1));
            }
        }
        return s;
    }

    /** The canonical tensor names in PyTorch's state-dict order, with their shapes. */
    static LinkedHashMap<String, long[]> canonicalShapes(String model) {
        LinkedHashMap<String, long[]> c = new LinkedHashMap<>();
        if (model.startsWith("lenet")) {
            for (Spec s : specs(model)) {
                String layer = s.name.substring(0, s.name.indexOf('/'));
                if (s.name.endsWith("/kernel")) {
                    c.put(layer + ".weight", s.shape.length == 4
                            ? new long[] {s.shape[3], s.shape[2], s.shape[0], s.shape[1]}
                            : new long[] {s.shape[1], s.shape[0]});
                } else {
                    c.put(layer + ".bias", s.shape);
                }
            }
        } else if (model.equals("vgg16")) {
            for (int[] l : vggLayers()) {
                c.put("features." + l[0] + ".weight", new long[] {l[3], l[2], 3, 3});
                for (String p : new String[] {"weight", "bias", "running_mean", "running_var"}) {
                    c.put("features." + l[1] + "." + p, new long[] {l[3]});
                }
                c.put("features." + l[1] + ".num_batches_tracked", new long[] {});
            }
            c.put("classifier.0.weight", new long[] {4096, 512});
            c.put("classifier.0.bias", new long[] {4096});
            c.put("classifier.3.weight", new long[] {4096, 4096});
            c.put("classifier.3.bias", new long[] {4096});
            c.put("classifier.6.weight", new long[] {10, 4096});
            c.put("classifier.6.bias", new long[] {10});
        } else {
            long g = (model.equals("lstm") ? 4 : 3) * (long) Protocol.HIDDEN;
            c.put("embedding.weight", new long[] {Protocol.VOCAB, Protocol.EMBED});
            c.put("rnn.weight_ih_l0", new long[] {g, Protocol.EMBED});
            c.put("rnn.weight_hh_l0", new long[] {g, Protocol.HIDDEN});
            c.put("rnn.bias_ih_l0", new long[] {g});
            c.put("rnn.bias_hh_l0", new long[] {g});
            c.put("fc.weight", new long[] {1, Protocol.HIDDEN});
            c.put("fc.bias", new long[] {1});
        }
        return c;
    }

    // ------------------------------------------------------------------ layouts

    static float[] oihwToHwio(float[] w, long[] oihw) {
        int o = (int) oihw[0], in = (int) oihw[1], kh = (int) oihw[2], kw = (int) oihw[3];
        float[] out = new float[w.length];
        for (int a = 0; a < o; a++) {
            for (int b = 0; b < in; b++) {
                for (int y = 0; y < kh; y++) {
                    for (int x = 0; x < kw; x++) {
                        out[((y * kw + x) * in + b) * o + a] = w[((a * in + b) * kh + y) * kw + x];
                    }
                }
            }
        }
        return out;
    }

    static float[] hwioToOihw(float[] k, long[] hwio) {
        int kh = (int) hwio[0], kw = (int) hwio[1], in = (int) hwio[2], o = (int) hwio[3];
        float[] out = new float[k.length];
        for (int a = 0; a < o; a++) {
            for (int b = 0; b < in; b++) {
                for (int y = 0; y < kh; y++) {
                    for (int x = 0; x < kw; x++) {
                        out[((a * in + b) * kh + y) * kw + x] = k[((y * kw + x) * in + b) * o + a];
                    }
                }
            }
        }
        return out;
    }

    /** [rows, cols] to [cols, rows]. */
    static float[] transpose(float[] a, int rows, int cols) {
        float[] out = new float[a.length];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                out[c * rows + r] = a[r * cols + c];
            }
        }
        return out;
    }

    /** Swaps the first two of three equal blocks along axis 0 (r,z,n <-> z,r,h; an involution). */
    static float[] swapRz(float[] a) {
        int b = a.length / 3;
        float[] out = a.clone();
        System.arraycopy(a, 0, out, b, b);
        System.arraycopy(a, b, out, 0, b);
        return out;
    }

    /** LeNet-1's dense weight [10, 300] flattened C,H,W (12, 5, 5) to Keras' [300, 10] flattened H,W,C. */
    static float[] lenet1FcToKeras(float[] w) {
        float[] out = new float[w.length];
        for (int o = 0; o < 10; o++) {
            for (int c = 0; c < 12; c++) {
                for (int p = 0; p < 25; p++) {
                    out[(p * 12 + c) * 10 + o] = w[o * 300 + c * 25 + p];
                }
            }
        }
        return out;
    }

    static float[] lenet1FcToCanonical(float[] k) {
        float[] out = new float[k.length];
        for (int o = 0; o < 10; o++) {
            for (int c = 0; c < 12; c++) {
                for (int p = 0; p < 25; p++) {
                    out[o * 300 + c * 25 + p] = k[(p * 12 + c) * 10 + o];
                }
            }
        }
        return out;
    }

    static float[] add(float[] a, float[] b) {
        float[] out = new float[a.length];
        for (int i = 0; i < a.length; i++) {
            out[i] = a[i] + b[i];
        }
        return out;
    }

    // ------------------------------------------------------------------ mapping

    /** Canonical tensors to Keras variables (name -> values in the Keras shape of specs()). Refuses,
     * naming it, a missing tensor or one of the wrong shape or type. */
    static Map<String, float[]> toKeras(String model, Map<String, Safetensors.Tensor> t) {
        for (Map.Entry<String, long[]> e : canonicalShapes(model).entrySet()) {
            String n = e.getKey();
            Safetensors.Tensor v = t.get(n);
            if (n.endsWith("num_batches_tracked")) {
                continue;
            }
            if (v == null) {
                throw new CliError("parameters missing from the weights: " + n);
            }
            if (v.floats == null) {
                throw new CliError("tensor " + n + " has dtype " + v.dtype + ", expected F32");
            }
            if (!Arrays.equals(v.shape, e.getValue())) {
                throw new CliError("tensor " + n + " has shape " + Arrays.toString(v.shape) + ", the model needs "
                        + Arrays.toString(e.getValue()));
            }
        }
        Map<String, float[]> k = new LinkedHashMap<>();
        if (model.startsWith("lenet")) {
            for (Spec s : specs(model)) {
                String layer = s.name.substring(0, s.name.indexOf('/'));
                if (s.name.endsWith("/bias")) {
                    k.put(s.name, t.get(layer + ".bias").floats.clone());
                } else if (s.shape.length == 4) {
                    Safetensors.Tensor w = t.get(layer + ".weight");
                    k.put(s.name, oihwToHwio(w.floats, w.shape));
                } else if (model.equals("lenet1")) {
                    k.put(s.name, lenet1FcToKeras(t.get("fc.weight").floats));
                } else {
                    k.put(s.name, transpose(t.get(layer + ".weight").floats, (int) s.shape[1], (int) s.shape[0]));
                }
            }
        } else if (model.equals("vgg16")) {
            for (int[] l : vggLayers()) {
                Safetensors.Tensor w = t.get("features." + l[0] + ".weight");
                k.put("features_" + l[0] + "/kernel", oihwToHwio(w.floats, w.shape));
                String b = "features." + l[1] + ".";
                String kb = "features_" + l[1] + "/";
                k.put(kb + "gamma", t.get(b + "weight").floats.clone());
                k.put(kb + "beta", t.get(b + "bias").floats.clone());
                k.put(kb + "moving_mean", t.get(b + "running_mean").floats.clone());
                k.put(kb + "moving_variance", t.get(b + "running_var").floats.clone());
            }
            for (int i : new int[] {0, 3, 6}) {
                Safetensors.Tensor w = t.get("classifier." + i + ".weight");
                k.put("classifier_" + i + "/kernel", transpose(w.floats, (int) w.shape[0], (int) w.shape[1]));
                k.put("classifier_" + i + "/bias", t.get("classifier." + i + ".bias").floats.clone());
            }
        } else {
            k.put("embedding/embeddings", t.get("embedding.weight").floats.clone());
            Safetensors.Tensor wih = t.get("rnn.weight_ih_l0");
            Safetensors.Tensor whh = t.get("rnn.weight_hh_l0");
            float[] bih = t.get("rnn.bias_ih_l0").floats;
            float[] bhh = t.get("rnn.bias_hh_l0").floats;
            int g = (int) wih.shape[0];
            boolean lstm = model.equals("lstm");
            k.put("rnn/kernel", transpose(lstm ? wih.floats : swapRz(wih.floats), g, Protocol.EMBED));
            k.put("rnn/recurrent_kernel", transpose(lstm ? whh.floats : swapRz(whh.floats), g, Protocol.HIDDEN));
            if (lstm) {
                k.put("rnn/bias", add(bih, bhh));
            } else if (model.equals("gru")) {
                float[] b = new float[2 * g];
                System.arraycopy(swapRz(bih), 0, b, 0, g);
                System.arraycopy(swapRz(bhh), 0, b, g, g);
                k.put("rnn/bias", b);
            } else {
                k.put("rnn/bias", swapRz(add(bih, bhh)));
            }
            k.put("fc/kernel", t.get("fc.weight").floats.clone()); // [1, 512] and [512, 1]: the same values
            k.put("fc/bias", t.get("fc.bias").floats.clone());
        }
        return k;
    }

    /** Keras' one RNN bias back to PyTorch's pair: the reference pair when the sum is unchanged
     * (bit for bit), else b_hh from the reference and b_ih = bias - b_hh; without a reference,
     * b_ih = bias and b_hh = 0. */
    private static float[][] splitBias(float[] total, Map<String, Safetensors.Tensor> ref) {
        Safetensors.Tensor ih = ref == null ? null : ref.get("rnn.bias_ih_l0");
        Safetensors.Tensor hh = ref == null ? null : ref.get("rnn.bias_hh_l0");
        if (ih == null || hh == null || ih.floats == null || hh.floats == null || ih.floats.length != total.length
                || hh.floats.length != total.length) {
            return new float[][] {total.clone(), new float[total.length]};
        }
        float[] sum = add(ih.floats, hh.floats);
        boolean same = true;
        for (int i = 0; i < sum.length && same; i++) {
            same = Float.floatToRawIntBits(sum[i]) == Float.floatToRawIntBits(total[i]);
        }
        if (same) {
            return new float[][] {ih.floats.clone(), hh.floats.clone()};
        }
        float[] bih = new float[total.length];
        for (int i = 0; i < bih.length; i++) {
            bih[i] = total[i] - hh.floats[i];
        }
        return new float[][] {bih, hh.floats.clone()};
    }

    /** Keras variables back to canonical tensors in state-dict order; `ref` (the weights the run
     * started from, or null) splits the summed RNN biases and gives num_batches_tracked. */
    static LinkedHashMap<String, Safetensors.Tensor> toCanonical(String model, Map<String, float[]> k,
            Map<String, Safetensors.Tensor> ref) {
        LinkedHashMap<String, long[]> shapes = canonicalShapes(model);
        Map<String, float[]> c = new LinkedHashMap<>();
        Map<String, long[]> kshape = new LinkedHashMap<>();
        for (Spec s : specs(model)) {
            kshape.put(s.name, s.shape);
        }
        if (model.startsWith("lenet")) {
            for (Spec s : specs(model)) {
                String layer = s.name.substring(0, s.name.indexOf('/'));
                float[] v = k.get(s.name);
                if (s.name.endsWith("/bias")) {
                    c.put(layer + ".bias", v.clone());
                } else if (s.shape.length == 4) {
                    c.put(layer + ".weight", hwioToOihw(v, s.shape));
                } else if (model.equals("lenet1")) {
                    c.put("fc.weight", lenet1FcToCanonical(v));
                } else {
                    c.put(layer + ".weight", transpose(v, (int) s.shape[0], (int) s.shape[1]));
                }
            }
        } else if (model.equals("vgg16")) {
            for (int[] l : vggLayers()) {
                String kn = "features_" + l[0] + "/kernel";
                c.put("features." + l[0] + ".weight", hwioToOihw(k.get(kn), kshape.get(kn)));
                String b = "features." + l[1] + ".";
                String kb = "features_" + l[1] + "/";
                c.put(b + "weight", k.get(kb + "gamma").clone());
                c.put(b + "bias", k.get(kb + "beta").clone());
                c.put(b + "running_mean", k.get(kb + "moving_mean").clone());
                c.put(b + "running_var", k.get(kb + "moving_variance").clone());
            }
            for (int i : new int[] {0, 3, 6}) {
                long[] s = kshape.get("classifier_" + i + "/kernel");
                c.put("classifier." + i + ".weight", transpose(k.get("classifier_" + i + "/kernel"), (int) s[0],
                        (int) s[1]));
                c.put("classifier." + i + ".bias", k.get("classifier_" + i + "/bias").clone());
            }
        } else {
            boolean lstm = model.equals("lstm");
            int g = (lstm ? 4 : 3) * Protocol.HIDDEN;
            c.put("embedding.weight", k.get("embedding/embeddings").clone());
            float[] wih = transpose(k.get("rnn/kernel"), Protocol.EMBED, g);
            float[] whh = transpose(k.get("rnn/recurrent_kernel"), Protocol.HIDDEN, g);
            c.put("rnn.weight_ih_l0", lstm ? wih : swapRz(wih));
            c.put("rnn.weight_hh_l0", lstm ? whh : swapRz(whh));
            float[] bias = k.get("rnn/bias");
            if (model.equals("gru")) {
                c.put("rnn.bias_ih_l0", swapRz(Arrays.copyOfRange(bias, 0, g)));
                c.put("rnn.bias_hh_l0", swapRz(Arrays.copyOfRange(bias, g, 2 * g)));
            } else {
                float[][] pair = splitBias(lstm ? bias : swapRz(bias), ref);
                c.put("rnn.bias_ih_l0", pair[0]);
                c.put("rnn.bias_hh_l0", pair[1]);
            }
            c.put("fc.weight", k.get("fc/kernel").clone());
            c.put("fc.bias", k.get("fc/bias").clone());
        }
        LinkedHashMap<String, Safetensors.Tensor> out = new LinkedHashMap<>();
        for (Map.Entry<String, long[]> e : shapes.entrySet()) {
            String n = e.getKey();
            if (n.endsWith("num_batches_tracked")) {
                Safetensors.Tensor r = ref == null ? null : ref.get(n);
                long v = r != null && r.longs != null && r.longs.length == 1 ? r.longs[0] : 0;
                out.put(n, new Safetensors.Tensor(new long[] {}, new long[] {v}));
            } else {
                out.put(n, new Safetensors.Tensor(e.getValue(), c.get(n)));
            }
        }
        return out;
    }
}
