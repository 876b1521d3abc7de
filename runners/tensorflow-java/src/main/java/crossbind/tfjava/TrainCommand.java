package crossbind.tfjava;

import crossbind.common.CliError;
import crossbind.common.DataSplit;
import crossbind.common.Imdb;
import crossbind.common.Json;
import crossbind.common.Options;
import crossbind.common.Safetensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.tensorflow.Tensor;

/** train MODEL: the protocol's training run (file order, evaluation of both full sets after every
 * epoch excluded from the training time), run.json, init.safetensors and final.safetensors. */
final class TrainCommand {
    static final Set<String> VALUED = Set.of("run", "seed", "epochs", "threads", "data", "out", "limit-train",
            "limit-test", "momentum", "lr", "weight-decay", "init", "batch", "optimizer", "device");
    static final Set<String> FLAGS = Set.of("quiet", "subactivities", "no-dropout");

    private TrainCommand() {}

    static void run(Options o) {
        String name = o.model();
        Protocol.checkModel(name);
        Main.checkDevice(o);
        if (o.has("seed") && o.has("run")) {
            throw new CliError("give --seed or --run, not both");
        }
        int run = o.integer("run", 1, 1);
        if (run > Protocol.SEEDS.length) {
            throw new CliError("--run must be 1 to " + Protocol.SEEDS.length);
        }
        long seed = o.has("seed") ? o.integer("seed", 0, 0) : Protocol.SEEDS[run - 1];
        String optimizer = o.str("optimizer", Protocol.optimizer(name));
        if (!optimizer.equals("sgd") && !optimizer.equals("adam")) {
            throw new CliError("--optimizer must be sgd or adam");
        }
        double lr = o.number("lr", o.has("optimizer") ? (optimizer.equals("adam") ? 1e-3 : 0.05)
                : Protocol.learningRate(name));
        double momentum = o.number("momentum", 0);
        double weightDecay = o.number("weight-decay", 0);
        if (weightDecay > 0 && !name.equals("vgg16")) {
            throw new CliError("--weight-decay is the L2 penalty on VGG-16's last dense layer (the TensorFlow "
                    + "code's form); other models have none");
        }
        if (momentum > 0 && optimizer.equals("adam")) {
            throw new CliError("--momentum applies to SGD only");
        }
        int batch = o.integer("batch", Protocol.batch(name), 1);
        int epochs = o.integer("epochs", Protocol.epochs(name), 1);
        int threads = o.integer("threads", Runtime.getRuntime().availableProcessors(), 1);
        int limitTrain = o.integer("limit-train", 0, 0);
        int limitTest = o.integer("limit-test", 0, 0);
        boolean subactivities = o.has("subactivities");
        boolean noDropout = o.has("no-dropout");
        String dataDir = o.str("data", Protocol.defaultDir(name));
        Path out = Paths.get(o.str("out", "runs/" + name + "-" + seed + "-tensorflow-java"));
        Map<String, Safetensors.Tensor> init = o.has("init") ? Weights.read(Paths.get(o.str("init", null))) : null;
        if (init != null) {
            KerasWeights.toKeras(name, init); // shapes and names checked before the data load
        }
        Path runJson = out.resolve("run.json");
        try {
            Files.createDirectories(out);
            Path probe = Files.createTempFile(out, ".probe", "");
            Files.delete(probe);
            Files.deleteIfExists(runJson);
        } catch (IOException e) {
            throw new CliError("output directory " + out + " is not writable: " + e.getMessage(), e);
        }
        // true: images channels-last (H, W, C), the layout TensorFlow's convolutions take
        DataSplit train = DataSplit.load(Protocol.dataFormat(name), dataDir, true, limitTrain, true);
        DataSplit test = DataSplit.load(Protocol.dataFormat(name), dataDir, false, limitTest, true);

        TfModel.TrainSpec spec = new TfModel.TrainSpec();
        spec.optimizer = optimizer;
        spec.lr = (float) lr;
        spec.momentum = (float) momentum;
        spec.weightDecay = (float) weightDecay;
        spec.dropout = noDropout ? 0f : 0.5f;
        spec.seed = seed;
        Map<String, Object> info = new LinkedHashMap<>();
        try (TfModel model = new TfModel(name, seed, spec, threads)) {
            if (init != null) {
                Weights.load(model, init);
            }
            // The canonical form of the starting point: the reference that splits the summed RNN
            // biases back and gives BatchNorm's num_batches_tracked.
            Map<String, Safetensors.Tensor> reference = init != null ? init
                    : KerasWeights.toCanonical(name, model.values(), null);
            Weights.save(model, out.resolve("init.safetensors"), reference);
            if (Protocol.binary(name)) { // the vocabulary the token ids refer to travels with the run
                copy(Imdb.vocab(dataDir), out.resolve("vocab.txt"));
            }
            info.put("format", "crossbind-run/1");
            info.put("status", "incomplete");
            info.put("binding", "tensorflow-java");
            info.put("model", name);
            info.put("seed", seed);
            info.put("run", o.has("seed") ? 0 : run);
            info.put("data", dataDir);
            info.put("n_train", train.n);
            info.put("n_test", test.n);
            info.put("batch", batch);
            info.put("optimizer", optimizer);
            info.put("lr", lr);
            info.put("momentum", momentum);
            info.put("weight_decay", weightDecay);
            info.put("weight_decay_form", weightDecay > 0 ? "l2 on the last dense layer" : null);
            info.put("shuffle", false);
            info.put("dropout", !noDropout);
            info.put("init", o.has("init") ? o.str("init", null) : null);
            info.put("threads", threads);
            info.put("versions", Main.versions());
            info.put("machine", System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                    + System.getProperty("os.arch"));
            List<Map<String, Object>> epochList = new ArrayList<>();
            info.put("epochs", epochList);

            double[] sub = new double[3];
            double evalTotal = 0;
            double probeTotal = 0;
            Evaluation te = null;
            long tStart = System.nanoTime();
            for (int epoch = 1; epoch <= epochs; epoch++) {
                long tEpoch = System.nanoTime();
                long probeNanos = 0; // the forward-only runs of --subactivities, not part of training
                for (int s0 = 0; s0 < train.n; s0 += batch) {
                    int n = Math.min(batch, train.n - s0);
                    long t0 = System.nanoTime();
                    try (Tensor x = model.inputTensor(train, s0, n); Tensor y = model.labelTensor(train, s0, n)) {
                        long t1 = System.nanoTime();
                        // A step is one session run (forward, gradients and update together). With
                        // --subactivities a forward-only run (the loss) is timed first as the forward
                        // share; backward is the step's time beyond it, and the probe run itself is
                        // left out of the training time.
                        long fwd = 0;
                        if (subactivities) {
                            model.lossOf(x, y);
                            fwd = System.nanoTime() - t1;
                            probeNanos += fwd;
                        }
                        long t2 = System.nanoTime();
                        model.step(x, y);
                        if (subactivities) {
                            long t3 = System.nanoTime();
                            sub[0] += (t1 - t0) / 1e9;
                            sub[1] += Math.min(fwd, t3 - t2) / 1e9;
                            sub[2] += Math.max(0, (t3 - t2) - fwd) / 1e9;
                        }
                    }
                }
                long tEval = System.nanoTime();
                boolean last = epoch == epochs;
                Evaluation tr = Evaluation.run(model, train, batch, false);
                te = Evaluation.run(model, test, batch, last);
                double evalS = (System.nanoTime() - tEval) / 1e9;
                evalTotal += evalS;
                double trainS = (tEval - tEpoch - probeNanos) / 1e9;
                probeTotal += probeNanos / 1e9;
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("epoch", epoch);
                e.put("train_acc", tr.accuracy());
                e.put("test_acc", te.accuracy());
                e.put("train_loss", tr.loss);
                e.put("test_loss", te.loss);
                e.put("train_time_s", trainS);
                e.put("eval_time_s", evalS);
                epochList.add(e);
                if (!o.has("quiet")) {
                    System.err.printf("epoch %d/%d  train acc %.4f loss %.4f  test acc %.4f loss %.4f  "
                            + "(%.2fs train, %.2fs eval)%n", epoch, epochs, tr.accuracy(), tr.loss,
                            te.accuracy(), te.loss, trainS, evalS);
                }
                if (!last) {
                    Json.writeFile(runJson, info);
                }
            }
            double total = (System.nanoTime() - tStart) / 1e9;
            Weights.save(model, out.resolve("final.safetensors"), reference);
            info.put("status", "complete");
            info.put("training_time_s", total - evalTotal - probeTotal);
            info.put("eval_time_s", evalTotal);
            info.put("total_time_s", total);
            info.put("test_accuracy", te.accuracy());
            info.put("test_correct", te.correct);
            info.put("f1_macro", te.f1);
            info.put("auc_macro", te.auc);
            if (subactivities) {
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("load", sub[0]);
                s.put("forward", sub[1]);
                s.put("backward", sub[2]);
                info.put("subactivities_s", s);
            }
            Json.writeFile(runJson, info);
            System.out.printf("%s: test accuracy %.4f (%d/%d), macro F1 %.4f, AUC %.4f, training %.2fs, "
                    + "eval %.2fs -> %s%n", name, te.accuracy(), te.correct, test.n, te.f1, te.auc,
                    total - evalTotal - probeTotal, evalTotal, runJson);
        }
    }

    private static void copy(Path from, Path to) {
        try {
            Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new CliError("cannot copy " + from + " to " + to + ": " + e.getMessage(), e);
        }
    }
}
