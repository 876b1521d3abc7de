package crossbind.djl;

import crossbind.common.CliError;
import crossbind.common.Safetensors;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Weights in canonical PyTorch state-dict names (safetensors) onto a Net's DJL parameters and back. */
final class Weights {
    private Weights() {}

    /** Sets exactly the file's values into the (initialised) parameters, in place. */
    static void load(Net net, Path path, NDManager manager) {
        Map<String, Safetensors.Tensor> tensors;
        try {
            tensors = Safetensors.read(path);
        } catch (IOException e) {
            throw new CliError("cannot read weights " + path + ": " + e.getMessage(), e);
        }
        List<String> missing = new ArrayList<>();
        for (String name : net.params.keySet()) {
            if (!tensors.containsKey(name)) {
                missing.add(name);
            }
        }
        if (!missing.isEmpty()) {
            throw new CliError(path + ": parameters missing from the file: " + String.join(", ", missing)
                    + " (is it a " + net.model + "?)");
        }
        for (Map.Entry<String, Parameter> e : net.params.entrySet()) {
            Safetensors.Tensor t = tensors.get(e.getKey());
            NDArray array = e.getValue().getArray();
            if (!Arrays.equals(t.shape, array.getShape().getShape())) {
                throw new CliError(path + ": parameter " + e.getKey() + " has shape " + Arrays.toString(t.shape)
                        + ", the model needs " + Arrays.toString(array.getShape().getShape()));
            }
            if (t.floats == null) {
                throw new CliError(path + ": parameter " + e.getKey() + " is not floating point");
            }
            try (NDArray value = manager.create(t.floats, new Shape(t.shape))) {
                array.set(new NDIndex(":"), value); // a copy into the parameter's own storage
            }
        }
    }

    /** The parameters under their canonical names, in PyTorch's state-dict order. */
    static Map<String, Safetensors.Tensor> export(Net net, long batchesTracked) {
        Map<String, Safetensors.Tensor> out = new LinkedHashMap<>();
        for (Map.Entry<String, Parameter> e : net.params.entrySet()) {
            NDArray a = e.getValue().getArray();
            out.put(e.getKey(), new Safetensors.Tensor(a.getShape().getShape(), a.toFloatArray()));
            String counter = e.getKey().replaceAll("running_var$", "num_batches_tracked");
            if (net.batchCounters.contains(counter)) {
                out.put(counter, new Safetensors.Tensor(new long[0], new long[] {batchesTracked}));
            }
        }
        return out;
    }

    static void save(Net net, Path path, long batchesTracked) {
        try {
            Safetensors.write(path, export(net, batchesTracked),
                    Map.of("model", net.model, "format", "crossbind-weights/1"));
        } catch (IOException e) {
            throw new CliError("cannot write " + path + ": " + e.getMessage(), e);
        }
    }
}
