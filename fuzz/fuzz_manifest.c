/* libFuzzer target: runner manifests (runners/NAME/manifest.json) and
 * unavailable.json files, read by every study and bench command from a
 * directory anyone may add to. The first byte chooses the path:
 *  - bit 0 clear: the text goes to cb_runner_parse, which cb_runners_load
 *    calls for each manifest.json it finds (in memory: the fast path that
 *    carries most executions);
 *  - bit 0 set: a runners directory is read whole, the text being
 *    runners/fuzzed/unavailable.json (bit 1 set) or manifest.json, beside a
 *    fixed runner that claims its framework's default, so that the check
 *    for two defaults and the directory scan run too. */
#include "fuzz_util.h"
#include "../src/study/study.h"

static const char fixed[] =
    "{\"format\": \"crossbind-runner/1\", \"binding\": \"fixed\", \"framework\": \"PyTorch\", \"language\": \"C\","
    " \"command\": [\"run\"], \"infer\": [\"lenet1\"], \"loads\": [\"onnx\"], \"devices\": [\"cpu\"],"
    " \"framework_default\": true}";

static int parse_text(const uint8_t *data, size_t size)
{
    cb_runner r;
    if (cb_runner_parse((const char *)data, size, "runners/fuzzed/manifest.json", "runners/fuzzed",
                        "/usr/bin/crossbind", &r) != CB_OK)
        return 0;
    cb_runners list = {&r, 1};
    if (cb_runners_find(&list, r.name) != &r) abort();
    cb_runner_release(&r);
    return 0;
}

static int load_directory(int unavailable, const uint8_t *data, size_t size)
{
    fz_scratch("manifest");
    fz_mkdirs("runners/fuzzed");
    fz_mkdirs("runners/fixed");
    fz_put("runners/fixed/manifest.json", fixed, sizeof fixed - 1);
    fz_put(unavailable ? "runners/fuzzed/unavailable.json" : "runners/fuzzed/manifest.json", data, size);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    if (!(data[0] & 1)) return parse_text(data + 1, size - 1);
    return load_directory(data[0] & 2, data + 1, size - 1);
}
