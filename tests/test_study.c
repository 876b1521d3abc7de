/* Unit tests of the statistics API (edge cases and hand-computed values;
 * tests/stats_test.py checks them against SciPy) and of the results store
 * (schema checks, transactions, refusal of foreign files). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "../src/core/file.h"
#include "../src/study/lock.h"
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

/* 1 when the query yields a row, 0 when not, -1 on an error of the store. */
static int row_exists(cb_store *s, const char *sql)
{
    int found = 0;
    return cb_store_exists(s, &found, sql, "") == CB_OK ? found : -1;
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
    CHECK(cb_store_open(path, CB_STORE_READ, &s) == CB_ERR_NOT_FOUND); /* readers never create */
    CHECK(cb_store_open(path, CB_STORE_WRITE, &s) == CB_ERR_NOT_FOUND);
    CHECK_OK(cb_store_open(path, CB_STORE_CREATE, &s));
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
    CHECK(row_exists(s, "SELECT 1 FROM train_run") == 0);
    CHECK_OK(cb_store_exec(s, "INSERT INTO train_run(study_id, binding, model, run, device, status) VALUES(?,?,?,?,?,?)",
                           "ittitt", id, "crossbind", "lenet1", (int64_t)1, "cpu", "complete"));
    /* The primary key refuses a duplicate measurement. */
    CHECK(cb_store_exec(s, "INSERT INTO train_run(study_id, binding, model, run, device, status) VALUES(?,?,?,?,?,?)",
                        "ittitt", id, "crossbind", "lenet1", (int64_t)1, "cpu", "complete") != CB_OK);
    cb_store_close(s);
    CHECK_OK(cb_store_open(path, CB_STORE_READ, &s));
    int found = 0;
    CHECK_OK(cb_store_exists(s, &found, "SELECT 1 FROM train_run WHERE study_id=?", "i", id));
    CHECK(found);
    /* A reader cannot write, and an error of the database is an error, not "no row". */
    CHECK(cb_store_exec(s, "DELETE FROM train_run", "") != CB_OK);
    CHECK(row_exists(s, "SELECT 1 FROM no_such_table") == -1);
    CHECK(strstr(cb_last_error(), "no_such_table") != NULL);
    cb_store_close(s);
    CHECK_OK(cb_store_open(path, CB_STORE_WRITE, &s));
    CHECK_OK(cb_store_exec(s, "PRAGMA user_version=7", ""));
    cb_store_close(s);
    CHECK(cb_store_open(path, CB_STORE_READ, &s) == CB_ERR_UNSUPPORTED);
    CHECK(strstr(cb_last_error(), "newer crossbind") != NULL);
    unlink(path);
    snprintf(wal, sizeof wal, "%s-wal", path); unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path); unlink(wal);
    /* Not SQLite at all. */
    FILE *f = fopen(path, "w");
    if (f) { fputs("this is not a database, just text that is long enough to be a header of one\n", f); fclose(f); }
    CHECK(cb_store_open(path, CB_STORE_READ, &s) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "not a crossbind results store") != NULL);
    unlink(path);
}

/* Processes that create the same new store at the same moment all open a
 * sound store: the schema is made once (one immediate transaction looks
 * again whether the file is empty once it holds the write lock). */
TEST(store_concurrent_creation)
{
    enum { N = 12 };
    char path[256];
    temp_path(path, sizeof path, "race.sqlite");
    for (int round = 0; round < 3; round++) {
        unlink(path);
        int go[2];
        CHECK(pipe(go) == 0);
        pid_t kids[N];
        for (int k = 0; k < N; k++) {
            kids[k] = fork();
            if (kids[k] == 0) {
                close(go[1]);
                char c;
                if (read(go[0], &c, 1) < 0) _exit(3); /* released together when the pipe closes */
                cb_store *s;
                cb_status st = cb_store_open(path, CB_STORE_CREATE, &s);
                if (st != CB_OK) {
                    fprintf(stderr, "  child %d: %s\n", k, cb_last_error());
                    _exit(1);
                }
                int64_t id;
                int created;
                st = cb_store_study(s, "quick", "{\"race\": 1}", "m", &id, &created);
                if (st != CB_OK) fprintf(stderr, "  child %d: %s\n", k, cb_last_error());
                cb_store_close(s);
                _exit(st == CB_OK ? 0 : 2);
            }
        }
        close(go[0]);
        close(go[1]);
        int ok = 0;
        for (int k = 0; k < N; k++) {
            int wst = 0;
            waitpid(kids[k], &wst, 0);
            ok += WIFEXITED(wst) && WEXITSTATUS(wst) == 0;
            if (!(WIFEXITED(wst) && WEXITSTATUS(wst) == 0)) fprintf(stderr, "  child %d: wait status 0x%x\n", k, wst);
        }
        CHECK(ok == N); /* none may see "table study already exists" or a lock it cannot wait for */
        cb_store *s;
        CHECK_OK(cb_store_open(path, CB_STORE_READ, &s)); /* the schema check passes: made once, whole */
        if (s) {
            CHECK(row_exists(s, "SELECT 1 FROM study WHERE config='{\"race\": 1}'") == 1);
            CHECK(row_exists(s, "SELECT 1 FROM study GROUP BY config HAVING count(*) > 1") == 0);
            cb_store_close(s);
        }
    }
    char side[300];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path); unlink(side);
    snprintf(side, sizeof side, "%s-shm", path); unlink(side);
}

/* The study lock: exclusive between open file descriptions (so also within
 * one process), naming its holder, seen by a probe that takes nothing, and
 * gone with its holder: a study stored as running without one reads as
 * interrupted. */
TEST(store_study_lock_and_status)
{
    char path[256], lock[300];
    temp_path(path, sizeof path, "locked.sqlite");
    cb_store_lock_path(path, lock, sizeof lock);
    unlink(lock);
    cb_lock_holder h;
    CHECK(cb_lock_probe(lock, &h) == 0); /* no file: nobody */
    cb_lock *a = NULL, *b = NULL;
    CHECK_OK(cb_lock_acquire(lock, "the store", 0, 1, &a));
    cb_lock_set_study(a, 7);
    /* Refused as busy, not as an i/o error: nothing failed, the store is in use. */
    CHECK(cb_lock_acquire(lock, "the store", 0, 1, &b) == CB_ERR_BUSY && b == NULL);
    CHECK(strstr(cb_error_text(CB_ERR_BUSY), "is in use by another crossbind study") &&
          strstr(cb_error_text(CB_ERR_BUSY), "(busy)") && !strstr(cb_error_text(CB_ERR_BUSY), "i/o error"));
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld on host ", (long)getpid());
    CHECK(strstr(cb_last_error(), pid) && strstr(cb_last_error(), "study 7") && strstr(cb_last_error(), "--wait"));
    CHECK(cb_lock_probe(lock, &h) == 1 && h.pid == (long)getpid() && h.study == 7 && h.since[0]);
    CHECK(cb_lock_probe(lock, &h) == 1); /* probing released nothing */
    cb_store *s;
    CHECK_OK(cb_store_open(path, CB_STORE_CREATE, &s));
    char status[400];
    if (s) {
        cb_store_study_status(s, 7, "running", status, sizeof status);
        CHECK(!strncmp(status, "running (pid ", 13));
        cb_store_study_status(s, 8, "running", status, sizeof status); /* the holder works on another study */
        CHECK(!strncmp(status, "interrupted", 11));
        cb_store_study_status(s, 7, "complete", status, sizeof status);
        CHECK(!strcmp(status, "complete"));
    }
    /* A holder that dies (a child that never releases) leaves nothing held. */
    cb_lock_release(a);
    pid_t kid = fork();
    if (kid == 0) {
        cb_lock *c;
        if (cb_lock_acquire(lock, "the store", 0, 1, &c) != CB_OK) _exit(1);
        cb_lock_set_study(c, 7);
        _exit(0);
    }
    int wst = 0;
    waitpid(kid, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    CHECK(cb_lock_probe(lock, &h) == 0);
    if (s) {
        cb_store_study_status(s, 7, "running", status, sizeof status);
        CHECK(!strncmp(status, "interrupted", 11));
        cb_store_close(s);
    }
    CHECK_OK(cb_lock_acquire(lock, "the store", 0, 1, &b)); /* free again */
    cb_lock_release(b);
    char side[300];
    unlink(path); unlink(lock);
    snprintf(side, sizeof side, "%s-wal", path); unlink(side);
    snprintf(side, sizeof side, "%s-shm", path); unlink(side);
}

/* ---- the report's escaping writer (src/report/out.h) ---- */
#include "../src/report/out.h"

static const char *hostile =
    "<script>alert(1)</script> \"onerror=x' | a\nb\r`c` [l](javascript:alert(2)) ![i](x) & &amp; \\ *e* ~s~ $m$";

TEST(out_html_escapes_every_special_character)
{
    cb_out *o = cb_out_new(CB_OUT_HTML);
    cb_out_lit(o, "<p title=\"");
    cb_out_text(o, hostile);
    cb_out_lit(o, "\">");
    cb_out_textf(o, "%s!", hostile);
    cb_out_lit(o, "</p>");
    size_t n;
    const char *s = cb_out_data(o, &n);
    CHECK(n == strlen(s));
    /* The only markup is the literal's: one element, one attribute. */
    CHECK(!strstr(s, "<script") && !strstr(s, "\"onerror") && !strchr(s, '\''));
    int lt = 0, quotes = 0;
    for (const char *p = s; *p; p++) { lt += *p == '<'; quotes += *p == '"'; }
    CHECK(lt == 2 && quotes == 2);
    CHECK(strstr(s, "&lt;script&gt;alert(1)&lt;/script&gt; &quot;onerror=x&#39;") != NULL);
    CHECK(strstr(s, "&amp; &amp;amp;") != NULL);
    cb_out_free(o);
}

TEST(out_markdown_neutralises_tables_links_html_code_and_blocks)
{
    cb_out *o = cb_out_new(CB_OUT_MD);
    cb_out_lit(o, "| ");
    cb_out_text(o, hostile);
    cb_out_lit(o, " |\n- ");
    cb_out_text(o, "# heading");
    cb_out_lit(o, "\n- ");
    cb_out_text(o, "1. item");
    cb_out_lit(o, "\n- ");
    cb_out_text(o, "  - nested");
    cb_out_lit(o, "\n- ");
    cb_out_text(o, "x86_64 _em_ 1.5");
    const char *s = cb_out_data(o, NULL);
    CHECK(!strchr(s, '<') && !strchr(s, '\r'));
    /* Every |, `, [, ], *, ~, $ and \ of the data is backslash-escaped. */
    const char *cell = s + 2, *end = strstr(cell, " |\n");
    CHECK(end != NULL);
    for (const char *p = cell; end && p < end; p++) {
        CHECK(*p != '\n');
        if (strchr("|`[]*~$", *p)) {
            int k = 0;
            while (p - k - 1 >= cell && p[-k - 1] == '\\') k++;
            CHECK(k % 2 == 1);
        }
    }
    CHECK(strstr(s, "&lt;script&gt;") && strstr(s, "&amp; &amp;amp;") && strstr(s, "a b "));
    CHECK(strstr(s, "\n- \\# heading\n") && strstr(s, "\n- 1\\. item\n") && strstr(s, "\n- &#32;&#32;\\- nested\n"));
    CHECK(strstr(s, "x86_64 \\_em\\_ 1.5") != NULL);
    cb_out_free(o);
}

TEST(out_csv_quotes_fields_that_need_it)
{
    cb_out *o = cb_out_new(CB_OUT_CSV);
    cb_out_text(o, "plain");
    cb_out_lit(o, ",");
    cb_out_text(o, "a,b");
    cb_out_lit(o, ",");
    cb_out_text(o, "say \"hi\"");
    cb_out_lit(o, ",");
    cb_out_text(o, "line\r\nbreak");
    cb_out_lit(o, "\n");
    CHECK(!strcmp(cb_out_data(o, NULL), "plain,\"a,b\",\"say \"\"hi\"\"\",\"line\r\nbreak\"\n"));
    cb_out_free(o);
}

TEST(out_markup_formats_take_numbers_only)
{
    char path[] = "/tmp/crossbind-out-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    cb_out *o = cb_out_new(CB_OUT_HTML);
    cb_out_markf(o, "<rect x=\"%d\" y=\"%.1f\" fill=\"#%06x\"/>%%", 3, 2.5, 0xabcdefu);
    CHECK(!strcmp(cb_out_data(o, NULL), "<rect x=\"3\" y=\"2.5\" fill=\"#abcdef\"/>%"));
    CHECK_OK(cb_out_write(o, path));
    /* A string through a markup format would bypass the escaping: the output is refused, nothing written. */
    cb_out_markf(o, "<b>%s</b>", "<script>");
    CHECK(!strstr(cb_out_data(o, NULL), "<script>"));
    CHECK(cb_out_write(o, path) == CB_ERR_INVALID_ARG);
    cb_out_free(o);
    FILE *f = fopen(path, "r");
    char back[100] = "";
    CHECK(f && fgets(back, sizeof back, f));
    if (f) fclose(f);
    CHECK(!strcmp(back, "<rect x=\"3\" y=\"2.5\" fill=\"#abcdef\"/>%"));
    unlink(path);
    /* Out of memory reads as a NULL writer: every call is a no-op, writing reports it. */
    cb_out_text(NULL, "x");
    cb_out_lit(NULL, "x");
    CHECK(cb_out_write(NULL, path) == CB_ERR_NOMEM);
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
    /* Duplicate keys are the JSON reader's to refuse, at any depth. */
    cb_json j;
    const char *text = "{\"a\": 1, \"b\": [{\"x\": 1, \"y\": 2, \"x\": 3}]}";
    CHECK(cb_json_parse(text, strlen(text), "test", &j) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "\"x\" appears twice") != NULL);
    text = "{\"a\": 1, \"b\": {\"a\": 2}}"; /* the same key in two objects is no duplicate */
    CHECK_OK(cb_json_parse(text, strlen(text), "test", &j));
    cb_json_free(&j);
}
