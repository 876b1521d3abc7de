package crossbind.tfjava;

import crossbind.common.DataSplit;
/** The benchmark's synthetic inputs, the same in every binding: sample s is the flat index range
 * [s * size, (s + 1) * size), pixel i = (i % 251) / 251, token i = (i * 7919) % 10000; the label
 * of sample s is s % 10 (s % 2 for the binary models). Pixels fill the image in PyTorch's
 * channel-major order (C, H, W), then move to TensorFlow's (H, W, C). */
final class Synthetic {
    private Synthetic() {}

    /** Samples s0 .. s0 + n - 1 as a DataSplit. */
    static DataSplit batch(String model, long s0, int n) {
        long[] labels = new long[n];
        for (int j = 0; j < n; j++) {
            labels[j] = (s0 + j) % (Protocol.binary(model) ? 2 : 10);
        }
        if (Protocol.binary(model)) {
            long size = Protocol.SEQ_LEN;
            long[] tokens = new long[(int) (n * size)];
            for (int k = 0; k < tokens.length; k++) {
                tokens[k] = ((s0 * size + k) * 7919L) % 10000L;
            }
            return new DataSplit(n, new long[] {size}, null, tokens, labels);
        }
        long[] hwc = Protocol.inputShape(model);
        long size = hwc[0] * hwc[1] * hwc[2];
        float[] pixels = new float[(int) (n * size)];
        for (int k = 0; k < pixels.length; k++) {
            pixels[k] = (float) ((s0 * size + k) % 251) / 251.0f;
        }
        DataSplit chw = new DataSplit(n, new long[] {hwc[2], hwc[0], hwc[1]}, pixels, null, labels);
        return chw.toChannelsLast();
    }
}
