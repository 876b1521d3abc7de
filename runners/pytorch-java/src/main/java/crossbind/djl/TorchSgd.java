package crossbind.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.training.optimizer.Optimizer;
import java.nio.FloatBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** torch.optim.SGD's update as a DJL Optimizer, to the bit: per element
 * g += wd * w; buf = g (first step), buf = momentum * buf + g; w += (-lr) * buf, each
 * multiply-add fused as libtorch's vectorised add(self, other, alpha) does it. DJL's own Sgd has
 * the same semantics for a fixed rate but rounds differently (w - round(lr * g)), and its momentum
 * buffer holds lr * g: weights then differ from PyTorch's by an ulp after the first step.
 * The update runs on the tensors' own memory (DJL's direct ByteBuffer views) and zeroes the
 * parameter's gradient, as DJL's optimizers do. */
final class TorchSgd extends Optimizer {
    private final float lr;
    private final float momentum;
    private final float weightDecay;
    private final Map<String, float[]> buffers = new ConcurrentHashMap<>();

    TorchSgd(float lr, float momentum, float weightDecay) {
        super(new Builder());
        this.lr = lr;
        this.momentum = momentum;
        this.weightDecay = weightDecay;
    }

    @Override
    public void update(String parameterId, NDArray weight, NDArray grad) {
        FloatBuffer w = weight.toByteBuffer(true).asFloatBuffer();
        // DJL hands the optimizer a copy of the gradient; the parameter's own one is zeroed here.
        NDArray own = weight.getGradient();
        FloatBuffer g = own.toByteBuffer(true).asFloatBuffer();
        int n = w.limit();
        float alpha = -lr;
        float[] buf = null;
        boolean first = false;
        if (momentum != 0f) {
            buf = buffers.get(parameterId);
            if (buf == null) {
                buf = new float[n];
                buffers.put(parameterId, buf);
                first = true;
            }
        }
        for (int i = 0; i < n; i++) {
            float wi = w.get(i);
            float gi = g.get(i);
            if (weightDecay != 0f) {
                gi = Math.fma(wi, weightDecay, gi);
            }
            if (buf != null) {
                gi = first ? gi : buf[i] * momentum + gi; // mul_, then add_ with alpha 1 (exact)
                buf[i] = gi;
            }
            w.put(i, Math.fma(gi, alpha, wi));
            g.put(i, 0f);
        }
        own.close();
    }

    private static final class Builder extends OptimizerBuilder<Builder> {
        @Override
        protected Builder self() {
            return this;
        }
    }
}
