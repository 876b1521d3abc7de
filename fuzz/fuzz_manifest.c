/* libFuzzer target: runner manifests (runners/NAME/manifest.json), read by
 * every study and bench command from a directory anyone may add to. The
 * text goes to cb_runner_parse, which cb_runners_load calls for each
 * runners/NAME/manifest.json it finds (the directory scan is tested by
 * the study tests). */
#include <stdint.h>
#include <stdlib.h>
#include "../src/study/study.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
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
