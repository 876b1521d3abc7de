/* crossbind study / report / results: the bindings study as one command.
 *
 *   crossbind study --profile quick|paper|FILE [--store PATH] [--report DIR]
 *   crossbind report [--store PATH] [--study ID] [--out DIR]
 *   crossbind results export [--store PATH] [--study ID] --csv DIR | --json FILE */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "../report/report.h"
#include "../core/file.h"
#include "../study/lock.h"
#include "../study/proc.h"
#include "../study/study.h"

#define DEFAULT_STORE "runs/study.sqlite"

/* The store's latest study: 0, -1 when the store holds none yet, or the exit status of an error. */
static int latest_study(cb_store *st, int64_t *id)
{
    sqlite3_stmt *q;
    sqlite3 *db = cb_store_db(st);
    int rc = sqlite3_prepare_v2(db, "SELECT max(id) FROM study", -1, &q, NULL);
    if (rc != SQLITE_OK) return cli_error("%s: reading the table study: %s", cb_store_path(st), sqlite3_errmsg(db));
    rc = sqlite3_step(q);
    int out = 0;
    if (rc != SQLITE_ROW) out = cli_error("%s: reading the table study: %s", cb_store_path(st), sqlite3_errmsg(db));
    else if (sqlite3_column_type(q, 0) == SQLITE_NULL) out = -1;
    else *id = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return out;
}

static const char study_usage[] =
    "usage: crossbind study --profile quick|paper|FILE [--store PATH] [--report DIR] [--work DIR]\n"
    "                       [--runners DIR] [--no-report] [--wait] [--quiet]\n"
    "  Runs the bindings study (models x bindings x runs x devices: training runs, the\n"
    "  cross-binding inference experiment, inference times) into a results store\n"
    "  (default " DEFAULT_STORE "), then writes the report (default: report/ beside the\n"
    "  store). Interrupted, it resumes with the same command: measurements in the store\n"
    "  are kept and not repeated. Profiles: quick (package stand-ins, subsets, short\n"
    "  schedules, one file of initial weights per model and run shared by every binding),\n"
    "  paper (the full protocol, each binding's own initialisation), or a JSON\n"
    "  configuration (docs/study.md). Each framework's bindings are compared with its\n"
    "  default binding (runners/README.md); the report has a section per framework.\n"
    "  One study at a time writes a store (and a work directory): a second one refuses,\n"
    "  naming the process that holds it (lock file STORE.lock), or with --wait waits\n"
    "  until that one has finished, then goes on.\n";

int cmd_study(int argc, char **argv)
{
    const char *profile = NULL, *store_path = DEFAULT_STORE, *report_dir = NULL, *work = NULL, *runners_dir = NULL;
    int quiet = 0, no_report = 0, wait = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(study_usage, stdout); return 0; }
        else if (!strcmp(a, "--profile")) { if (!(profile = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--store")) { if (!(store_path = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--report")) { if (!(report_dir = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--work")) { if (!(work = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--runners")) { if (!(runners_dir = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--quiet")) quiet = 1;
        else if (!strcmp(a, "--no-report")) no_report = 1;
        else if (!strcmp(a, "--wait")) wait = 1;
        else { cli_error("study: unknown option '%s' (see crossbind study --help)", a); return 2; }
    }
    if (!profile) { fputs(study_usage, stderr); cli_error("study: --profile quick|paper|FILE is required"); return 2; }
    char self[PATH_MAX], rdir[PATH_MAX + 16], wdir[PATH_MAX], repdir[PATH_MAX];
    cli_self_path(argv[0], self, sizeof self);
    if (runners_dir) snprintf(rdir, sizeof rdir, "%s", runners_dir);
    else cli_default_runners(self, rdir, sizeof rdir);
    /* Beside the store: <store minus .sqlite>-files/ and report/. */
    char stem[PATH_MAX];
    snprintf(stem, sizeof stem, "%s", store_path);
    char *dot = strrchr(stem, '.');
    if (dot && strchr(dot, '/') == NULL) *dot = 0;
    snprintf(wdir, sizeof wdir, "%s", work ? work : stem);
    if (!work) strncat(wdir, "-files", sizeof wdir - strlen(wdir) - 1);
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", store_path);
    snprintf(repdir, sizeof repdir, "%s", report_dir ? report_dir : dirname(tmp));
    if (!report_dir) strncat(repdir, "/report", sizeof repdir - strlen(repdir) - 1);

    cb_runners runners;
    cb_status st = cb_runners_load(rdir, self, &runners);
    if (st != CB_OK) return cli_status(st);
    cb_study_config cfg;
    st = cb_study_config_load(profile, &runners, &cfg);
    if (st != CB_OK) { cb_runners_free(&runners); return cli_status(st); }
    char threads_setting[PATH_MAX + 32];
    snprintf(threads_setting, sizeof threads_setting, "%s: \"threads\"", profile);
    if (cli_check_threads(threads_setting, cfg.threads)) { cb_study_config_free(&cfg); cb_runners_free(&runners); return 2; }
    char store_dir[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", store_path);
    snprintf(store_dir, sizeof store_dir, "%s", dirname(tmp));
    if (cli_prepare_out_dir(store_dir)) { cb_study_config_free(&cfg); cb_runners_free(&runners); return 1; }
    /* The locks before the store is opened: a second study touches nothing,
     * not even the schema of a store the first one is creating. */
    char lock_path[PATH_MAX + 64], what[PATH_MAX + 64];
    cb_store_lock_path(store_path, lock_path, sizeof lock_path);
    snprintf(what, sizeof what, "the results store %s", store_path);
    cb_lock *store_lock = NULL, *work_lock = NULL;
    st = cb_lock_acquire(lock_path, what, wait, quiet, &store_lock);
    if (st == CB_OK) st = cb_mkdirs(wdir);
    if (st == CB_OK) {
        snprintf(lock_path, sizeof lock_path, "%s/.crossbind-study.lock", wdir);
        snprintf(what, sizeof what, "the work directory %s", wdir);
        st = cb_lock_acquire(lock_path, what, wait, quiet, &work_lock);
    }
    cb_store *store = NULL;
    if (st == CB_OK) st = cb_store_open(store_path, CB_STORE_CREATE, &store);
    if (st != CB_OK) {
        cb_lock_release(work_lock);
        cb_lock_release(store_lock);
        cb_study_config_free(&cfg);
        cb_runners_free(&runners);
        return cli_status(st);
    }
    cb_proc_catch_interrupts();
    cb_study_options opt = {.self = self, .work_dir = wdir, .quiet = quiet, .lock = store_lock};
    cb_study_outcome out = {0};
    st = cb_study_run(&cfg, &runners, store, &opt, &out);
    int64_t id = out.study_id;
    int rc = 0;
    if (cb_proc_interrupted()) {
        fprintf(stderr, "crossbind: study interrupted; what was measured is in %s; run the same command to resume\n",
                store_path);
        rc = 130;
    } else if (st != CB_OK) {
        rc = cli_status(st);
    }
    if (rc == 0 && !no_report && id) {
        cb_status rs = cb_report_write(store, id, repdir);
        if (rs != CB_OK) rc = cli_status(rs);
        else printf("report: %s/index.html\n", repdir);
    }
    if (rc == 0) {
        printf("store: %s (study %lld)\n", store_path, (long long)id);
        if (out.unavailable)
            fprintf(stderr, "crossbind: %d measurement(s) are unavailable: their binding is not installed here (the "
                    "report names it and its install command); install it and run the same command to add them\n",
                    out.unavailable);
        if (out.failures) {
            fprintf(stderr, "crossbind: %d measurement(s) failed; the report and the store name them; run the same "
                    "command to try them again\n", out.failures);
            rc = 1;
        }
    }
    cb_store_close(store);
    cb_lock_release(work_lock);
    cb_lock_release(store_lock);
    cb_study_config_free(&cfg);
    cb_runners_free(&runners);
    return rc;
}

static int open_existing(const char *path, int64_t want, cb_store **store, int64_t *id)
{
    /* Read-only: reading needs no write permission, and a reader never changes a store. */
    cb_status st = cb_store_open(path, CB_STORE_READ, store);
    if (st != CB_OK) return cli_status(st);
    int rc = 0;
    if (want) {
        /* An unknown id would otherwise export empty tables without a word. */
        int found = 0;
        st = cb_store_exists(*store, &found, "SELECT 1 FROM study WHERE id=?", "i", (int64_t)want);
        if (st != CB_OK) rc = cli_status(st);
        else if (!found) rc = cli_error("%s: no study %lld in this store", path, (long long)want);
        *id = want;
    } else {
        rc = latest_study(*store, id);
        if (rc == -1) rc = cli_error("%s: the store holds no study yet", path);
    }
    if (rc) cb_store_close(*store);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    const char *store_path = DEFAULT_STORE, *out = NULL;
    long want = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: crossbind report [--store PATH] [--study ID] [--out DIR]\n"
                   "  Writes index.html (inline SVG figures), report.md and tables/*.csv for a study\n"
                   "  (default: the store's latest), also while that study is still running.\n");
            return 0;
        } else if (!strcmp(a, "--store")) { if (!(store_path = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--out")) { if (!(out = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--study")) { if (!(v = cli_value(argc, argv, &i)) || cli_long("--study", v, 1, 1L << 40, &want)) return 2; }
        else return cli_error("report: unknown option '%s' (see crossbind report --help)", a);
    }
    char tmp[PATH_MAX], dir[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", store_path);
    snprintf(dir, sizeof dir, "%s/report", dirname(tmp));
    cb_store *store;
    int64_t id;
    int rc = open_existing(store_path, want, &store, &id);
    if (rc) return rc;
    cb_status st = cb_report_write(store, id, out ? out : dir);
    cb_store_close(store);
    if (st != CB_OK) return cli_status(st);
    printf("report: %s/index.html\n", out ? out : dir);
    return 0;
}

int cmd_results(int argc, char **argv)
{
    const char *store_path = DEFAULT_STORE, *csv = NULL, *json = NULL;
    long want = 0;
    if (argc >= 2 && strcmp(argv[1], "export") && strcmp(argv[1], "--help") && strcmp(argv[1], "-h"))
        return cli_error("results: unknown action '%s' (known: export; see crossbind results --help)", argv[1]);
    if (argc < 2 || strcmp(argv[1], "export")) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: crossbind results export [--store PATH] [--study ID] --csv DIR | --json FILE\n"
                "  Every table of a study: CSV files (one per table) or one JSON document.\n");
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) return 0;
        return argc < 2 ? 2 : cli_error("results: unknown action '%s' (known: export)", argv[1]);
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--store")) { if (!(store_path = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--csv")) { if (!(csv = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--json")) { if (!(json = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--study")) { if (!(v = cli_value(argc, argv, &i)) || cli_long("--study", v, 1, 1L << 40, &want)) return 2; }
        else return cli_error("results export: unknown option '%s' (see crossbind results --help)", a);
    }
    if (!csv == !json) return cli_error("results export: give exactly one of --csv DIR and --json FILE");
    cb_store *store;
    int64_t id;
    int rc = open_existing(store_path, want, &store, &id);
    if (rc) return rc;
    cb_status st = csv ? cb_results_export_csv(store, id, csv) : cb_results_export_json(store, id, json);
    cb_store_close(store);
    if (st != CB_OK) return cli_status(st);
    printf("exported study %lld to %s\n", (long long)id, csv ? csv : json);
    return 0;
}
