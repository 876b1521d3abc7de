package crossbind.common;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/** CIFAR-10 binary batches (data_batch_1..5.bin, test_batch.bin), as cb_data.py reads them. */
public final class Cifar {
    public static final int RECORD = 1 + 3 * 32 * 32;

    private Cifar() {}

    public static DataSplit load(String dir, boolean train, int limit) throws IOException {
        String[] names = train
                ? new String[] {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                    "data_batch_5.bin"}
                : new String[] {"test_batch.bin"};
        byte[][] blobs = new byte[names.length][];
        int total = 0;
        for (int b = 0; b < names.length && !(limit > 0 && total >= limit); b++) {
            Path path = Paths.get(dir, names[b]);
            if (!Files.exists(path)) {
                throw new IOException("cannot open " + path);
            }
            byte[] blob = Files.readAllBytes(path);
            if (blob.length == 0 || blob.length % RECORD != 0) {
                throw new IOException(path + ": " + blob.length + " bytes is not a whole number of " + RECORD
                        + "-byte records");
            }
            int records = blob.length / RECORD;
            if (limit > 0) {
                records = Math.min(records, limit - total);
            }
            for (int r = 0; r < records; r++) {
                if ((blob[r * RECORD] & 0xff) > 9) {
                    throw new IOException(path + ": a label is outside 0-9");
                }
            }
            blobs[b] = blob;
            total += records;
        }
        float[] images = new float[total * (RECORD - 1)];
        long[] labels = new long[total];
        int i = 0;
        for (byte[] blob : blobs) {
            if (blob == null) {
                break;
            }
            for (int r = 0; r < blob.length / RECORD && i < total; r++, i++) {
                labels[i] = blob[r * RECORD] & 0xff;
                int src = r * RECORD + 1;
                int dst = i * (RECORD - 1);
                for (int k = 0; k < RECORD - 1; k++) {
                    images[dst + k] = (float) (blob[src + k] & 0xff) / 255.0f;
                }
            }
        }
        return new DataSplit(total, new long[] {3, 32, 32}, images, null, labels);
    }
}
