/* Unit tests of the statistics API (edge cases and hand-computed values;
 * tests/stats_test.py checks them against SciPy) and of the results store
 * (schema checks, transactions, refusal of foreign files). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "../src/core/file.h"
#include "../src/study/paths.h"
#include "../src/study/store.h"
#include "../src/study/validate.h"

TEST(stats_mwu_exact_small)
{
    double a[5] = {1, 2, 3, 4, 5}, b[5] = {6, 7, 8, 9, 10}, u, p;
    int exact;
    CHECK_OK(cb_mann_whitney_u(a, 5, b, 5, &u, &p, &exact));
    CHECK(u == 0 && exact);
    CHECK(fabs(p - 2.0 / 252.0) < 1e-15); /* the smallest p of 5 against 5 */
    CHECK_OK(cb_mann_whitney_u(b, 5, a, 5, &u, &p, &exact));
    CHECK(u == 25 && fabs(p - 2.0 / 252.0) < 1e-15);
    /* One value against one: U is 0 or 1, p = 1. */
    CHECK_OK(cb_mann_whitney_u(a, 1, b, 1, &u, &p, &exact));
    CHECK(u == 0 && p == 1.0);
}

TEST(stats_mwu_ties_and_equal_samples)
{
    double a[4] = {0.5, 0.5, 0.5, 0.5}, u, p;
    int exact = 1;
    CHECK_OK(cb_mann_whitney_u(a, 4, a, 4, &u, &p, &exact));
    CHECK(!exact && u == 8 && p == 1.0); /* all tied: zero variance, SciPy gives 1 */
    double nan_sample[2] = {1, NAN};
    CHECK(cb_mann_whitney_u(nan_sample, 2, a, 4, &u, &p, NULL) == CB_ERR_INVALID_ARG);
    CHECK(cb_mann_whitney_u(a, 0, a, 4, &u, &p, NULL) == CB_ERR_INVALID_ARG);
}

TEST(stats_cliff_and_bonferroni)
{
    double a[3] = {1, 2, 3}, b[3] = {2, 2, 2}, d;
    CHECK_OK(cb_cliff_delta(a, 3, b, 3, &d));
    CHECK(d == 0.0); /* 3 greater, 3 smaller, 3 ties */
    CHECK(!strcmp(cb_cliff_magnitude(0.146), "negligible") && !strcmp(cb_cliff_magnitude(-0.147), "small"));
    CHECK(!strcmp(cb_cliff_magnitude(0.33), "medium") && !strcmp(cb_cliff_magnitude(0.474), "large"));
    double p[3] = {0.01, 0.02, 0.6}, adj[3];
    int sig[3];
    CHECK_OK(cb_bonferroni(p, 3, 0.05, adj, sig));
    CHECK(fabs(adj[0] - 0.03) < 1e-15 && fabs(adj[1] - 0.06) < 1e-15 && adj[2] == 1.0);
    CHECK(sig[0] && !sig[1] && !sig[2]);
    double bad[1] = {1.5};
    CHECK(cb_bonferroni(bad, 1, 0.05, adj, NULL) == CB_ERR_INVALID_ARG);
}

TEST(stats_dtw_exact_and_fast)
{
    double a[4] = {0, 1, 2, 3}, b[5] = {0, 0, 1, 2, 3}, d;
    CHECK_OK(cb_dtw(a, 4, b, 5, -1, &d));
    CHECK(d == 0.0); /* a repeated first point warps away */
    double c[3] = {1, 1, 1};
    CHECK_OK(cb_dtw(a, 4, c, 3, -1, &d));
    CHECK(d == 1 + 0 + 1 + 2);
    /* FastDTW is an upper bound of the exact distance. */
    double x[40], y[33];
    for (int i = 0; i < 40; i++) x[i] = sin(i * 0.3);
    for (int i = 0; i < 33; i++) y[i] = sin(i * 0.37 + 0.2);
    double exact, fast;
    CHECK_OK(cb_dtw(x, 40, y, 33, -1, &exact));
    CHECK_OK(cb_dtw(x, 40, y, 33, 1, &fast));
    CHECK(fast >= exact - 1e-12);
    CHECK(cb_dtw(x, 40, y, 33, 0, &fast) == CB_ERR_INVALID_ARG);
    double inf[2] = {1, INFINITY};
    CHECK(cb_dtw(inf, 2, y, 3, -1, &d) == CB_ERR_INVALID_ARG);
}

static void temp_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "/tmp/crossbind-unit-%d-%s", (int)getpid(), name);
    unlink(out);
}

TEST(store_create_reopen_and_refuse)
{
    char path[256], wal[300];
    temp_path(path, sizeof path, "store.sqlite");
    cb_store *s;
    CHECK(cb_store_open(path, 0, &s) == CB_ERR_NOT_FOUND); /* readers never create */
    CHECK_OK(cb_store_open(path, 1, &s));
    int64_t id, id2;
    int created;
    CHECK_OK(cb_store_study(s, "quick", "{\"a\": 1}", "machine", &id, &created));
    CHECK(created);
    CHECK_OK(cb_store_study(s, "quick", "{\"a\": 1}", "machine", &id2, &created));
    CHECK(!created && id2 == id); /* same configuration, same study */
    CHECK_OK(cb_store_study(s, "quick", "{\"a\": 2}", "machine", &id2, &created));
    CHECK(created && id2 != id);
    /* A rolled-back transaction leaves nothing. */
    CHECK_OK(cb_store_begin(s));
    CHECK_OK(cb_store_exec(s, "INSERT INTO train_run(study_id, binding, model, run, device, status) VALUES(?,?,?,?,?,?)",
                           "ittitt", id, "crossbind", "lenet1", (int64_t)1, "cpu", "complete"));
    cb_store_rollback(s);
    CHECK(!cb_store_exists(s, "SELECT 1 FROM train_run", ""));
    CHECK_OK(cb_store_exec(s, "INSERT INTO train_run(study_id, binding, model, run, device, status) VALUES(?,?,?,?,?,?)",
                           "ittitt", id, "crossbind", "lenet1", (int64_t)1, "cpu", "complete"));
    /* The primary key refuses a duplicate measurement. */
    CHECK(cb_store_exec(s, "INSERT INTO train_run(study_id, binding, model, run, device, status) VALUES(?,?,?,?,?,?)",
                        "ittitt", id, "crossbind", "lenet1", (int64_t)1, "cpu", "complete") != CB_OK);
    cb_store_close(s);
    CHECK_OK(cb_store_open(path, 0, &s));
    CHECK(cb_store_exists(s, "SELECT 1 FROM train_run WHERE study_id=?", "i", id));
    CHECK_OK(cb_store_exec(s, "PRAGMA user_version=7", ""));
    cb_store_close(s);
    CHECK(cb_store_open(path, 0, &s) == CB_ERR_UNSUPPORTED);
    CHECK(strstr(cb_last_error(), "newer crossbind") != NULL);
    unlink(path);
    snprintf(wal, sizeof wal, "%s-wal", path); unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path); unlink(wal);
    /* Not SQLite at all. */
    FILE *f = fopen(path, "w");
    if (f) { fputs("this is not a database, just text that is long enough to be a header of one\n", f); fclose(f); }
    CHECK(cb_store_open(path, 0, &s) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "not a crossbind results store") != NULL);
    unlink(path);
}

/* Removal by the program itself: links are removed, never followed, and
 * nothing outside the root is reached, whatever the path says. */
TEST(study_remove_tree_stays_inside)
{
    char root[256], outside[256], p[600];
    temp_path(root, sizeof root, "rm-root");
    temp_path(outside, sizeof outside, "rm-outside");
    CHECK_OK(cb_mkdirs(root));
    CHECK_OK(cb_mkdirs(outside));
    snprintf(p, sizeof p, "%s/keep.txt", outside);
    FILE *f = fopen(p, "w");
    if (f) { fputs("keep\n", f); fclose(f); }
    /* A tree with a file, a deep chain and a link to the outside inside it. */
    snprintf(p, sizeof p, "%s/a/b/c/d/e", root);
    CHECK_OK(cb_mkdirs(p));
    snprintf(p, sizeof p, "%s/a/b/file", root);
    f = fopen(p, "w");
    if (f) fclose(f);
    snprintf(p, sizeof p, "%s/a/b/c/link", root);
    CHECK(symlink(outside, p) == 0);
    CHECK_OK(cb_remove_tree(root, "a/b"));
    snprintf(p, sizeof p, "%s/a/b", root);
    CHECK(access(p, F_OK) != 0);
    snprintf(p, sizeof p, "%s/keep.txt", outside);
    CHECK(access(p, F_OK) == 0);
    CHECK_OK(cb_remove_tree(root, "a/missing")); /* nothing there: nothing to do */
    /* A link on the way is refused, not entered. */
    snprintf(p, sizeof p, "%s/a/out", root);
    CHECK(symlink(outside, p) == 0);
    CHECK(cb_remove_tree(root, "a/out/keep.txt") == CB_ERR_IO);
    snprintf(p, sizeof p, "%s/keep.txt", outside);
    CHECK(access(p, F_OK) == 0);
    /* Names that leave the root are refused before anything is touched. */
    CHECK(cb_remove_tree(root, "../rm-outside") == CB_ERR_INVALID_ARG);
    CHECK(cb_remove_tree(root, "a/../..") == CB_ERR_INVALID_ARG);
    CHECK(cb_remove_tree(root, "/etc") == CB_ERR_INVALID_ARG);
    CHECK(cb_remove_tree(root, "a//b") == CB_ERR_INVALID_ARG);
    CHECK(cb_work_path(root, "train/../x", p, sizeof p) == CB_ERR_INVALID_ARG);
    CHECK_OK(cb_work_path(root, "train/pytorch/lenet1/run1-cpu", p, sizeof p));
    /* Deeper than the limit: refused, not a stack or descriptor overflow. */
    char deep[4096];
    int k = snprintf(deep, sizeof deep, "%s/z", root);
    for (int i = 0; i < CB_REMOVE_MAX_DEPTH + 4; i++) k += snprintf(deep + k, sizeof deep - (size_t)k, "/d");
    CHECK_OK(cb_mkdirs(deep));
    CHECK(cb_remove_tree(root, "z") == CB_ERR_IO);
    CHECK(strstr(cb_last_error(), "deeper than the limit") != NULL);
    CHECK_OK(cb_remove_tree(root, "a"));
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", root, outside); /* the test's own scratch */
    CHECK(system(cmd) == 0);
}

TEST(study_names_and_duplicate_keys)
{
    CHECK(cb_valid_name("onnxruntime-node") && cb_valid_name("gru-rb") && cb_valid_name("a.b_c"));
    CHECK(!cb_valid_name("") && !cb_valid_name("..") && !cb_valid_name(".x") && !cb_valid_name("-x"));
    CHECK(!cb_valid_name("../../x") && !cb_valid_name("a/b") && !cb_valid_name("a b") && !cb_valid_name("é"));
    CHECK(!cb_valid_name("abcdefghijabcdefghijabcdefghijab")); /* 32 characters */
    cb_json j;
    const char *text = "{\"a\": 1, \"b\": [{\"x\": 1, \"y\": 2, \"x\": 3}]}";
    CHECK_OK(cb_json_parse(text, strlen(text), "test", &j));
    const char *dup = cb_json_duplicate_key(&j);
    CHECK(dup && !strcmp(dup, "x"));
    cb_json_free(&j);
    text = "{\"a\": 1, \"b\": {\"a\": 2}}"; /* the same key in two objects is no duplicate */
    CHECK_OK(cb_json_parse(text, strlen(text), "test", &j));
    CHECK(cb_json_duplicate_key(&j) == NULL);
    cb_json_free(&j);
}
