/* Unit tests of the study configuration reader (src/study/config.c): values
 * a configuration file may hold that no integer setting can take. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "harness.h"
#include "../src/study/study.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* An integer setting given as a number no integer type holds (1e19, 1e300,
 * -1e300, an overflowing 1e999) is refused with the setting's range; it was
 * converted to long first, which is undefined behaviour in C. */
TEST(study_config_refuses_numbers_beyond_integers)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmp("cfg-runners"));
    mkdir(dir, 0700);
    char sub[600], path[700];
    snprintf(sub, sizeof sub, "%s/pytorch", dir);
    mkdir(sub, 0700);
    snprintf(path, sizeof path, "%s/manifest.json", sub);
    write_file(path, "{\"format\": \"crossbind-runner/1\", \"binding\": \"pytorch\", \"framework\": \"PyTorch\","
                     " \"language\": \"Python\", \"command\": [\"run\"], \"train\": [\"lenet1\"], \"infer\": [\"lenet1\"],"
                     " \"writes\": [\"pt\"], \"native_format\": \"pt\", \"loads\": [\"pt\"], \"devices\": [\"cpu\"]}");
    cb_runners runners;
    CHECK_OK(cb_runners_load(dir, "crossbind", &runners));
    static const char *const bad[] = {
        "{\"threads\": 1e300}", "{\"repeat\": -1e300}", "{\"runs\": 1e19}", "{\"limit_test\": 9.5e18}",
        "{\"epochs\": {\"default\": 1e999}}", "{\"limit_train\": {\"lenet1\": -1e19}}"};
    const char *cfg = test_tmp("cfg.json");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(cfg, bad[i]);
        cb_study_config c;
        cb_status st = cb_study_config_load(cfg, &runners, &c);
        if (st == CB_OK) { fprintf(stderr, "  accepted %s\n", bad[i]); cb_study_config_free(&c); }
        /* 1e999 is no double: the JSON reader refuses it before the range check. */
        if (strstr(bad[i], "1e999")) CHECK(st == CB_ERR_FORMAT && strstr(cb_last_error(), "number out of range"));
        else CHECK(st == CB_ERR_INVALID_ARG && strstr(cb_last_error(), "must be an integer in"));
    }
    /* The largest values in range are still taken. */
    write_file(cfg, "{\"threads\": 1024, \"limit_test\": 1e9, \"runs\": 5}");
    cb_study_config c;
    CHECK_OK(cb_study_config_load(cfg, &runners, &c));
    CHECK(c.threads == 1024 && c.limit_test[0] == 1000000000 && c.runs[0] == 5);
    cb_study_config_free(&c);
    cb_runners_free(&runners);
}
