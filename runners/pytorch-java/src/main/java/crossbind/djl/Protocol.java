package crossbind.djl;

import crossbind.common.CliError;
import ai.djl.ndarray.types.Shape;
import java.util.List;

/** The study protocol (docs/study-protocol.md sections 2-3): models, seeds, data, optimizers. */
final class Protocol {
    static final int[] SEEDS = {287426343, 1850616268, 2068338201, 1202616822, 868822724};
    /** gru-rb (the reset-before GRU) is left out: PyTorch's GRU, and so DJL's, has none. */
    static final List<String> MODELS = List.of("gru", "lenet1", "lenet5", "lstm", "vgg16");
    static final String DEFAULT_MNIST = "/usr/share/datasets/fashion-mnist";

    private Protocol() {}

    static void checkModel(String name) {
        if ("gru-rb".equals(name)) {
            throw new CliError("model gru-rb is not supported by this binding: PyTorch's GRU (and so DJL's) "
                    + "applies the reset gate after the recurrent product; there is no reset-before GRU");
        }
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

    /** One sample's shape (without the batch axis). */
    static Shape inputShape(String model) {
        switch (dataFormat(model)) {
            case "mnist":
                return new Shape(1, 28, 28);
            case "cifar":
                return new Shape(3, 32, 32);
            default:
                return new Shape(300);
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
