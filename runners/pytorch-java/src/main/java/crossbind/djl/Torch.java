package crossbind.djl;

import crossbind.common.CliError;
import ai.djl.engine.Engine;
import ai.djl.engine.EngineException;
import ai.djl.pytorch.jni.LibUtils;

/** DJL's PyTorch engine, started once per process with the study's settings. The launcher
 * (run.sh) points DJL at the shared libtorch and turns offline mode on. */
final class Torch {
    private static boolean flushed;

    private Torch() {}

    /** Starts the engine with T intra-op threads (torch.set_num_threads). */
    static Engine start(int threads) {
        if (!Boolean.parseBoolean(System.getProperty("ai.djl.offline"))) {
            throw new CliError("DJL's offline mode is off: start the runner through run.sh "
                    + "(it sets -Dai.djl.offline=true so that nothing is fetched)");
        }
        System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(threads));
        flushed = Denormals.flush();
        try {
            Engine engine = Engine.getEngine("PyTorch");
            ai.djl.pytorch.jni.JniUtils.setNumThreads(threads);
            return engine;
        } catch (EngineException | UnsatisfiedLinkError e) {
            throw new CliError("cannot start DJL's PyTorch engine (libtorch " + System.getenv("PYTORCH_LIBRARY_PATH")
                    + "): " + e.getMessage() + "; run bash runners/pytorch-java/install.sh", e);
        }
    }

    static boolean denormalsFlushed() {
        return flushed;
    }

    static int threads() {
        return ai.djl.pytorch.jni.JniUtils.getNumThreads();
    }

    static String libtorchVersion() {
        return Engine.getEngine("PyTorch").getVersion();
    }

    static String libtorchPath() {
        return LibUtils.getLibtorchPath();
    }

    static String djlVersion() {
        return Engine.getDjlVersion();
    }
}
