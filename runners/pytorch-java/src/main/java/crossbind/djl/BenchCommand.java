package crossbind.djl;

import crossbind.common.CliError;
import crossbind.common.Json;
import crossbind.common.Options;
import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.translate.NoopTranslator;
import ai.djl.translate.TranslateException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The worker of `crossbind bench` (runners/README.md, "Benchmark worker"): one measurement of
 * one model, printed as one JSON line. Batches are made outside the timed regions. */
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
        if (!Files.isReadable(weights)) {
            throw new CliError("cannot open weights " + weights);
        }
        Torch.start(threads);
        List<Double> times;
        if (kind.equals("train")) {
            times = train(name, weights, batch, samples, repeat);
        } else {
            try (Loaded loaded = Loaded.load(name, weights, 0.5f);
                    NDManager manager = loaded.model.getNDManager().newSubManager();
                    Predictor<NDList, NDList> p = loaded.model.newPredictor(new NoopTranslator())) {
                if (kind.equals("startup")) {
                    NDList x = Synthetic.batch(manager, name, 0, 1);
                    int label = predict(p, name, new NDList(x.get(0)))[0];
                    double now = System.nanoTime() / 1e9; // CLOCK_MONOTONIC on Linux
                    Map<String, Object> res = new LinkedHashMap<>();
                    res.put("label", label);
                    res.put("monotonic_s", now);
                    res.put("vmhwm_kib", vmhwmKib());
                    System.out.println(Json.of(res));
                    return;
                }
                times = kind.equals("infer") ? infer(p, manager, name, batch, samples, repeat)
                        : latency(p, manager, name, samples);
            } catch (TranslateException e) {
                throw new CliError("bench: prediction failed: " + e.getMessage(), e);
            }
        }
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("times_s", times);
        res.put("torch", Torch.libtorchVersion());
        res.put("djl", Torch.djlVersion());
        res.put("torch_threads", Torch.threads());
        res.put("vmhwm_kib", vmhwmKib());
        System.out.println(Json.of(res));
    }

    /** Predicted labels: argmax, or p >= 0.5 for the binary models. */
    static int[] predict(Predictor<NDList, NDList> p, String name, NDList x) throws TranslateException {
        NDList out = p.predict(x);
        NDArray o = out.head();
        NDArray labels = Protocol.binary(name) ? o.reshape(-1).gte(0.5f).toType(ai.djl.ndarray.types.DataType.INT32, false)
                : o.argMax(1).toType(ai.djl.ndarray.types.DataType.INT32, false);
        int[] v = labels.toIntArray();
        out.close();
        labels.close();
        return v;
    }

    private static List<Double> infer(Predictor<NDList, NDList> p, NDManager manager, String name, int batch,
            int samples, int repeat) throws TranslateException {
        List<Double> times = new ArrayList<>();
        for (int r = 0; r <= repeat; r++) {
            double t = 0;
            for (int s0 = 0; s0 < samples; s0 += batch) {
                try (NDManager m = manager.newSubManager()) {
                    NDList x = Synthetic.batch(m, name, s0, Math.min(batch, samples - s0));
                    long t0 = System.nanoTime();
                    predict(p, name, new NDList(x.get(0)));
                    t += (System.nanoTime() - t0) / 1e9;
                }
            }
            if (r > 0) {
                times.add(t);
            }
        }
        return times;
    }

    private static List<Double> latency(Predictor<NDList, NDList> p, NDManager manager, String name, int samples)
            throws TranslateException {
        List<Double> times = new ArrayList<>();
        for (int s = 0; s < samples + 5; s++) {
            try (NDManager m = manager.newSubManager()) {
                NDList x = Synthetic.batch(m, name, s, 1);
                long t0 = System.nanoTime();
                predict(p, name, new NDList(x.get(0)));
                if (s >= 5) {
                    times.add((System.nanoTime() - t0) / 1e9);
                }
            }
        }
        return times;
    }

    /** Training passes over `samples` samples in batches (one pass of one batch = one step), after
     * one warm-up step; the protocol's optimizer and rate, dropout on. */
    private static List<Double> train(String name, Path weights, int batch, int samples, int repeat) {
        if (!Loaded.fileKind(weights).equals("safetensors")) {
            throw new CliError("bench: training starts from a .safetensors file (DJL trains its own blocks)");
        }
        boolean binary = Protocol.binary(name);
        Net net = Models.build(name, 0.5f);
        Loss loss = binary ? new BinaryCrossEntropy() : Loss.softmaxCrossEntropyLoss();
        Optimizer opt = Optimizers.of(Protocol.optimizer(name), "torch", Protocol.learningRate(name), 0, 0);
        Engine.getInstance().setRandomSeed(Protocol.SEEDS[0]);
        try (Model model = Model.newInstance(name, Device.cpu(), "PyTorch")) {
            model.setBlock(net.block);
            try (Trainer trainer = model.newTrainer(new DefaultTrainingConfig(loss).optOptimizer(opt)
                    .optDevices(new Device[] {Device.cpu()}))) {
                trainer.initialize(new Shape(batch).addAll(Protocol.inputShape(name)));
                Weights.load(net, weights, model.getNDManager());
                NDManager manager = trainer.getManager();
                step(trainer, manager, name, 0, batch);
                List<Double> times = new ArrayList<>();
                for (int r = 0; r < repeat; r++) {
                    double t = 0;
                    for (int s0 = 0; s0 < samples; s0 += batch) {
                        t += step(trainer, manager, name, s0, Math.min(batch, samples - s0));
                    }
                    times.add(t);
                }
                return times;
            }
        }
    }

    private static double step(Trainer trainer, NDManager manager, String name, long s0, int n) {
        try (NDManager m = manager.newSubManager()) {
            NDList xy = Synthetic.batch(m, name, s0, n);
            NDList x = new NDList(xy.get(0));
            NDList y = new NDList(xy.get(1));
            long t0 = System.nanoTime();
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDList pred = trainer.forward(x, y);
                collector.backward(trainer.getLoss().evaluate(y, pred));
            }
            trainer.step();
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
