package crossbind.tfjava;

/** One split of a data set in file order: images as floats in [0, 1] (NHWC, TensorFlow's layout)
 * or token ids, and labels. */
final class DataSplit {
    final int n;
    final long[] sampleShape;
    final float[] images;   // n * prod(sampleShape), or null for token data
    final long[] tokens;    // n * prod(sampleShape), or null for image data
    final long[] labels;    // class ids (IMDb: 0 negative, 1 positive)

    DataSplit(int n, long[] sampleShape, float[] images, long[] tokens, long[] labels) {
        this.n = n;
        this.sampleShape = sampleShape;
        this.images = images;
        this.tokens = tokens;
        this.labels = labels;
    }

    /** CIFAR's records are channel-major (3, 32, 32); TensorFlow's convolutions take (32, 32, 3). */
    DataSplit toChannelsLast() {
        int c = (int) sampleShape[0];
        int hw = (int) (sampleShape[1] * sampleShape[2]);
        float[] out = new float[images.length];
        for (int s = 0; s < n; s++) {
            int base = s * c * hw;
            for (int ch = 0; ch < c; ch++) {
                for (int p = 0; p < hw; p++) {
                    out[base + p * c + ch] = images[base + ch * hw + p];
                }
            }
        }
        return new DataSplit(n, new long[] {sampleShape[1], sampleShape[2], c}, out, null, labels);
    }

    static DataSplit load(String model, String dir, boolean train, int limit) {
        try {
            switch (Protocol.dataFormat(model)) {
                case "mnist":
                    return Mnist.load(dir, train, limit);
                case "cifar":
                    return Cifar.load(dir, train, limit).toChannelsLast();
                default:
                    return Imdb.load(dir, train, limit);
            }
        } catch (java.io.IOException e) {
            throw new CliError(e.getMessage() == null ? e.toString() : e.getMessage(), e);
        }
    }
}
