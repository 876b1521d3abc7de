package crossbind.tfjava;

import crossbind.common.CliError;
import java.util.List;

/** The study protocol (docs/study-protocol.md sections 2, 2a and 3): models, seeds, data, optimizers. */
final class Protocol {
    static final long[] SEEDS = {287426343L, 1850616268L, 2068338201L, 1202616822L, 868822724L};
    static final List<String> MODELS = List.of("gru", "gru-rb", "lenet1", "lenet5", "lstm", "vgg16");
    static final String DEFAULT_MNIST = "/usr/share/datasets/fashion-mnist";
    static final int HIDDEN = 512;
    static final int SEQ_LEN = 300;
    static final int VOCAB = 10000;
    static final int EMBED = 300;

    private Protocol() {}

    static void checkModel(String name) {
        if (!MODELS.contains(name)) {
            throw new CliError("unknown model " + name + " (known: " + String.join(", ", MODELS) + ")");
        }
    }

    /** "mnist", "cifar" or "imdb". */
    static String dataFormat(String model) {
        switch (model) {
            case "lenet1":
            case "lenet5":
                return "mnist";
            case "vgg16":
                return "cifar";
            default:
                return "imdb";
        }
    }

    static String defaultDir(String model) {
        switch (dataFormat(model)) {
            case "mnist":
                return DEFAULT_MNIST;
            case "cifar":
                return "data/cifar-stand-in";
            default:
                return "data/imdb-prepared";
        }
    }

    /** The IMDb models output one sigmoid probability per sample. */
    static boolean binary(String model) {
        return "imdb".equals(dataFormat(model));
    }

    static int classes(String model) {
        return binary(model) ? 1 : 10;
    }

    /** One sample's shape in TensorFlow's layout (NHWC images without the batch axis). */
    static long[] inputShape(String model) {
        switch (dataFormat(model)) {
            case "mnist":
                return new long[] {28, 28, 1};
            case "cifar":
                return new long[] {32, 32, 3};
            default:
                return new long[] {SEQ_LEN};
        }
    }

    static String optimizer(String model) {
        return binary(model) ? "adam" : "sgd";
    }

    static double learningRate(String model) {
        switch (model) {
            case "lstm":
                return 8e-5;
            case "gru":
            case "gru-rb":
                return 3e-4;
            default:
                return 0.05;
        }
    }

    static int batch(String model) {
        return binary(model) ? 256 : 128;
    }

    static int epochs(String model) {
        return binary(model) ? 30 : 200;
    }
}
