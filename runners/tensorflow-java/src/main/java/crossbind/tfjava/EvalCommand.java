package crossbind.tfjava;

import crossbind.common.CliError;
import crossbind.common.DataSplit;
import crossbind.common.Json;
import crossbind.common.Npy;
import crossbind.common.Options;
import crossbind.common.Safetensors;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** eval MODEL --weights FILE: canonical safetensors into the graph's variables, one warm-up pass and
 * R timed passes over the test set, the last pass's outputs to --logits, one JSON line.
 * --weights-out FILE writes the variables back as canonical safetensors (canonical -> Keras ->
 * graph -> Keras -> canonical, a check of the mapping). */
final class EvalCommand {
    static final Set<String> VALUED = Set.of("weights", "data", "batch", "repeat", "limit-test", "threads",
            "predictions", "logits", "device", "weights-out");
    static final Set<String> FLAGS = Set.of("json");

    private EvalCommand() {}

    static void run(Options o) {
        String name = o.model();
        Protocol.checkModel(name);
        Main.checkDevice(o);
        Path weights = Paths.get(o.required("weights"));
        int batch = o.integer("batch", 128, 1);
        int repeat = o.integer("repeat", 5, 1);
        int threads = o.integer("threads", Runtime.getRuntime().availableProcessors(), 1);
        Map<String, Safetensors.Tensor> tensors = Weights.read(weights);
        Map<String, float[]> keras = KerasWeights.toKeras(name, tensors); // refused before the data load
        // true: images channels-last (H, W, C), the layout TensorFlow's convolutions take
        DataSplit test = DataSplit.load(Protocol.dataFormat(name), o.str("data", Protocol.defaultDir(name)), false,
                o.integer("limit-test", 0, 0), true);
        try (TfModel model = new TfModel(name, Protocol.SEEDS[0], null, threads)) {
            model.assign(keras);
            if (o.has("weights-out")) { // the variables back as canonical weights: the mapping's round trip
                Weights.save(model, Paths.get(o.str("weights-out", null)), tensors);
            }
            Evaluation.run(model, test, batch, false); // warm-up
            List<Double> times = new ArrayList<>();
            List<Integer> counts = new ArrayList<>();
            Evaluation r = null;
            for (int i = 0; i < repeat; i++) {
                r = Evaluation.run(model, test, batch, i == repeat - 1);
                times.add(r.seconds);
                counts.add(r.correct);
            }
            if (o.has("logits")) {
                try {
                    Npy.writeFloat32(Paths.get(o.str("logits", null)), r.outputs, r.total, r.k);
                } catch (IOException e) {
                    throw new CliError("cannot write " + o.str("logits", null) + ": " + e.getMessage(), e);
                }
            }
            if (o.has("predictions")) {
                writePredictions(Paths.get(o.str("predictions", null)), r, test);
            }
            double mean = times.stream().mapToDouble(Double::doubleValue).average().orElse(0);
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("binding", "tensorflow-java");
            res.put("model", name);
            res.put("load_mode", "parameters");
            res.put("format", "safetensors");
            res.put("weights", weights.toString());
            res.put("correct", r.correct);
            res.put("total", r.total);
            res.put("accuracy", r.accuracy());
            res.put("loss", r.loss);
            res.put("f1_macro", r.f1);
            res.put("auc_macro", r.auc);
            res.put("batch", batch);
            res.put("threads", threads);
            res.put("times_s", times);
            res.put("correct_per_pass", counts);
            res.put("mean_time_s", mean);
            if (o.has("json")) {
                System.out.println(Json.of(res));
            } else {
                System.out.printf("%s: %d/%d correct, accuracy %.4f, loss %.4f, macro F1 %.4f, AUC %.4f, "
                        + "mean time %.4fs over %d passes%n", name, r.correct, r.total, r.accuracy(), r.loss, r.f1,
                        r.auc, mean, repeat);
            }
        }
    }

    private static void writePredictions(Path path, Evaluation r, DataSplit test) {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(path))) {
            StringBuilder h = new StringBuilder("index,label,prediction");
            for (int j = 0; j < r.k; j++) {
                h.append(",p").append(j);
            }
            w.println(h);
            for (int i = 0; i < r.total; i++) {
                StringBuilder line = new StringBuilder();
                line.append(i).append(',').append(test.labels[i]).append(',').append(r.pred[i]);
                double max = Double.NEGATIVE_INFINITY;
                double sum = 0;
                for (int j = 0; j < r.k; j++) {
                    max = Math.max(max, r.outputs[i * r.k + j]);
                }
                for (int j = 0; j < r.k; j++) {
                    sum += Math.exp(r.outputs[i * r.k + j] - max);
                }
                for (int j = 0; j < r.k; j++) {
                    double v = r.k == 1 ? r.outputs[i] : Math.exp(r.outputs[i * r.k + j] - max) / sum;
                    line.append(',').append((float) v);
                }
                w.println(line);
            }
        } catch (IOException e) {
            throw new CliError("cannot write " + path + ": " + e.getMessage(), e);
        }
    }
}
