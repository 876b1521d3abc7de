package crossbind.common;

import java.util.Arrays;
import java.util.Comparator;

/** Macro F1 and AUC as runners/pytorch/crossbind_torch.py computes them. */
public final class Metrics {
    private Metrics() {}

    public static double f1Macro(int[] pred, long[] labels, int k) {
        double sum = 0;
        int count = 0;
        for (int c = 0; c < k; c++) {
            long tp = 0;
            long fp = 0;
            long fn = 0;
            for (int i = 0; i < pred.length; i++) {
                boolean p = pred[i] == c;
                boolean l = labels[i] == c;
                if (p && l) {
                    tp++;
                } else if (p) {
                    fp++;
                } else if (l) {
                    fn++;
                }
            }
            if (tp + fp + fn > 0) {
                sum += 2.0 * tp / (2.0 * tp + fp + fn);
                count++;
            }
        }
        return count > 0 ? sum / count : Double.NaN;
    }

    /** Binary AUC by average ranks (ties share their mean rank); NaN with one class present. */
    public static double aucBinary(double[] score, boolean[] positive) {
        int n = score.length;
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, Comparator.comparingDouble(i -> score[i])); // stable, as mergesort
        double[] ranks = new double[n];
        int i = 0;
        while (i < n) {
            int j = i;
            while (j < n && score[order[j]] == score[order[i]]) {
                j++;
            }
            for (int t = i; t < j; t++) {
                ranks[t] = (i + 1 + j) / 2.0;
            }
            i = j;
        }
        double npos = 0;
        double rankSum = 0;
        for (int t = 0; t < n; t++) {
            if (positive[order[t]]) {
                npos++;
                rankSum += ranks[t];
            }
        }
        double nneg = n - npos;
        if (npos == 0 || nneg == 0) {
            return Double.NaN;
        }
        return (rankSum - npos * (npos + 1) / 2.0) / (npos * nneg);
    }

    /** Mean one-vs-rest AUC over the classes where it is defined. */
    public static double aucMacro(float[] probs, long[] labels, int k) {
        int n = labels.length;
        double sum = 0;
        int count = 0;
        for (int c = 0; c < k; c++) {
            double[] s = new double[n];
            boolean[] pos = new boolean[n];
            for (int i = 0; i < n; i++) {
                s[i] = probs[i * k + c];
                pos[i] = labels[i] == c;
            }
            double a = aucBinary(s, pos);
            if (!Double.isNaN(a)) {
                sum += a;
                count++;
            }
        }
        return count > 0 ? sum / count : Double.NaN;
    }
}
