package crossbind.common;

/** A failure to report as one line, "crossbind-djl: error: MESSAGE" (crossbind-tfjava for
 * TensorFlow/Java; each runner's Main prints it), with exit status 1. */
public final class CliError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public CliError(String message) {
        super(message);
    }

    public CliError(String message, Throwable cause) {
        super(message, cause);
    }
}
