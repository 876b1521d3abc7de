package crossbind.tfjava;

/** A failure to report as one line, "crossbind-tfjava: error: MESSAGE", with exit status 1. */
final class CliError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CliError(String message) {
        super(message);
    }

    CliError(String message, Throwable cause) {
        super(message, cause);
    }
}
