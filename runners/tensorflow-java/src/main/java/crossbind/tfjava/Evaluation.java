package crossbind.tfjava;

import crossbind.common.DataSplit;
import crossbind.common.Metrics;
import org.tensorflow.Tensor;

/** One pass over a split in inference mode, in file order, through the model's inference head:
 * outputs, loss, accuracy and (on request) macro F1 and AUC. Binary models: p >= 0.5, binary
 * cross-entropy. Batches are made outside the timed region; the time is that of the session runs. */
final class Evaluation {
    int correct;
    int total;
    double loss;
    double f1 = Double.NaN;
    double auc = Double.NaN;
    double seconds;
    float[] outputs; // [total, k]: logits, or the probability for binary models
    int k;
    int[] pred;

    double accuracy() {
        return (double) correct / total;
    }

    static Evaluation run(TfModel model, DataSplit split, int batch, boolean withMetrics) {
        boolean binary = Protocol.binary(model.name);
        Evaluation r = new Evaluation();
        r.total = split.n;
        r.k = binary ? 1 : 10;
        r.outputs = new float[split.n * r.k];
        long nanos = 0;
        for (int s0 = 0; s0 < split.n; s0 += batch) {
            int n = Math.min(batch, split.n - s0);
            try (Tensor x = model.inputTensor(split, s0, n)) {
                long t0 = System.nanoTime();
                float[] o = model.predict(x);
                nanos += System.nanoTime() - t0;
                System.arraycopy(o, 0, r.outputs, s0 * r.k, o.length);
            }
        }
        r.seconds = nanos / 1e9;
        r.pred = new int[split.n];
        double lossSum = 0;
        float[] probs = binary ? null : new float[r.outputs.length];
        for (int i = 0; i < split.n; i++) {
            if (binary) {
                double p = Math.min(Math.max(r.outputs[i], 1e-12), 1 - 1e-12);
                double y = split.labels[i];
                lossSum -= y * Math.log(p) + (1 - y) * Math.log(1 - p);
                r.pred[i] = r.outputs[i] >= 0.5f ? 1 : 0;
            } else {
                int off = i * 10;
                double max = Double.NEGATIVE_INFINITY;
                for (int j = 0; j < 10; j++) {
                    max = Math.max(max, r.outputs[off + j]);
                }
                double sum = 0;
                for (int j = 0; j < 10; j++) {
                    sum += Math.exp(r.outputs[off + j] - max);
                }
                double logSum = Math.log(sum);
                lossSum -= r.outputs[off + (int) split.labels[i]] - max - logSum;
                for (int j = 0; j < 10; j++) {
                    probs[off + j] = (float) Math.exp(r.outputs[off + j] - max - logSum);
                }
                r.pred[i] = argmax(r.outputs, off, 10);
            }
            if (r.pred[i] == split.labels[i]) {
                r.correct++;
            }
        }
        r.loss = lossSum / split.n;
        if (withMetrics) {
            if (binary) {
                double[] s = new double[r.total];
                boolean[] pos = new boolean[r.total];
                for (int i = 0; i < r.total; i++) {
                    s[i] = r.outputs[i];
                    pos[i] = split.labels[i] == 1;
                }
                r.f1 = Metrics.f1Macro(r.pred, split.labels, 2);
                r.auc = Metrics.aucBinary(s, pos);
            } else {
                r.f1 = Metrics.f1Macro(r.pred, split.labels, 10);
                r.auc = Metrics.aucMacro(probs, split.labels, 10);
            }
        }
        return r;
    }

    /** The first index of the largest value, as numpy's argmax. */
    static int argmax(float[] v, int offset, int k) {
        int best = 0;
        for (int j = 1; j < k; j++) {
            if (v[offset + j] > v[offset + best] || (Float.isNaN(v[offset + j]) && !Float.isNaN(v[offset + best]))) {
                best = j;
            }
        }
        return best;
    }
}
