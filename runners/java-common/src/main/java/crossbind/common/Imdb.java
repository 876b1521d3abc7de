package crossbind.common;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/** The prepared IMDb data (crossbind data imdb-prepare): int64 token ids [n, 300] and int64 labels. */
public final class Imdb {
    private Imdb() {}

    public static DataSplit load(String dir, boolean train, int limit) throws IOException {
        String split = train ? "train" : "test";
        if (!Files.exists(Paths.get(dir, "vocab.txt"))) {
            throw new IOException(dir + " is not prepared IMDb data (no vocab.txt): make it with "
                    + "crossbind data imdb-prepare --from ACLIMDB_DIR --out " + dir);
        }
        Npy.Longs x = Npy.readInt64(Paths.get(dir, "x_" + split + ".npy"));
        Npy.Longs y = Npy.readInt64(Paths.get(dir, "y_" + split + ".npy"));
        if (x.shape.length != 2 || y.shape.length != 1 || y.shape[0] != x.shape[0]) {
            throw new IOException(dir + ": expected int64 x_" + split + ".npy [n, L] and y_" + split + ".npy [n]");
        }
        int n = (int) x.shape[0];
        int len = (int) x.shape[1];
        if (limit > 0 && limit < n) {
            n = limit;
        }
        long[] tokens = java.util.Arrays.copyOf(x.values, n * len);
        for (long t : tokens) {
            if (t < 0 || t >= 10000) {
                throw new IOException(dir + ": token id " + t + " outside the vocabulary of 10,000");
            }
        }
        long[] labels = java.util.Arrays.copyOf(y.values, n);
        return new DataSplit(n, new long[] {len}, null, tokens, labels);
    }

    public static Path vocab(String dir) {
        return Paths.get(dir, "vocab.txt");
    }
}
