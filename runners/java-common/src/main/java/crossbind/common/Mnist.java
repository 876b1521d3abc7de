package crossbind.common;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.zip.GZIPInputStream;

/** MNIST IDX files (plain or gzip), read and scaled as runners/pytorch/cb_data.py does. */
public final class Mnist {
    private Mnist() {}

    public static DataSplit load(String dir, boolean train, int limit) throws IOException {
        String prefix = train ? "train" : "t10k";
        Idx x = read(dir, prefix + "-images-idx3-ubyte", 3, limit);
        Idx y = read(dir, prefix + "-labels-idx1-ubyte", 1, limit);
        if (x.dims[0] != y.dims[0]) {
            throw new IOException(dir + ": " + x.dims[0] + " images but " + y.dims[0] + " labels");
        }
        int n = x.dims[0];
        float[] images = new float[n * 28 * 28];
        if (x.dims[1] != 28 || x.dims[2] != 28) {
            throw new IOException(dir + ": images are " + x.dims[1] + "x" + x.dims[2] + ", not 28x28");
        }
        for (int i = 0; i < images.length; i++) {
            images[i] = (float) (x.data[x.offset + i] & 0xff) / 255.0f;
        }
        long[] labels = new long[n];
        for (int i = 0; i < n; i++) {
            labels[i] = y.data[y.offset + i] & 0xff;
        }
        // channel-major like CIFAR; DataSplit.toChannelsLast gives TensorFlow its (28, 28, 1)
        return new DataSplit(n, new long[] {1, 28, 28}, images, null, labels);
    }

    private static final class Idx {
        byte[] data;
        int offset;
        int[] dims;
    }

    private static Idx read(String dir, String base, int ndim, int limit) throws IOException {
        Path path = Paths.get(dir, base);
        if (!Files.exists(path)) {
            path = Paths.get(dir, base + ".gz");
        }
        if (!Files.exists(path)) {
            throw new IOException("cannot open " + Paths.get(dir, base) + "[.gz]");
        }
        byte[] blob = Files.readAllBytes(path);
        if (blob.length >= 2 && (blob[0] & 0xff) == 0x1f && (blob[1] & 0xff) == 0x8b) {
            try (InputStream in = new GZIPInputStream(Files.newInputStream(path), 1 << 16)) {
                blob = in.readAllBytes();
            } catch (IOException e) {
                throw new IOException(path + ": corrupt gzip data (" + e.getMessage() + ")", e);
            }
        }
        int header = 4 + 4 * ndim;
        if (blob.length < header || blob[0] != 0 || blob[1] != 0 || blob[2] != 8 || blob[3] != ndim) {
            throw new IOException(path + ": wrong IDX magic or truncated header");
        }
        ByteBuffer bb = ByteBuffer.wrap(blob); // big-endian
        Idx idx = new Idx();
        idx.dims = new int[ndim];
        long count = 1;
        for (int d = 0; d < ndim; d++) {
            idx.dims[d] = bb.getInt(4 + 4 * d);
            count *= idx.dims[d];
        }
        if (blob.length - header != count) {
            throw new IOException(path + ": header promises " + count + " bytes, file has " + (blob.length - header));
        }
        if (limit > 0 && limit < idx.dims[0]) {
            idx.dims[0] = limit;
        }
        idx.data = blob;
        idx.offset = header;
        return idx;
    }
}
