package crossbind.djl;

import crossbind.common.CliError;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;

/** The optimizer of a run: PyTorch's update rules ("torch", the default, so that runs from one
 * initialisation match PyTorch/Python's) or DJL's own Sgd and Adam ("djl"). */
final class Optimizers {
    private Optimizers() {}

    static Optimizer of(String kind, String impl, double lr, double momentum, double weightDecay) {
        if (!impl.equals("torch") && !impl.equals("djl")) {
            throw new CliError("--optimizer-impl must be torch or djl");
        }
        if (kind.equals("sgd")) {
            if (impl.equals("torch")) {
                return new TorchSgd((float) lr, (float) momentum, (float) weightDecay);
            }
            return Optimizer.sgd().setLearningRateTracker(Tracker.fixed((float) lr)).optMomentum((float) momentum)
                    .optWeightDecays((float) weightDecay).build();
        }
        if (impl.equals("torch")) {
            return new TorchAdam((float) lr, (float) weightDecay);
        }
        return Optimizer.adam().optLearningRateTracker(Tracker.fixed((float) lr))
                .optWeightDecays((float) weightDecay).build();
    }
}
