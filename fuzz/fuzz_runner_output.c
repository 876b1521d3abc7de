/* libFuzzer target: what a runner reports to the study harness, its eval
 * JSON line (first byte even) or its training run.json (odd), taken the way
 * src/study/study.c takes it: read, checked, and stored in a results store
 * (in memory here). The harness's readers are internal to study.c, so the
 * file is compiled in whole; the runner itself never runs. */
#include "../src/study/study.c"

#include "../src/study/validate.h"

static cb_store *store;
static cb_study_config config;
static cb_runner binding = {.name = "fuzzed", .native = "pt"};
static cb_study_options options = {.self = "/usr/bin/crossbind", .work_dir = "/nonexistent", .quiet = 1};
static study s;

static void close_store(void) { cb_store_close(store); }

static void setup(void)
{
    if (cb_store_open(":memory:", CB_STORE_CREATE, &store) != CB_OK) abort();
    atexit(close_store);
    strcpy(config.models[0], "lenet1");
    strcpy(config.data_format[0], "mnist");
    config.nmodels = 1;
    config.runs[0] = 5;
    config.epochs[0] = 2;
    config.repeat = 3;
    config.threads = 1;
    config.timeout_s = 60;
    s = (study){.c = &config, .store = store, .opt = &options};
    int created;
    if (cb_store_study(store, "fuzz", "{}", "fuzz", &s.id, &created) != CB_OK) abort();
}

static const cb_runner_expect expect = {.total = 100, .n_train = 200, .classes = 10, .repeat = 3, .epochs = 2,
                                        .wall_s = 1000};

static void train(const char *text, size_t len)
{
    task t = {TASK_TRAIN, &binding, 0, 1, "cpu", NULL, NULL};
    cb_json run;
    if (cb_json_parse(text, len, "run.json", &run) != CB_OK) return;
    /* As do_train: a checked run.json is stored with its values, a malformed one without. */
    char why[600];
    int ok = run.type == CB_JSON_OBJ && cb_validate_run(&run, &expect, why, sizeof why) == 0;
    if (run.type == CB_JSON_OBJ &&
        store_train(&s, &t, ok ? "complete" : MALFORMED, ok ? NULL : why, ok ? &run : NULL, 1.0, "dir") != CB_OK) {
        fprintf(stderr, "a runner's run.json stopped the study: %s\n", cb_last_error());
        abort();
    }
    cb_json_free(&run);
}

static void eval(const char *text, size_t len)
{
    static cb_runner trainer = {.name = "trainer", .native = "pt"};
    task t = {TASK_EVAL, &binding, 0, 1, "cpu", &trainer, "pt"};
    cb_json res;
    if (cb_json_parse(text, len, "eval.stdout", &res) != CB_OK) return;
    char why[600];
    int ok = cb_validate_eval(&res, &expect, why, sizeof why) == 0;
    if (store_eval(&s, &t, ok ? "ok" : MALFORMED, ok ? NULL : why, ok ? &res : NULL, 90, 1.0, 0.0, 1.0) != CB_OK) {
        fprintf(stderr, "a runner's eval line stopped the study: %s\n", cb_last_error());
        abort();
    }
    cb_json_free(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!store) setup();
    if (size == 0) return 0;
    if (data[0] & 1) train((const char *)data + 1, size - 1);
    else eval((const char *)data + 1, size - 1);
    return 0;
}
