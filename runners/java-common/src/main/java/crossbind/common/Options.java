package crossbind.common;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The command line after the subcommand: one positional MODEL (train, eval), then --name value
 * options and --flag switches; anything unknown is an error. */
public final class Options {
    private final Map<String, String> values = new HashMap<>();
    private String positional;

    /** models: the positional MODEL's choices, named when it is missing; null when the command
     * takes no model. (The runner's Protocol.MODELS: the runners' model lists differ.) */
    public Options(String command, List<String> args, Set<String> valued, Set<String> flags, List<String> models) {
        boolean wantsModel = models != null;
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (!a.startsWith("--")) {
                if (!wantsModel || positional != null) {
                    throw new CliError(command + ": unexpected argument " + a);
                }
                positional = a;
                continue;
            }
            String name = a.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (flags.contains(name) && value == null) {
                values.put(name, "true");
            } else if (valued.contains(name)) {
                if (value == null) {
                    if (i + 1 >= args.size()) {
                        throw new CliError(command + ": option --" + name + " needs a value");
                    }
                    value = args.get(++i);
                }
                values.put(name, value);
            } else {
                throw new CliError(command + ": unknown option --" + name);
            }
        }
        if (wantsModel && positional == null) {
            throw new CliError(command + ": give the model (" + String.join(", ", models) + ")");
        }
    }

    public String model() {
        return positional;
    }

    public boolean has(String name) {
        return values.containsKey(name);
    }

    public String str(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    public String required(String name) {
        String v = values.get(name);
        if (v == null) {
            throw new CliError("option --" + name + " is required");
        }
        return v;
    }

    public int integer(String name, int fallback, int min) {
        String v = values.get(name);
        if (v == null) {
            return fallback;
        }
        int n;
        try {
            n = Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new CliError("--" + name + " expects an integer, got '" + v + "'");
        }
        if (n < min) {
            throw new CliError("--" + name + " must be at least " + min);
        }
        return n;
    }

    public double number(String name, double fallback) {
        String v = values.get(name);
        if (v == null) {
            return fallback;
        }
        try {
            double d = Double.parseDouble(v.trim());
            if (!Double.isFinite(d) || d < 0) {
                throw new NumberFormatException();
            }
            return d;
        } catch (NumberFormatException e) {
            throw new CliError("--" + name + " expects a finite number >= 0, got '" + v + "'");
        }
    }
}
