package crossbind.tfjava;

import crossbind.common.CliError;
import crossbind.common.DataSplit;
import crossbind.common.Json;
import crossbind.common.Options;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.tensorflow.Tensor;

/** The worker of `crossbind bench` (runners/README.md, "Benchmark worker"): one measurement of one
 * model, printed as one JSON line. Batches are made outside the timed regions; the times are those
 * of the session runs (System.nanoTime). */
final class BenchCommand {
    static final Set<String> VALUED = Set.of("model", "kind", "weights", "batch", "samples", "repeat", "threads");
    static final Set<String> FLAGS = Set.of();

    private BenchCommand() {}

    static void run(Options o) {
        String name = o.required("model");
        Protocol.checkModel(name);
        String kind = o.required("kind");
        if (!Set.of("train", "infer", "latency", "startup").contains(kind)) {
            throw new CliError("bench: --kind must be train, infer, latency or startup");
        }
        Path weights = Paths.get(o.required("weights"));
        int batch = o.integer("batch", 1, 1);
        int samples = o.integer("samples", 1, 1);
        int repeat = o.integer("repeat", 1, 1);
        int threads = o.integer("threads", 1, 1);
        if (kind.equals("train") && samples < batch) {
            throw new CliError("bench: a training unit needs at least one whole batch (--samples >= --batch)");
        }
        Map<String, float[]> keras = KerasWeights.toKeras(name, Weights.read(weights));
        TfModel.TrainSpec spec = null;
        if (kind.equals("train")) { // the protocol's optimizer and rate, dropout on
            spec = new TfModel.TrainSpec();
            spec.optimizer = Protocol.optimizer(name);
            spec.lr = (float) Protocol.learningRate(name);
            spec.seed = Protocol.SEEDS[0];
        }
        List<Double> times = new ArrayList<>();
        try (TfModel model = new TfModel(name, Protocol.SEEDS[0], spec, threads)) {
            model.assign(keras);
            if (kind.equals("startup")) {
                try (Tensor x = model.inputTensor(Synthetic.batch(name, 0, 1), 0, 1)) {
                    int label = labels(name, model.predict(x))[0];
                    double now = System.nanoTime() / 1e9; // CLOCK_MONOTONIC on Linux
                    Map<String, Object> res = new LinkedHashMap<>();
                    res.put("label", label);
                    res.put("monotonic_s", now);
                    res.put("vmhwm_kib", vmhwmKib());
                    System.out.println(Json.of(res));
                    return;
                }
            }
            if (kind.equals("train")) {
                double w = step(model, name, 0, batch); // warm-up
                if (System.getenv("CROSSBIND_TRACE") != null) {
                    System.err.printf("warm-up step %.2fs%n", w);
                }
                for (int r = 0; r < repeat; r++) {
                    double t = 0;
                    for (int s0 = 0; s0 < samples; s0 += batch) {
                        t += step(model, name, s0, Math.min(batch, samples - s0));
                    }
                    times.add(t);
                }
            } else if (kind.equals("infer")) {
                for (int r = 0; r <= repeat; r++) { // pass 0 is the warm-up
                    double t = 0;
                    for (int s0 = 0; s0 < samples; s0 += batch) {
                        t += predict(model, name, s0, Math.min(batch, samples - s0));
                    }
                    if (r > 0) {
                        times.add(t);
                    }
                }
            } else {
                for (int s = 0; s < samples + 5; s++) {
                    double t = predict(model, name, s, 1);
                    if (s >= 5) {
                        times.add(t);
                    }
                }
            }
        }
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("times_s", times);
        res.put("tensorflow", org.tensorflow.TensorFlow.version());
        res.put("intra_op_threads", threads);
        res.put("vmhwm_kib", vmhwmKib());
        System.out.println(Json.of(res));
    }

    /** Predicted labels: argmax, or p >= 0.5 for the binary models. */
    static int[] labels(String name, float[] out) {
        boolean binary = Protocol.binary(name);
        int k = binary ? 1 : 10;
        int[] v = new int[out.length / k];
        for (int i = 0; i < v.length; i++) {
            v[i] = binary ? (out[i] >= 0.5f ? 1 : 0) : Evaluation.argmax(out, i * k, k);
        }
        return v;
    }

    private static double predict(TfModel model, String name, long s0, int n) {
        try (Tensor x = model.inputTensor(Synthetic.batch(name, s0, n), 0, n)) {
            long t0 = System.nanoTime();
            labels(name, model.predict(x));
            return (System.nanoTime() - t0) / 1e9;
        }
    }

    private static double step(TfModel model, String name, long s0, int n) {
        DataSplit d = Synthetic.batch(name, s0, n);
        try (Tensor x = model.inputTensor(d, 0, n); Tensor y = model.labelTensor(d, 0, n)) {
            long t0 = System.nanoTime();
            model.step(x, y);
            return (System.nanoTime() - t0) / 1e9;
        }
    }

    /** This process's peak resident memory (VmHWM), KiB; -1 if unknown. */
    static long vmhwmKib() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }
}
