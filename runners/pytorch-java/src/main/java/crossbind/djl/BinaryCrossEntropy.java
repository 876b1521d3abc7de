package crossbind.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.training.loss.Loss;

/** Binary cross-entropy on probabilities as PyTorch's F.binary_cross_entropy computes it:
 * -(y log p + (1 - y) log(1 - p)) with each log clamped at -100, mean over the batch.
 * DJL 0.36's Loss.sigmoidBinaryCrossEntropyLoss(name, 1, fromSigmoid=true) returns this
 * without the minus sign (its minimum is then the wrong answer), so it cannot be used for a
 * model that ends in a sigmoid, as the protocol's recurrent models do. */
final class BinaryCrossEntropy extends Loss {
    BinaryCrossEntropy() {
        super("BinaryCrossEntropy");
    }

    @Override
    public NDArray evaluate(NDList label, NDList prediction) {
        return perSample(label.singletonOrThrow(), prediction.singletonOrThrow()).mean();
    }

    /** The loss of each sample (for sums over an evaluation pass). */
    static NDArray perSample(NDArray label, NDArray prob) {
        NDArray p = prob.reshape(-1);
        NDArray y = label.reshape(-1);
        NDArray logP = p.log().maximum(-100f);
        NDArray log1mP = NDArrays.sub(1f, p).log().maximum(-100f);
        return y.mul(logP).add(NDArrays.sub(1f, y).mul(log1mP)).neg();
    }
}
