/* Unit tests of the study's framework grouping: the manifests' default
 * flag and library text, unavailable.json, the configuration's "defaults"
 * and "init", the reference binding's choice, the store's schema 2
 * (init_weights) and SHA-256. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"
#include "../src/core/sha256.h"
#include "../src/study/store.h"
#include "../src/study/study.h"

static void put(const char *dir, const char *name, const char *file, const char *text)
{
    char sub[700], path[800];
    snprintf(sub, sizeof sub, "%s/%s", dir, name);
    mkdir(dir, 0700);
    mkdir(sub, 0700);
    snprintf(path, sizeof path, "%s/%s", sub, file);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* A manifest of binding NAME in FRAMEWORK; EXTRA is appended inside the object. */
static void manifest(const char *dir, const char *name, const char *framework, int trains, const char *extra)
{
    char text[1200];
    snprintf(text, sizeof text, "{\"format\": \"crossbind-runner/1\", \"binding\": \"%s\", \"framework\": \"%s\","
             " \"language\": \"L\", \"command\": [\"run\"], \"train\": %s, \"infer\": [\"lenet1\"],"
             " \"writes\": [\"pt\"], \"native_format\": \"pt\", \"loads\": [\"pt\"], \"devices\": [\"cpu\"]%s}",
             name, framework, trains ? "[\"lenet1\"]" : "[]", extra);
    put(dir, name, "manifest.json", text);
}

static void rmtree(const char *dir)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* the test's own scratch */
    CHECK(system(cmd) == 0);
}

TEST(sha256_known_digests)
{
    char hex[65];
    cb_sha256_hex("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    cb_sha256_hex("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 448 bits: padding in a second block */
    cb_sha256_hex(m, strlen(m), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    /* A million 'a', fed in uneven pieces. */
    static char a[1000000];
    memset(a, 'a', sizeof a);
    cb_sha256_ctx c;
    unsigned char d[32];
    cb_sha256_init(&c);
    for (size_t off = 0, step = 1; off < sizeof a; off += step, step = step * 3 % 997 + 1)
        cb_sha256_update(&c, a + off, off + step <= sizeof a ? step : sizeof a - off);
    cb_sha256_final(&c, d);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

TEST(framework_defaults_flag_override_and_fallback)
{
    cb_fw_member m[6] = {
        {"crossbind", "crossbind", 1, 0, 1},
        {"pytorch", "PyTorch", 1, 0, 1},
        {"pytorch-python", "PyTorch", 1, 1, 1},
        {"pytorch-csharp", "PyTorch", 0, 0, 0},   /* unavailable.json: never a default */
        {"ort", "ONNX Runtime", 1, 0, 0},
        {"tf-js", "TensorFlow", 1, 0, 0}};
    int def[6], why[6];
    cb_framework_defaults(m, 6, NULL, 0, def, why);
    CHECK(def[0] == 0 && def[1] == 2 && def[2] == 2 && def[3] == -1 && def[4] == 4 && def[5] == 5);
    CHECK(why[1] == CB_DEFAULT_MANIFEST && why[0] == CB_DEFAULT_FIRST && why[4] == CB_DEFAULT_FIRST);
    cb_fw_override ov[1] = {{"PyTorch", "pytorch"}};
    cb_framework_defaults(m, 6, ov, 1, def, why);
    CHECK(def[1] == 1 && def[2] == 1 && why[2] == CB_DEFAULT_CONFIG);
    /* Without a flag: the first that trains, in the study's order. */
    m[2].flagged = 0;
    m[1].trains = 0;
    cb_framework_defaults(m, 6, NULL, 0, def, why);
    CHECK(def[1] == 2 && def[2] == 2 && why[1] == CB_DEFAULT_FIRST);
    /* An override naming an unknown or unrunnable binding changes nothing. */
    cb_fw_override bad[2] = {{"PyTorch", "pytorch-csharp"}, {"PyTorch", "nothing"}};
    cb_framework_defaults(m, 6, bad, 2, def, why);
    CHECK(def[1] == 2);
}

TEST(manifests_default_flag_library_and_unavailable)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmp("fw-runners"));
    rmtree(dir);
    manifest(dir, "pytorch", "PyTorch", 1, "");
    manifest(dir, "pytorch-python", "PyTorch", 1, ", \"framework_default\": true, \"library\": \"libtorch 2.7.1 (shared)\"");
    put(dir, "pytorch-csharp", "unavailable.json", "{\"binding\": \"pytorch-csharp\", \"framework\": \"PyTorch\","
        " \"language\": \"C#\", \"reason\": \"no .NET SDK <here>\"}");
    put(dir, "notes", "README.txt", "not a runner");
    cb_runners r;
    CHECK_OK(cb_runners_load(dir, "crossbind", &r));
    CHECK(r.count == 3);
    const cb_runner *py = cb_runners_find(&r, "pytorch-python"), *cs = cb_runners_find(&r, "pytorch-csharp");
    CHECK(py && py->framework_default && !strcmp(py->library, "libtorch 2.7.1 (shared)") && !py->declared_unavailable);
    CHECK(cs && cs->declared_unavailable && cs->ncommand == 0 && !strcmp(cs->reason, "no .NET SDK <here>") &&
          !strcmp(cs->language, "C#") && strstr(cs->manifest, "reason"));
    CHECK(!cb_runners_find(&r, "pytorch")->framework_default);
    cb_runners_free(&r);

    /* Two defaults of one framework: refused, naming both. */
    manifest(dir, "pytorch", "PyTorch", 1, ", \"framework_default\": true");
    CHECK(cb_runners_load(dir, "crossbind", &r) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "pytorch/manifest.json") && strstr(cb_last_error(), "pytorch-python/manifest.json") &&
          strstr(cb_last_error(), "\"PyTorch\"") && strstr(cb_last_error(), "one default binding"));
    /* ... but one default in each of two frameworks is fine. */
    manifest(dir, "pytorch", "Torch7", 1, ", \"framework_default\": true");
    CHECK_OK(cb_runners_load(dir, "crossbind", &r));
    cb_runners_free(&r);
    manifest(dir, "pytorch", "PyTorch", 1, ", \"framework_default\": \"yes\"");
    CHECK(cb_runners_load(dir, "crossbind", &r) == CB_ERR_FORMAT &&
          strstr(cb_last_error(), "\"framework_default\" must be true or false"));
    manifest(dir, "pytorch", "PyTorch", 1, "");

    /* unavailable.json needs its reason; a directory may not hold both files. */
    put(dir, "pytorch-csharp", "unavailable.json", "{\"binding\": \"pytorch-csharp\", \"framework\": \"PyTorch\","
        " \"language\": \"C#\"}");
    CHECK(cb_runners_load(dir, "crossbind", &r) == CB_ERR_FORMAT && strstr(cb_last_error(), "no \"reason\""));
    put(dir, "pytorch-csharp", "unavailable.json", "{\"binding\": \"pytorch-csharp\", \"framework\": \"PyTorch\","
        " \"language\": \"C#\", \"reason\": \"r\"}");
    manifest(dir, "pytorch-csharp", "PyTorch", 0, "");
    CHECK(cb_runners_load(dir, "crossbind", &r) == CB_ERR_FORMAT &&
          strstr(cb_last_error(), "both manifest.json and unavailable.json"));
    rmtree(dir);
}

static cb_status load_cfg(const char *text, const cb_runners *r, cb_study_config *c)
{
    const char *path = test_tmp("fw-cfg.json");
    FILE *f = fopen(path, "wb");
    if (!f) return CB_ERR_IO;
    fputs(text, f);
    fclose(f);
    return cb_study_config_load(path, r, c);
}

TEST(config_defaults_reference_and_init)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmp("fw-cfg-runners"));
    rmtree(dir);
    manifest(dir, "crossbind", "crossbind", 1, "");
    manifest(dir, "pytorch", "PyTorch", 1, "");
    manifest(dir, "pytorch-python", "PyTorch", 1, ", \"framework_default\": true");
    manifest(dir, "ort", "ONNX Runtime", 0, "");
    put(dir, "pytorch-csharp", "unavailable.json", "{\"binding\": \"pytorch-csharp\", \"framework\": \"PyTorch\","
        " \"language\": \"C#\", \"reason\": \"r\"}");
    cb_runners r;
    CHECK_OK(cb_runners_load(dir, "crossbind", &r));
    cb_study_config c;
    /* "all": every binding that can run; the reference is PyTorch's default. */
    CHECK_OK(load_cfg("{\"models\": [\"lenet1\"]}", &r, &c));
    CHECK(c.nbindings == 4 && !strcmp(c.reference, "pytorch-python") && !c.init_shared && c.ndefaults == 0);
    for (int i = 0; i < c.nbindings; i++) CHECK(strcmp(c.bindings[i], "pytorch-csharp"));
    CHECK(!strstr(c.canonical, "\"init\"") && !strstr(c.canonical, "\"defaults\""));
    cb_study_config_free(&c);
    /* Without PyTorch's default in the study, its only PyTorch binding is the reference. */
    CHECK_OK(load_cfg("{\"models\": [\"lenet1\"], \"bindings\": [\"crossbind\", \"pytorch\"], \"init\": \"shared\"}", &r, &c));
    CHECK(!strcmp(c.reference, "pytorch") && c.init_shared && strstr(c.canonical, "\"init\": \"shared\""));
    cb_study_config_free(&c);
    /* No PyTorch at all: the first binding that trains. */
    CHECK_OK(load_cfg("{\"models\": [\"lenet1\"], \"bindings\": [\"ort\", \"crossbind\"]}", &r, &c));
    CHECK(!strcmp(c.reference, "crossbind"));
    cb_study_config_free(&c);
    /* The override: taken, in the canonical configuration, and it moves the reference. */
    CHECK_OK(load_cfg("{\"models\": [\"lenet1\"], \"defaults\": {\"PyTorch\": \"pytorch\"}}", &r, &c));
    CHECK(c.ndefaults == 1 && !strcmp(c.reference, "pytorch") && strstr(c.canonical, "\"defaults\": {\"PyTorch\": \"pytorch\"}"));
    int py = -1, pp = -1;
    for (int i = 0; i < c.nbindings; i++) {
        if (!strcmp(c.bindings[i], "pytorch")) py = i;
        if (!strcmp(c.bindings[i], "pytorch-python")) pp = i;
    }
    CHECK(py >= 0 && pp >= 0 && c.default_of[pp] == py && c.default_of[py] == py);
    cb_study_config_free(&c);
    /* Refused: an unknown framework, a binding of another framework, one that cannot run, a bad init. */
    CHECK(load_cfg("{\"defaults\": {\"TensorFlow\": \"pytorch\"}}", &r, &c) == CB_ERR_NOT_FOUND &&
          strstr(cb_last_error(), "\"TensorFlow\", which no binding of the study belongs to"));
    CHECK(load_cfg("{\"defaults\": {\"PyTorch\": \"crossbind\"}}", &r, &c) == CB_ERR_INVALID_ARG &&
          strstr(cb_last_error(), "\"defaults\".PyTorch is \"crossbind\""));
    CHECK(load_cfg("{\"bindings\": [\"pytorch\", \"pytorch-csharp\"], \"defaults\": {\"PyTorch\": \"pytorch-csharp\"}}",
                   &r, &c) == CB_ERR_INVALID_ARG && strstr(cb_last_error(), "that can run here"));
    CHECK(load_cfg("{\"init\": \"random\"}", &r, &c) == CB_ERR_INVALID_ARG && strstr(cb_last_error(), "\"init\" must be"));
    CHECK(load_cfg("{\"defaults\": [\"pytorch\"]}", &r, &c) == CB_ERR_INVALID_ARG);
    /* The built-in profiles: quick shares the initial weights, paper does not (as the published study). */
    CHECK_OK(cb_study_config_load("quick", &r, &c));
    CHECK(c.init_shared && !strcmp(c.reference, "pytorch-python"));
    cb_study_config_free(&c);
    CHECK_OK(cb_study_config_load("paper", &r, &c));
    CHECK(!c.init_shared && !strcmp(c.reference, "pytorch-python"));
    cb_study_config_free(&c);
    cb_runners_free(&r);
    rmtree(dir);
}

/* A schema-1 store (before init_weights): read as it is, upgraded when opened for writing. */
TEST(store_schema_1_read_and_upgraded)
{
    char path[512];
    snprintf(path, sizeof path, "%s", test_tmp("schema1.sqlite"));
    unlink(path);
    cb_store *s;
    CHECK_OK(cb_store_open(path, CB_STORE_CREATE, &s));
    CHECK(cb_store_schema(s) == 2);
    CHECK_OK(cb_store_exec(s, "DROP TABLE init_weights", ""));
    CHECK_OK(cb_store_exec(s, "PRAGMA user_version=1", ""));
    cb_store_close(s);
    CHECK_OK(cb_store_open(path, CB_STORE_READ, &s));
    CHECK(cb_store_schema(s) == 1);
    cb_store_close(s);
    CHECK_OK(cb_store_open(path, CB_STORE_WRITE, &s));
    CHECK(cb_store_schema(s) == 2);
    int found = 0;
    CHECK_OK(cb_store_exists(s, &found, "SELECT 1 FROM sqlite_master WHERE name='init_weights'", ""));
    CHECK(found);
    cb_store_close(s);
    CHECK_OK(cb_store_open(path, CB_STORE_READ, &s));
    CHECK(cb_store_schema(s) == 2);
    cb_store_close(s);
    unlink(path);
}
