package crossbind.djl;

import crossbind.common.CliError;
import crossbind.common.DataSplit;
import crossbind.common.Json;
import crossbind.common.Npy;
import crossbind.common.Options;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.translate.NoopTranslator;
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

/** eval MODEL --weights FILE: one warm-up pass and R timed passes over the test set through a
 * DJL Predictor, the last pass's outputs to --logits, one JSON line. */
final class EvalCommand {
    static final Set<String> VALUED = Set.of("weights", "data", "batch", "repeat", "limit-test", "threads",
            "predictions", "logits", "device");
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
        boolean binary = Protocol.binary(name);
        if (!Files.isReadable(weights)) {
            throw new CliError("cannot open weights " + weights);
        }
        Loaded.fileKind(weights); // a bad file is refused before the data are read
        // false: images stay channel-major (C, H, W), PyTorch's layout
        DataSplit test = DataSplit.load(Protocol.dataFormat(name), o.str("data", Protocol.defaultDir(name)), false,
                o.integer("limit-test", 0, 0), false);
        Torch.start(threads);
        try (Loaded loaded = Loaded.load(name, weights, 0.5f);
                NDManager manager = loaded.model.getNDManager().newSubManager();
                Predictor<NDList, NDList> predictor = loaded.model.newPredictor(new NoopTranslator())) {
            ArrayDataset data = Datasets.of(manager, test, binary, batch, false);
            Evaluation.run(predictor::predict, data, manager, test, binary, false); // warm-up
            List<Double> times = new ArrayList<>();
            List<Integer> counts = new ArrayList<>();
            Evaluation r = null;
            for (int i = 0; i < repeat; i++) {
                r = Evaluation.run(predictor::predict, data, manager, test, binary, i == repeat - 1);
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
                writePredictions(Paths.get(o.str("predictions", null)), r, test, manager, binary);
            }
            double mean = times.stream().mapToDouble(Double::doubleValue).average().orElse(0);
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("binding", "pytorch-java");
            res.put("model", name);
            res.put("load_mode", loaded.loadMode);
            res.put("format", loaded.format);
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

    private static void writePredictions(Path path, Evaluation r, DataSplit test, NDManager manager, boolean binary) {
        float[] probs = r.outputs;
        if (!binary) {
            try (var logits = manager.create(r.outputs, new ai.djl.ndarray.types.Shape(r.total, r.k));
                    var p = logits.softmax(1)) {
                probs = p.toFloatArray();
            }
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(path))) {
            StringBuilder h = new StringBuilder("index,label,prediction");
            for (int j = 0; j < r.k; j++) {
                h.append(",p").append(j);
            }
            w.println(h);
            for (int i = 0; i < r.total; i++) {
                StringBuilder line = new StringBuilder();
                line.append(i).append(',').append(test.labels[i]).append(',').append(r.pred[i]);
                for (int j = 0; j < r.k; j++) {
                    line.append(',').append(probs[i * r.k + j]);
                }
                w.println(line);
            }
        } catch (IOException e) {
            throw new CliError("cannot write " + path + ": " + e.getMessage(), e);
        }
    }
}
