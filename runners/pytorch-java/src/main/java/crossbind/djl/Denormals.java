package crossbind.djl;

import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Platform;

/** Subnormal floats flushed to zero (MXCSR FTZ and DAZ) on the calling thread, as the reference
 * runner's torch.set_flush_denormal(True): DJL has no call for it. libtorch's OpenMP workers,
 * started later from this thread, inherit the setting. Gradients vanishing through 300
 * recurrent steps become subnormal, and each operation on one costs a microcode assist. */
final class Denormals {
    private static final int MXCSR_OFFSET = 28; // glibc's x86-64 fenv_t: x87 environment, then mxcsr
    private static final int FTZ_DAZ = 0x8040;

    private Denormals() {}

    interface LibM extends Library {
        int fegetenv(Memory env);

        int fesetenv(Memory env);
    }

    /** True when the flags are set (x86-64 Linux only). */
    static boolean flush() {
        if (!Platform.isLinux() || !Platform.isIntel() || !Platform.is64Bit()) {
            return false;
        }
        LibM m = Native.load("m", LibM.class);
        try (Memory env = new Memory(32)) {
            if (m.fegetenv(env) != 0) {
                return false;
            }
            env.setInt(MXCSR_OFFSET, env.getInt(MXCSR_OFFSET) | FTZ_DAZ);
            if (m.fesetenv(env) != 0) {
                return false;
            }
            m.fegetenv(env);
            return (env.getInt(MXCSR_OFFSET) & FTZ_DAZ) == FTZ_DAZ;
        }
    }
}
