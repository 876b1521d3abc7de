/* libFuzzer target: runner manifests (runners/NAME/manifest.json), read by
 * every study and bench command from a directory anyone may add to. */
#include "fuzz_util.h"
#include "../src/study/study.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_scratch("manifest");
    fz_mkdirs("runners/fuzzed");
    fz_put("runners/fuzzed/manifest.json", data, size);
    cb_runners r;
    if (cb_runners_load(fz_path(0, "runners"), "/usr/bin/crossbind", &r) != CB_OK) return 0;
    for (int i = 0; i < r.count; i++)
        if (cb_runners_find(&r, r.items[i].name) != &r.items[i]) abort();
    cb_runners_free(&r);
    return 0;
}
