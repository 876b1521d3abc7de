package crossbind.djl;

import crossbind.common.CliError;
import ai.djl.modality.nlp.DefaultVocabulary;
import ai.djl.modality.nlp.embedding.TrainableWordEmbedding;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Block;
import ai.djl.nn.Blocks;
import ai.djl.nn.LambdaBlock;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.BatchNorm;
import ai.djl.nn.norm.Dropout;
import ai.djl.nn.pooling.Pool;
import ai.djl.nn.recurrent.GRU;
import ai.djl.nn.recurrent.LSTM;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/** The study's models (protocol section 2) as DJL blocks. */
final class Models {
    private static final int[] VGG16_PLAN = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};

    private Models() {}

    static Net build(String model, float dropout) {
        switch (model) {
            case "lenet1":
                return lenet1();
            case "lenet5":
                return lenet5();
            case "vgg16":
                return vgg16(dropout);
            case "lstm":
            case "gru":
                return recurrent(model, dropout);
            default:
                throw new CliError("unknown model " + model);
        }
    }

    private static Conv2d conv(int filters, int kernel, int padding, boolean bias) {
        return Conv2d.builder().setFilters(filters).setKernelShape(new Shape(kernel, kernel))
                .optPadding(new Shape(padding, padding)).optBias(bias).build();
    }

    private static Block maxPool() {
        return Pool.maxPool2dBlock(new Shape(2, 2), new Shape(2, 2));
    }

    private static Linear linear(int units) {
        return Linear.builder().setUnits(units).build();
    }

    private static Net lenet1() {
        Conv2d c1 = conv(4, 5, 2, true);
        Conv2d c2 = conv(12, 5, 0, true);
        Linear fc = linear(10);
        SequentialBlock b = new SequentialBlock()
                .add(c1).add(Activation.tanhBlock()).add(maxPool())
                .add(c2).add(Activation.tanhBlock()).add(maxPool())
                .add(Blocks.batchFlattenBlock()).add(fc);
        Net net = new Net("lenet1", b);
        net.map("conv1.", c1, "weight", "weight", "bias", "bias");
        net.map("conv2.", c2, "weight", "weight", "bias", "bias");
        net.map("fc.", fc, "weight", "weight", "bias", "bias");
        return net;
    }

    private static Net lenet5() {
        Conv2d c1 = conv(6, 5, 2, true);
        Conv2d c2 = conv(16, 5, 0, true);
        Conv2d c3 = conv(120, 5, 0, true);
        Linear fc1 = linear(84);
        Linear fc2 = linear(10);
        SequentialBlock b = new SequentialBlock()
                .add(c1).add(Activation.tanhBlock()).add(maxPool())
                .add(c2).add(Activation.tanhBlock()).add(maxPool())
                .add(c3).add(Activation.tanhBlock())
                .add(Blocks.batchFlattenBlock()).add(fc1).add(Activation.tanhBlock()).add(fc2);
        Net net = new Net("lenet5", b);
        net.map("conv1.", c1, "weight", "weight", "bias", "bias");
        net.map("conv2.", c2, "weight", "weight", "bias", "bias");
        net.map("conv3.", c3, "weight", "weight", "bias", "bias");
        net.map("fc1.", fc1, "weight", "weight", "bias", "bias");
        net.map("fc2.", fc2, "weight", "weight", "bias", "bias");
        return net;
    }

    /** 3x3 convolutions without bias, each with BatchNorm (PyTorch's momentum 0.1 is DJL's 0.9,
     * eps 1e-5) and ReLU; dense 512-4096-4096-10 with ReLU and dropout. Canonical names follow
     * PyTorch's features / classifier Sequential indices. */
    private static Net vgg16(float dropout) {
        SequentialBlock features = new SequentialBlock();
        SequentialBlock classifier = new SequentialBlock();
        SequentialBlock b = new SequentialBlock().add(features).add(Blocks.batchFlattenBlock()).add(classifier);
        Net net = new Net("vgg16", b);
        int index = 0;
        for (int v : VGG16_PLAN) {
            if (v == 0) {
                features.add(maxPool());
                index += 1;
                continue;
            }
            Conv2d c = conv(v, 3, 1, false);
            BatchNorm bn = BatchNorm.builder().optMomentum(0.9f).optEpsilon(1e-5f).build();
            features.add(c).add(bn).add(Activation.reluBlock());
            net.map("features." + index + ".", c, "weight", "weight");
            net.map("features." + (index + 1) + ".", bn, "gamma", "weight", "beta", "bias",
                    "runningMean", "running_mean", "runningVar", "running_var");
            net.batchCounters.add("features." + (index + 1) + ".num_batches_tracked");
            index += 3;
        }
        Linear fc0 = linear(4096);
        Linear fc3 = linear(4096);
        Linear fc6 = linear(10);
        classifier.add(fc0).add(Activation.reluBlock()).add(Dropout.builder().optRate(dropout).build())
                .add(fc3).add(Activation.reluBlock()).add(Dropout.builder().optRate(dropout).build())
                .add(fc6);
        net.map("classifier.0.", fc0, "weight", "weight", "bias", "bias");
        net.map("classifier.3.", fc3, "weight", "weight", "bias", "bias");
        net.map("classifier.6.", fc6, "weight", "weight", "bias", "bias");
        return net;
    }

    /** Embedding 10,000 x 300, one recurrent layer (hidden 512, batch first), the last step,
     * dropout, dense 512 -> 1, sigmoid. DJL's LSTM and GRU call libtorch's lstm/gru with their
     * parameters in PyTorch's order (w_ih, w_hh, b_ih, b_hh) and gate layout. */
    private static Net recurrent(String model, float dropout) {
        List<String> ids = IntStream.range(0, 10000).mapToObj(Integer::toString).collect(Collectors.toList());
        TrainableWordEmbedding emb = new TrainableWordEmbedding(new DefaultVocabulary(ids), 300);
        Block rnn = "lstm".equals(model)
                ? LSTM.builder().setStateSize(512).setNumLayers(1).optBatchFirst(true).build()
                : GRU.builder().setStateSize(512).setNumLayers(1).optBatchFirst(true).build();
        Linear fc = linear(1);
        SequentialBlock b = new SequentialBlock()
                .add(emb).add(rnn)
                .add(new LambdaBlock(x -> new NDList(x.head().get(":, -1, :")), "lastStep"))
                .add(Dropout.builder().optRate(dropout).build())
                .add(fc).add(Activation.sigmoidBlock());
        Net net = new Net(model, b);
        net.map("", emb, "embedding", "embedding.weight");
        net.map("rnn.", rnn, "l_0_i2h_WEIGHT", "weight_ih_l0", "l_0_h2h_WEIGHT", "weight_hh_l0",
                "l_0_i2h_BIAS", "bias_ih_l0", "l_0_h2h_BIAS", "bias_hh_l0");
        net.map("fc.", fc, "weight", "weight", "bias", "bias");
        return net;
    }
}
