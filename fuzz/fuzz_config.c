/* libFuzzer target: study configuration files (crossbind study --profile
 * FILE), read against two runners whose manifests are fixed. The text goes
 * to cb_study_config_parse, which cb_study_config_load calls with the
 * file's contents (the file reading is cb_read_file's, tested by the unit
 * and CLI tests). */
#include "fuzz_util.h"
#include "../src/study/study.h"

static const char pytorch[] =
    "{\"format\": \"crossbind-runner/1\", \"binding\": \"pytorch\", \"framework\": \"PyTorch\","
    " \"language\": \"Python\", \"command\": [\"{dir}/run\"],"
    " \"train\": [\"lenet1\", \"lenet5\", \"vgg16\", \"lstm\", \"gru\", \"gru-rb\"],"
    " \"infer\": [\"lenet1\", \"lenet5\", \"vgg16\", \"lstm\", \"gru\", \"gru-rb\"],"
    " \"writes\": [\"pt\", \"onnx\"], \"native_format\": \"pt\", \"loads\": [\"pt\"], \"devices\": [\"cpu\", \"cuda\"]}";
static const char crossbind[] =
    "{\"format\": \"crossbind-runner/1\", \"binding\": \"crossbind\", \"framework\": \"crossbind\","
    " \"language\": \"C\", \"command\": [\"{crossbind}\", \"runner\"], \"train\": [\"lenet1\"],"
    " \"infer\": [\"lenet1\", \"lenet5\"], \"writes\": [\"safetensors\"], \"native_format\": \"safetensors\","
    " \"loads\": [\"pt\", \"onnx\", \"safetensors\"], \"devices\": [\"cpu\"]}";

static cb_runners runners;

static void free_runners(void) { cb_runners_free(&runners); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!runners.count) {
        fz_scratch("config");
        fz_mkdirs("runners/pytorch");
        fz_mkdirs("runners/crossbind");
        fz_put("runners/pytorch/manifest.json", pytorch, sizeof pytorch - 1);
        fz_put("runners/crossbind/manifest.json", crossbind, sizeof crossbind - 1);
        if (cb_runners_load(fz_path(0, "runners"), "/usr/bin/crossbind", &runners) != CB_OK) abort();
        atexit(free_runners);
    }
    cb_study_config c;
    if (cb_study_config_parse((const char *)data, size, "profile.json", &runners, &c) != CB_OK) return 0;
    /* What the harness relies on once a configuration is accepted. */
    if (c.nmodels < 1 || c.nmodels > CB_MAX_LIST || c.nbindings < 1 || c.ndevices < 1 || !c.canonical) abort();
    for (int i = 0; i < c.nmodels; i++)
        if (c.runs[i] < 1 || c.runs[i] > 5 || c.epochs[i] < 1 || cb_study_model_index(&c, c.models[i]) != i) abort();
    if (!cb_runners_find(&runners, c.reference)) abort();
    for (int i = 0; i < c.nbindings; i++) /* every binding here can run: each has its framework's default */
        if (c.default_of[i] < 0 || c.default_of[i] >= c.nbindings ||
            strcmp(cb_runners_find(&runners, c.bindings[c.default_of[i]])->framework,
                   cb_runners_find(&runners, c.bindings[i])->framework))
            abort();
    cb_study_config_free(&c);
    return 0;
}
