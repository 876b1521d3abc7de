/* libFuzzer target: runner manifests (runners/NAME/manifest.json) and
 * unavailable.json files, read by every study and bench command from a
 * directory anyone may add to. The first byte chooses the file (even:
 * manifest.json, odd: unavailable.json); a fixed second runner claims its
 * framework's default, so that the check for two defaults runs too. */
#include "fuzz_util.h"
#include "../src/study/study.h"

static const char fixed[] =
    "{\"format\": \"crossbind-runner/1\", \"binding\": \"fixed\", \"framework\": \"PyTorch\", \"language\": \"C\","
    " \"command\": [\"run\"], \"infer\": [\"lenet1\"], \"loads\": [\"onnx\"], \"devices\": [\"cpu\"],"
    " \"framework_default\": true}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    fz_scratch("manifest");
    fz_mkdirs("runners/fuzzed");
    fz_mkdirs("runners/fixed");
    fz_put("runners/fixed/manifest.json", fixed, sizeof fixed - 1);
    int unavailable = data[0] & 1;
    fz_put(unavailable ? "runners/fuzzed/unavailable.json" : "runners/fuzzed/manifest.json", data + 1, size - 1);
    cb_runners r;
    cb_status st = cb_runners_load(fz_path(0, "runners"), "/usr/bin/crossbind", &r);
    fz_empty("runners/fuzzed"); /* the next input starts with one file again */
    if (st != CB_OK) return 0;
    for (int i = 0; i < r.count; i++) {
        const cb_runner *x = &r.items[i];
        if (cb_runners_find(&r, x->name) != x) abort();
        /* What the harness relies on: a runner that cannot be installed has no command, one that can has one. */
        if (x->declared_unavailable ? (x->ncommand != 0 || !x->reason[0]) : x->ncommand < 1) abort();
    }
    cb_runners_free(&r);
    return 0;
}
