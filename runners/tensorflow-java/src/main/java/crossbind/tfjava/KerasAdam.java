package crossbind.tfjava;

import java.util.List;
import java.util.Optional;
import org.tensorflow.Graph;
import org.tensorflow.Operand;
import org.tensorflow.Output;
import org.tensorflow.framework.optimizers.Optimizer;
import org.tensorflow.op.Op;
import org.tensorflow.op.Ops;
import org.tensorflow.op.core.Variable;
import org.tensorflow.types.TFloat32;
import org.tensorflow.types.family.TType;

/**
 * Adam as Keras computes it (tf-keras 2.18: epsilon 1e-7 outside the square root, bias
 * correction in the step size), on TensorFlow's ApplyAdam kernel, as a framework Optimizer.
 *
 * <p>The framework's own Adam (tensorflow-framework 1.1.0) updates beta1_power and beta2_power in
 * the same session run as the ApplyAdam ops that read them, with no dependency between the two, so
 * a step may use the next step's bias correction (measured here: the first step moved weights by
 * 0.74 lr instead of lr). This one reads the powers for every variable's update first and advances
 * them only after all updates (control dependencies), so step t uses beta^t.
 */
final class KerasAdam extends Optimizer {
    private final float lr;
    private final float beta1;
    private final float beta2;
    private final float epsilon;
    private Variable<TFloat32> beta1Power;
    private Variable<TFloat32> beta2Power;
    private Operand<TFloat32> lrConst;
    private Operand<TFloat32> beta1Const;
    private Operand<TFloat32> beta2Const;
    private Operand<TFloat32> epsilonConst;

    KerasAdam(Graph graph, float lr, float beta1, float beta2, float epsilon) {
        super(graph, "KerasAdam");
        this.lr = lr;
        this.beta1 = beta1;
        this.beta2 = beta2;
        this.epsilon = epsilon;
    }

    @Override
    protected void createSlots(List<Output<? extends TType>> variables) {
        Ops init = tf.withInitScope();
        for (Output<? extends TType> v : variables) {
            @SuppressWarnings("unchecked")
            Output<TFloat32> var = (Output<TFloat32>) v;
            createSlot(var, "m", init.zeros(init.constant(var.shape().asArray()), TFloat32.class));
            createSlot(var, "v", init.zeros(init.constant(var.shape().asArray()), TFloat32.class));
        }
        beta1Power = tf.withName("beta1_power").variable(init.constant(beta1));
        beta2Power = tf.withName("beta2_power").variable(init.constant(beta2));
    }

    @Override
    protected Optional<Op> prepare(String name) {
        lrConst = tf.constant(lr);
        beta1Const = tf.constant(beta1);
        beta2Const = tf.constant(beta2);
        epsilonConst = tf.constant(epsilon);
        return Optional.empty();
    }

    @Override
    @SuppressWarnings("unchecked")
    protected <T extends TType> Op applyDense(Ops ops, Output<T> gradient, Output<T> variable) {
        Output<TFloat32> var = (Output<TFloat32>) variable;
        Variable<TFloat32> m = getSlot(var, "m").get();
        Variable<TFloat32> v = getSlot(var, "v").get();
        return ops.train.applyAdam(var, m, v, ops.identity(beta1Power), ops.identity(beta2Power), lrConst,
                beta1Const, beta2Const, epsilonConst, (Output<TFloat32>) gradient);
    }

    @Override
    protected Op finish(List<Op> updates, String name) {
        Ops after = tf.withControlDependencies(updates);
        Op p1 = after.assign(beta1Power, after.math.mul(beta1Power, beta1Const));
        Op p2 = after.assign(beta2Power, after.math.mul(beta2Power, beta2Const));
        return super.finish(List.of(p1, p2), name);
    }

    @Override
    public String getOptimizerName() {
        return "KerasAdam";
    }
}
