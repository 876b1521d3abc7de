package crossbind.djl;

import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A model as DJL blocks, with the canonical PyTorch state-dict name of each DJL parameter
 * (in state-dict order) so that weights travel between bindings. */
final class Net {
    final String model;
    final Block block;
    /** canonical name -> DJL parameter; DJL's Conv2d, Linear, BatchNorm, LSTM and GRU keep
     * PyTorch's shapes and gate orders, so values map one to one. */
    final Map<String, Parameter> params = new LinkedHashMap<>();
    /** BatchNorm's num_batches_tracked entries: DJL keeps no such counter (its momentum is fixed). */
    final List<String> batchCounters = new ArrayList<>();

    Net(String model, Block block) {
        this.model = model;
        this.block = block;
    }

    /** Records the canonical names of a block's own parameters, given as pairs DJL-name, canonical. */
    void map(String prefix, Block b, String... pairs) {
        for (int i = 0; i < pairs.length; i += 2) {
            Parameter p = b.getParameters().get(pairs[i]);
            if (p == null) {
                throw new IllegalStateException("block " + b + " has no parameter " + pairs[i]);
            }
            params.put(prefix + pairs[i + 1], p);
        }
    }
}
