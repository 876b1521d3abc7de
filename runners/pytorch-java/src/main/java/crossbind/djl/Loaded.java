package crossbind.djl;

import crossbind.common.CliError;
import ai.djl.Device;
import ai.djl.MalformedModelException;
import ai.djl.Model;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.ZipFile;

/** A model loaded for evaluation: safetensors into DJL blocks (parameters mode), a TorchScript
 * file through the PyTorch engine (serialization mode). */
final class Loaded implements AutoCloseable {
    final Model model;
    final String loadMode;
    final String format;

    private Loaded(Model model, String loadMode, String format) {
        this.model = model;
        this.loadMode = loadMode;
        this.format = format;
    }

    @Override
    public void close() {
        model.close();
    }

    static Loaded load(String name, Path path, float dropout) {
        String kind = fileKind(path);
        switch (kind) {
            case "safetensors": {
                Net net = Models.build(name, dropout);
                Model m = Model.newInstance(name, Device.cpu(), "PyTorch");
                m.setBlock(net.block);
                net.block.initialize(m.getNDManager(), DataType.FLOAT32, new Shape(1).addAll(Protocol.inputShape(name)));
                try {
                    Weights.load(net, path, m.getNDManager());
                } catch (CliError e) {
                    m.close();
                    throw e;
                }
                return new Loaded(m, "parameters", "safetensors");
            }
            case "torchscript": {
                Model m = Model.newInstance(name, Device.cpu(), "PyTorch");
                try {
                    m.load(path);
                } catch (IOException | MalformedModelException | RuntimeException e) {
                    m.close();
                    throw new CliError(path + ": cannot load TorchScript: " + firstLine(e.getMessage()), e);
                }
                return new Loaded(m, "serialization", "torchscript");
            }
            case "pt":
                throw new CliError(path + ": a PyTorch state-dict pickle (.pt): DJL's PyTorch engine loads "
                        + "TorchScript, not torch.save pickles; give the .safetensors or .ts file");
            case "onnx":
                throw new CliError(path + ": ONNX models are not supported by this binding (DJL's PyTorch engine "
                        + "runs TorchScript)");
            default:
                throw new CliError(path + ": unrecognised weights format");
        }
    }

    /** The weights format by content: safetensors, pt (state dict), torchscript, onnx. */
    static String fileKind(Path path) {
        byte[] head = new byte[9];
        int got;
        try (InputStream in = Files.newInputStream(path)) {
            got = in.readNBytes(head, 0, 9);
        } catch (IOException e) {
            throw new CliError("cannot open weights " + path + ": " + e.getMessage(), e);
        }
        if (got >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4) {
            try (ZipFile zip = new ZipFile(path.toFile())) {
                if (zip.stream().anyMatch(e -> e.getName().endsWith("/constants.pkl"))) {
                    return "torchscript";
                }
            } catch (IOException e) {
                throw new CliError(path + ": corrupt zip archive: " + e.getMessage(), e);
            }
            return "pt";
        }
        if (got == 9 && head[8] == '{' && head[5] == 0 && head[6] == 0 && head[7] == 0) {
            return "safetensors";
        }
        if (got >= 2 && head[0] == 0x08) {
            return "onnx";
        }
        return "unknown";
    }

    static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
