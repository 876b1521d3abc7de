package crossbind.common;

/** One split of a data set in file order: images as floats in [0, 1] or token ids, and labels.
 * The loaders give images channel-major (C, H, W), PyTorch's layout; channelsLast moves them to
 * TensorFlow's (H, W, C), so both runners share one reader per data set. */
public final class DataSplit {
    public final int n;
    public final long[] sampleShape;
    public final float[] images;   // n * prod(sampleShape), or null for token data
    public final long[] tokens;    // n * prod(sampleShape), or null for image data
    public final long[] labels;    // class ids (IMDb: 0 negative, 1 positive)

    public DataSplit(int n, long[] sampleShape, float[] images, long[] tokens, long[] labels) {
        this.n = n;
        this.sampleShape = sampleShape;
        this.images = images;
        this.tokens = tokens;
        this.labels = labels;
    }

    /** CIFAR's records are channel-major (3, 32, 32); TensorFlow's convolutions take (32, 32, 3). */
    public DataSplit toChannelsLast() {
        int c = (int) sampleShape[0];
        if (c == 1) { // one channel (MNIST): the same values in the same order, only the shape moves
            return new DataSplit(n, new long[] {sampleShape[1], sampleShape[2], 1}, images, null, labels);
        }
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

    /** Reads the split of a data set in the format dataFormat names ("mnist", "cifar", else
     * IMDb); channelsLast gives images as (H, W, C) instead of (C, H, W). */
    public static DataSplit load(String dataFormat, String dir, boolean train, int limit, boolean channelsLast) {
        try {
            switch (dataFormat) {
                case "mnist":
                    DataSplit mnist = Mnist.load(dir, train, limit);
                    return channelsLast ? mnist.toChannelsLast() : mnist;
                case "cifar":
                    DataSplit cifar = Cifar.load(dir, train, limit);
                    return channelsLast ? cifar.toChannelsLast() : cifar;
                default:
                    return Imdb.load(dir, train, limit);
            }
        } catch (java.io.IOException e) {
            throw new CliError(e.getMessage() == null ? e.toString() : e.getMessage(), e);
        }
    }
}
