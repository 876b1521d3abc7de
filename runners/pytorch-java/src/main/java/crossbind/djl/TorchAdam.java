package crossbind.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.training.optimizer.Optimizer;
import java.nio.FloatBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** torch.optim.Adam's update (betas 0.9, 0.999, eps 1e-8, no amsgrad) as a DJL Optimizer:
 * m = lerp(m, g, 1 - beta1); v = v * beta2 + (1 - beta2) * g * g;
 * w += -(lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps),
 * with libtorch's roundings as far as they are known. DJL's own Adam adds eps before the bias
 * correction (w -= lr sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)), a slightly
 * different rule. Runs on the tensors' own memory and zeroes the gradient. */
final class TorchAdam extends Optimizer {
    private static final double BETA1 = 0.9;
    private static final double BETA2 = 0.999;
    private static final double EPS = 1e-8;

    private final double lr;
    private final float weightDecay;
    private final Map<String, float[][]> state = new ConcurrentHashMap<>();
    private final Map<String, Integer> steps = new ConcurrentHashMap<>();

    TorchAdam(double lr, float weightDecay) {
        super(new Builder());
        this.lr = lr;
        this.weightDecay = weightDecay;
    }

    @Override
    public void update(String parameterId, NDArray weight, NDArray grad) {
        FloatBuffer w = weight.toByteBuffer(true).asFloatBuffer();
        // DJL hands the optimizer a copy of the gradient; the parameter's own one is zeroed here.
        NDArray own = weight.getGradient();
        FloatBuffer g = own.toByteBuffer(true).asFloatBuffer();
        int n = w.limit();
        float[][] mv = state.computeIfAbsent(parameterId, k -> new float[][] {new float[n], new float[n]});
        float[] m = mv[0];
        float[] v = mv[1];
        int t = steps.merge(parameterId, 1, Integer::sum);
        double bc1 = 1 - Math.pow(BETA1, t);
        double bc2 = 1 - Math.pow(BETA2, t);
        float stepSize = (float) -(lr / bc1);
        float bc2Sqrt = (float) Math.sqrt(bc2);
        float w1 = (float) (1 - BETA1);
        float b2 = (float) BETA2;
        float c2 = (float) (1 - BETA2);
        float eps = (float) EPS;
        for (int i = 0; i < n; i++) {
            float wi = w.get(i);
            float gi = g.get(i);
            if (weightDecay != 0f) {
                gi = Math.fma(wi, weightDecay, gi);
            }
            m[i] = Math.fma(w1, gi - m[i], m[i]);             // exp_avg.lerp_(grad, 1 - beta1)
            v[i] = Math.fma(c2 * gi, gi, v[i] * b2);          // exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2)
            float denom = (float) Math.sqrt(v[i]) / bc2Sqrt + eps;
            w.put(i, wi + stepSize * m[i] / denom);             // param.addcdiv_(exp_avg, denom, -step_size)
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
