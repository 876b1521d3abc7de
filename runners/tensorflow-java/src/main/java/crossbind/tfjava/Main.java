package crossbind.tfjava;

import crossbind.common.CliError;
import crossbind.common.Options;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The TensorFlow/Java binding of the study: TF-Java 1.1.0 graphs and sessions on TensorFlow
 * 2.18.0 (runners/README.md's runner protocol). Commands: train, eval, bench, version. */
public final class Main {
    private Main() {}

    public static void main(String[] argv) {
        int status = 0;
        try {
            run(argv);
        } catch (CliError e) {
            System.err.println("crossbind-tfjava: error: " + e.getMessage());
            status = 1;
        } catch (RuntimeException | OutOfMemoryError | UnsatisfiedLinkError | ExceptionInInitializerError e) {
            if (System.getenv("CROSSBIND_TRACE") != null) {
                e.printStackTrace();
            }
            String msg = e.getMessage() == null ? e.toString() : e.getClass().getSimpleName() + ": " + e.getMessage();
            System.err.println("crossbind-tfjava: error: " + msg.split("\n", 2)[0]);
            status = 1;
        }
        System.out.flush();
        System.err.flush();
        // The native library needs no orderly shutdown; exit at once with the status.
        Runtime.getRuntime().halt(status);
    }

    private static void run(String[] argv) {
        if (argv.length == 0) {
            throw new CliError("usage: run.sh train|eval|bench|version ... (see runners/README.md)");
        }
        List<String> rest = Arrays.asList(argv).subList(1, argv.length);
        switch (argv[0]) {
            case "train":
                TrainCommand.run(new Options("train", rest, TrainCommand.VALUED, TrainCommand.FLAGS, Protocol.MODELS));
                break;
            case "eval":
                EvalCommand.run(new Options("eval", rest, EvalCommand.VALUED, EvalCommand.FLAGS, Protocol.MODELS));
                break;
            case "bench":
                BenchCommand.run(new Options("bench", rest, BenchCommand.VALUED, BenchCommand.FLAGS, null));
                break;
            case "version":
                new Options("version", rest, Set.of(), Set.of(), null);
                versions().forEach((k, v) -> System.out.println(k + " " + v));
                break;
            default:
                throw new CliError("unknown command " + argv[0] + " (train, eval, bench, version)");
        }
    }

    static void checkDevice(Options o) {
        String d = o.str("device", "cpu");
        if (!d.equals("cpu")) {
            throw new CliError("device " + d + " is not supported by this binding (cpu only)");
        }
    }

    /** The version in a TF-Java jar's Maven properties (the jar on the class path). */
    static String mavenVersion(String artifact) {
        String res = "/META-INF/maven/org.tensorflow/" + artifact + "/pom.properties";
        try (java.io.InputStream in = Main.class.getResourceAsStream(res)) {
            if (in == null) {
                return "unknown";
            }
            java.util.Properties p = new java.util.Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    /** Versions of the stack, as version_command prints them. */
    static Map<String, Object> versions() {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("java", System.getProperty("java.version"));
        v.put("tensorflow-java", mavenVersion("tensorflow-core-api"));
        v.put("tensorflow-framework", mavenVersion("tensorflow-framework"));
        v.put("tensorflow", org.tensorflow.TensorFlow.version());
        return v;
    }
}
