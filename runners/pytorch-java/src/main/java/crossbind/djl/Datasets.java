package crossbind.djl;

import crossbind.common.DataSplit;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.ArrayDataset;

/** A DataSplit as DJL's ArrayDataset: batches of consecutive samples in file order (slices of
 * the whole split, which DJL takes without copying), or a seeded shuffle with --shuffle. */
final class Datasets {
    private Datasets() {}

    static ArrayDataset of(NDManager manager, DataSplit split, boolean binary, int batch, boolean shuffle) {
        long[] shape = new long[split.sampleShape.length + 1];
        shape[0] = split.n;
        System.arraycopy(split.sampleShape, 0, shape, 1, split.sampleShape.length);
        NDArray x = split.images != null
                ? manager.create(split.images, new Shape(shape))
                : manager.create(split.tokens, new Shape(shape));
        NDArray y;
        if (binary) { // binary cross-entropy takes float targets
            float[] f = new float[split.n];
            for (int i = 0; i < f.length; i++) {
                f[i] = split.labels[i];
            }
            y = manager.create(f);
        } else {
            y = manager.create(split.labels);
        }
        return new ArrayDataset.Builder().setData(x).optLabels(y).setSampling(batch, shuffle).build();
    }
}
