package crossbind.djl;

import crossbind.common.CliError;
import crossbind.common.DataSplit;
import crossbind.common.Metrics;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.Dataset;
import ai.djl.translate.TranslateException;
import java.io.IOException;

/** One pass over a data set in evaluation mode, in file order: outputs, loss, accuracy and
 * (on request) macro F1 and AUC. Binary models: p >= 0.5, binary cross-entropy. */
final class Evaluation {
    /** The model's forward pass in evaluation mode (a Trainer's evaluate, or a Predictor). */
    interface Forward {
        NDList apply(NDList input) throws TranslateException;
    }

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

    static Evaluation run(Forward forward, Dataset data, NDManager manager, DataSplit split, boolean binary,
            boolean withMetrics) {
        Evaluation r = new Evaluation();
        r.total = split.n;
        r.k = binary ? 1 : 10;
        r.outputs = new float[split.n * r.k];
        double lossSum = 0;
        int at = 0;
        long t0 = System.nanoTime();
        try {
            for (Batch batch : data.getData(manager)) {
                try (batch) {
                    NDList out = forward.apply(batch.getData());
                    NDArray o = out.head();
                    NDArray y = batch.getLabels().head();
                    NDArray losses = binary
                            ? BinaryCrossEntropy.perSample(y, o)
                            : o.logSoftmax(1).get(new NDIndex().addAllDim().addPickDim(y)).neg();
                    lossSum += losses.sum().getFloat();
                    float[] v = o.toFloatArray();
                    System.arraycopy(v, 0, r.outputs, at, v.length);
                    at += v.length;
                    out.close();
                }
            }
        } catch (IOException | TranslateException e) {
            throw new CliError("evaluation failed: " + e.getMessage(), e);
        }
        r.seconds = (System.nanoTime() - t0) / 1e9;
        r.loss = lossSum / split.n;
        r.pred = new int[split.n];
        for (int i = 0; i < split.n; i++) {
            r.pred[i] = binary ? (r.outputs[i] >= 0.5f ? 1 : 0) : argmax(r.outputs, i * 10, 10);
            if (r.pred[i] == split.labels[i]) {
                r.correct++;
            }
        }
        if (withMetrics) {
            r.metrics(manager, split.labels, binary);
        }
        return r;
    }

    private void metrics(NDManager manager, long[] labels, boolean binary) {
        if (binary) {
            double[] s = new double[total];
            boolean[] pos = new boolean[total];
            for (int i = 0; i < total; i++) {
                s[i] = outputs[i];
                pos[i] = labels[i] == 1;
            }
            f1 = Metrics.f1Macro(pred, labels, 2);
            auc = Metrics.aucBinary(s, pos);
        } else {
            float[] probs;
            try (NDArray logits = manager.create(outputs, new ai.djl.ndarray.types.Shape(total, k));
                    NDArray p = logits.softmax(1)) {
                probs = p.toFloatArray();
            }
            f1 = Metrics.f1Macro(pred, labels, 10);
            auc = Metrics.aucMacro(probs, labels, 10);
        }
    }

    /** The first index of the largest value, as torch.argmax. */
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
