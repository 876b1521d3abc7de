package crossbind.djl;

/** One split of a data set in file order: images as floats in [0, 1] or token ids, and labels. */
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

    static DataSplit load(String model, String dir, boolean train, int limit) {
        try {
            switch (Protocol.dataFormat(model)) {
                case "mnist":
                    return Mnist.load(dir, train, limit);
                case "cifar":
                    return Cifar.load(dir, train, limit);
                default:
                    return Imdb.load(dir, train, limit);
            }
        } catch (java.io.IOException e) {
            throw new CliError(e.getMessage() == null ? e.toString() : e.getMessage(), e);
        }
    }
}
