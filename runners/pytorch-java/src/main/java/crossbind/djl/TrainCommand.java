package crossbind.djl;

import crossbind.common.CliError;
import crossbind.common.DataSplit;
import crossbind.common.Imdb;
import crossbind.common.Json;
import crossbind.common.Options;
import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.dataset.Batch;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.translate.TranslateException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** train MODEL: the protocol's training run (file order, evaluation of both full sets after
 * every epoch excluded from the training time), run.json and the final weights. */
final class TrainCommand {
    static final Set<String> VALUED = Set.of("run", "seed", "epochs", "threads", "data", "out", "limit-train",
            "limit-test", "momentum", "lr", "weight-decay", "init", "batch", "optimizer", "device", "optimizer-impl");
    static final Set<String> FLAGS = Set.of("quiet", "subactivities", "no-dropout", "shuffle");

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
        int seed = o.has("seed") ? o.integer("seed", 0, 0) : Protocol.SEEDS[run - 1];
        String optimizer = o.str("optimizer", Protocol.optimizer(name));
        if (!optimizer.equals("sgd") && !optimizer.equals("adam")) {
            throw new CliError("--optimizer must be sgd or adam");
        }
        // Left out: the protocol's optimizer and rate; a named optimizer's default rate otherwise.
        double lr = o.number("lr", o.has("optimizer") ? (optimizer.equals("adam") ? 1e-3 : 0.05)
                : Protocol.learningRate(name));
        double momentum = o.number("momentum", 0);
        double weightDecay = o.number("weight-decay", 0);
        int batch = o.integer("batch", Protocol.batch(name), 1);
        int epochs = o.integer("epochs", Protocol.epochs(name), 1);
        int threads = o.integer("threads", Runtime.getRuntime().availableProcessors(), 1);
        int limitTrain = o.integer("limit-train", 0, 0);
        int limitTest = o.integer("limit-test", 0, 0);
        boolean binary = Protocol.binary(name);
        boolean subactivities = o.has("subactivities");
        boolean noDropout = o.has("no-dropout");
        String dataDir = o.str("data", Protocol.defaultDir(name));
        Path out = Paths.get(o.str("out", "runs/" + name + "-" + seed + "-pytorch-java"));
        Path init = o.has("init") ? Paths.get(o.str("init", null)) : null;
        if (init != null && !Files.isReadable(init)) {
            throw new CliError("cannot open weights " + init);
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
        // false: images stay channel-major (C, H, W), PyTorch's layout
        DataSplit train = DataSplit.load(Protocol.dataFormat(name), dataDir, true, limitTrain, false);
        DataSplit test = DataSplit.load(Protocol.dataFormat(name), dataDir, false, limitTest, false);

        Engine engine = Torch.start(threads);
        engine.setRandomSeed(seed);
        Net net = Models.build(name, noDropout ? 0f : 0.5f);
        Loss loss = binary ? new BinaryCrossEntropy() : Loss.softmaxCrossEntropyLoss();
        Optimizer opt = Optimizers.of(optimizer, o.str("optimizer-impl", "torch"), lr, momentum, weightDecay);
        Map<String, Object> info = new LinkedHashMap<>();
        try (Model model = Model.newInstance(name, Device.cpu(), "PyTorch")) {
            model.setBlock(net.block);
            DefaultTrainingConfig config = new DefaultTrainingConfig(loss).optOptimizer(opt)
                    .optDevices(new Device[] {Device.cpu()});
            try (Trainer trainer = model.newTrainer(config)) {
                trainer.initialize(new Shape(batch).addAll(Protocol.inputShape(name)));
                if (init != null) {
                    Weights.load(net, init, model.getNDManager());
                }
                Weights.save(net, out.resolve("init.safetensors"), 0);
                if (binary) { // the vocabulary the token ids refer to travels with the run
                    copy(Imdb.vocab(dataDir), out.resolve("vocab.txt"));
                }
                NDManager data = model.getNDManager().newSubManager();
                ArrayDataset trainSet = Datasets.of(data, train, binary, batch, o.has("shuffle"));
                ArrayDataset trainEval = Datasets.of(data, train, binary, batch, false);
                ArrayDataset testSet = Datasets.of(data, test, binary, batch, false);

                info.put("format", "crossbind-run/1");
                info.put("status", "incomplete");
                info.put("binding", "pytorch-java");
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
                info.put("shuffle", o.has("shuffle"));
                info.put("dropout", !noDropout);
                info.put("init", init == null ? null : init.toString());
                info.put("threads", threads);
                info.put("versions", Main.versions());
                info.put("machine", System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                        + System.getProperty("os.arch"));
                info.put("library", "libtorch " + Torch.libtorchVersion() + " at " + Torch.libtorchPath());
                info.put("flush_denormal", Torch.denormalsFlushed());
                List<Map<String, Object>> epochList = new ArrayList<>();
                info.put("epochs", epochList);

                double[] sub = new double[3];
                double evalTotal = 0;
                long steps = 0;
                Evaluation te = null;
                long tStart = System.nanoTime();
                for (int epoch = 1; epoch <= epochs; epoch++) {
                    long tEpoch = System.nanoTime();
                    Iterator<Batch> it = trainer.iterateDataset(trainSet).iterator();
                    while (true) {
                        long t0 = System.nanoTime();
                        if (!it.hasNext()) {
                            break;
                        }
                        try (Batch b = it.next()) {
                            long t1 = System.nanoTime();
                            long t2;
                            try (GradientCollector collector = trainer.newGradientCollector()) {
                                NDList pred = trainer.forward(b.getData(), b.getLabels());
                                NDArray l = trainer.getLoss().evaluate(b.getLabels(), pred);
                                t2 = System.nanoTime();
                                collector.backward(l);
                            }
                            trainer.step();
                            steps++;
                            if (subactivities) {
                                long t3 = System.nanoTime();
                                sub[0] += (t1 - t0) / 1e9;
                                sub[1] += (t2 - t1) / 1e9;
                                sub[2] += (t3 - t2) / 1e9;
                            }
                        }
                    }
                    long tEval = System.nanoTime();
                    boolean last = epoch == epochs;
                    Evaluation tr = Evaluation.run(trainer::evaluate, trainEval, data, train, binary, false);
                    te = Evaluation.run(trainer::evaluate, testSet, data, test, binary, last);
                    double evalS = (System.nanoTime() - tEval) / 1e9;
                    evalTotal += evalS;
                    Map<String, Object> e = new LinkedHashMap<>();
                    e.put("epoch", epoch);
                    e.put("train_acc", tr.accuracy());
                    e.put("test_acc", te.accuracy());
                    e.put("train_loss", tr.loss);
                    e.put("test_loss", te.loss);
                    e.put("train_time_s", (tEval - tEpoch) / 1e9);
                    e.put("eval_time_s", evalS);
                    epochList.add(e);
                    if (!o.has("quiet")) {
                        System.err.printf("epoch %d/%d  train acc %.4f loss %.4f  test acc %.4f loss %.4f  "
                                + "(%.2fs train, %.2fs eval)%n", epoch, epochs, tr.accuracy(), tr.loss,
                                te.accuracy(), te.loss, (tEval - tEpoch) / 1e9, evalS);
                    }
                    if (!last) {
                        Json.writeFile(runJson, info);
                    }
                }
                double total = (System.nanoTime() - tStart) / 1e9;
                Weights.save(net, out.resolve("final.safetensors"), steps);
                try {
                    model.save(out, "final"); // DJL's own format: final-0000.params
                } catch (IOException e) {
                    throw new CliError("cannot save " + out + "/final-0000.params: " + e.getMessage(), e);
                }
                info.put("status", "complete");
                info.put("training_time_s", total - evalTotal);
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
                        total - evalTotal, evalTotal, runJson);
            } catch (IOException | TranslateException e) {
                throw new CliError("training failed: " + e.getMessage(), e);
            }
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
