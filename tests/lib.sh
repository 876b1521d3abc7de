# Helpers shared by the shell test suites. Source after setting T (a scratch
# directory) and SUITE (the label printed before each test name).
# Each helper counts into pass/fail; finish with: echo "$pass passed, $fail failed".
pass=0 fail=0

# expect_error NAME NEEDLE CMD...: non-zero exit (not a signal) and an error
# line on stderr containing the needle (a grep pattern).
expect_error() {
    local name="$1" needle="$2"; shift 2
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "error: .*$needle" "$T/err"; then
        echo "ok   $SUITE: $name"; pass=$((pass + 1))
    else
        echo "FAIL $SUITE: $name (exit $rc)"; sed 's/^/    /' "$T/err" | head -5; fail=$((fail + 1))
    fi
}

# expect_ok NAME CMD...: exit status 0 (stdout in $T/out, stderr in $T/err).
expect_ok() {
    local name="$1"; shift
    if "$@" >"$T/out" 2>"$T/err"; then echo "ok   $SUITE: $name"; pass=$((pass + 1))
    else echo "FAIL $SUITE: $name"; sed 's/^/    /' "$T/err" | head -5; fail=$((fail + 1)); fi
}

# require_python PYTHON CODE WHAT INSTALL: ends the suite with one FAIL
# saying WHAT and the command that installs it, where PYTHON (a runner's
# environment) cannot run CODE (its imports).
require_python() {
    if ! "$1" -c "$2" 2>"$T/err"; then
        echo "FAIL $SUITE: $3 (run: $4)"
        sed 's/^/    /' "$T/err" | tail -3
        echo "0 passed, 1 failed"
        exit 1
    fi
}

# check NAME CMD...: the command succeeds.
check() {
    local name="$1"; shift
    if "$@"; then echo "ok   $SUITE: $name"; pass=$((pass + 1)); else echo "FAIL $SUITE: $name"; fail=$((fail + 1)); fi
}

# tiny_mnist DIR: a small MNIST-format data set in a new DIR (40 training
# and 20 test images of seeded random pixels, labels 0-9 in turn).
tiny_mnist() {
    python3 - "$1" <<'PY'
import os, struct, sys, random
d = sys.argv[1]; os.makedirs(d)
random.seed(1)
for prefix, n in (("train", 40), ("t10k", 20)):
    with open(f"{d}/{prefix}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28)); f.write(bytes(random.randrange(256) for _ in range(n * 784)))
    with open(f"{d}/{prefix}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n)); f.write(bytes(i % 10 for i in range(n)))
PY
}
