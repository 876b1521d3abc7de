package crossbind.djl;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;

/** The benchmark's synthetic inputs, the same in every binding: sample s is the flat index range
 * [s * size, (s + 1) * size), pixel i = (i % 251) / 251, token i = (i * 7919) % 10000; the label
 * of sample s is s % 10 (s % 2 for the binary models). */
final class Synthetic {
    private Synthetic() {}

    /** (inputs, labels) of samples s0 .. s0 + n - 1. */
    static NDList batch(NDManager manager, String model, long s0, int n) {
        Shape sample = Protocol.inputShape(model);
        long size = sample.size();
        Shape shape = new Shape(n).addAll(sample);
        NDList out = new NDList();
        if (Protocol.binary(model)) {
            long[] tokens = new long[(int) (n * size)];
            float[] labels = new float[n];
            for (int k = 0; k < tokens.length; k++) {
                tokens[k] = ((s0 * size + k) * 7919L) % 10000L;
            }
            for (int j = 0; j < n; j++) {
                labels[j] = (s0 + j) % 2;
            }
            out.add(manager.create(tokens, shape));
            out.add(manager.create(labels));
        } else {
            float[] pixels = new float[(int) (n * size)];
            long[] labels = new long[n];
            for (int k = 0; k < pixels.length; k++) {
                pixels[k] = (float) ((s0 * size + k) % 251) / 251.0f;
            }
            for (int j = 0; j < n; j++) {
                labels[j] = (s0 + j) % 10;
            }
            out.add(manager.create(pixels, shape));
            out.add(manager.create(labels));
        }
        return out;
    }
}
