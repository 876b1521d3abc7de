package crossbind.tfjava;

import crossbind.common.CliError;
import crossbind.common.Safetensors;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** Canonical safetensors in and out of a TfModel's variables through KerasWeights. */
final class Weights {
    private Weights() {}

    /** Reads canonical weights; a missing, unreadable or malformed file is refused in one line. */
    static Map<String, Safetensors.Tensor> read(Path path) {
        byte[] head = new byte[9];
        int got;
        try (InputStream in = Files.newInputStream(path)) {
            got = in.readNBytes(head, 0, 9);
        } catch (IOException e) {
            throw new CliError("cannot open weights " + path + ": " + e.getMessage(), e);
        }
        if (got < 9 || head[8] != '{' || head[5] != 0 || head[6] != 0 || head[7] != 0) {
            throw new CliError(path + ": unrecognised weights format (this binding loads safetensors)");
        }
        try {
            return Safetensors.read(path);
        } catch (IOException e) {
            throw new CliError("cannot read weights " + e.getMessage(), e);
        }
    }

    static void load(TfModel model, Map<String, Safetensors.Tensor> tensors) {
        model.assign(KerasWeights.toKeras(model.name, tensors));
    }

    static void save(TfModel model, Path path, Map<String, Safetensors.Tensor> reference) {
        LinkedHashMap<String, Safetensors.Tensor> t = KerasWeights.toCanonical(model.name, model.values(), reference);
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put("model", model.name);
        meta.put("format", "crossbind-weights/1");
        meta.put("framework", "tensorflow");
        try {
            Safetensors.write(path, t, meta);
        } catch (IOException e) {
            throw new CliError("cannot write " + path + ": " + e.getMessage(), e);
        }
    }
}
