/* The study harness (protocol sections 3 to 5): configuration, runner
 * manifests, the experiment matrix and its execution. Internal to the
 * crossbind command. */
#ifndef CB_STUDY_H
#define CB_STUDY_H

#include <stdint.h>
#include "crossbind/status.h"
#include "store.h"

#define CB_MAX_LIST 16
#define CB_NAME 32

/* A binding as its runner's manifest declares it (runners/NAME/manifest.json). */
typedef struct cb_runner {
    char name[CB_NAME], framework[64], language[CB_NAME];
    char dir[800];
    char *command[8];  int ncommand;        /* the runner's argv prefix */
    char *version_cmd[8]; int nversion;      /* prints the binding's versions */
    char train[CB_MAX_LIST][CB_NAME]; int ntrain;     /* models it trains */
    char infer[CB_MAX_LIST][CB_NAME]; int ninfer;     /* models it evaluates */
    char writes[8][CB_NAME]; int nwrites;             /* formats a training saves */
    char loads[8][CB_NAME]; int nloads;               /* formats it evaluates */
    char native[CB_NAME];                             /* its own parameters format */
    char install[256];                                /* the command that provides its environment ("" if none) */
    char devices[4][CB_NAME]; int ndevices;
    char *bench_cmd[8]; int nbench_cmd;        /* its benchmark worker (default: command + "bench") */
    char *export_cmd[8]; int nexport_cmd;      /* converts canonical safetensors to a format it writes (none: 0) */
    char bench[4][CB_NAME]; int nbench;               /* benchmark kinds its `bench` command measures */
    char bench_env[4][CB_NAME]; int nbench_env;       /* alternative settings "VAR=value" to try, fastest used */
    int framework_default;                            /* "framework_default": true: its framework's default binding */
    char library[512];                                /* "library": which library build and version, shared or bundled */
    /* A directory with unavailable.json instead of a manifest: a binding
     * that cannot be installed on this kind of machine. It has no command;
     * a study lists it with the reason and never runs it. */
    int declared_unavailable;
    char reason[512];
    char *manifest;                                   /* the file's text (owned): manifest.json or unavailable.json */
} cb_runner;

typedef struct cb_runners { cb_runner *items; int count; } cb_runners;

/* Loads every runners/<name>/manifest.json (and every unavailable.json of
 * a directory without one) under `dir`; `self` replaces "{crossbind}" (the
 * path of this crossbind command) in commands. Two manifests of one
 * framework that both say "framework_default": true are refused, naming
 * both. */
cb_status cb_runners_load(const char *dir, const char *self, cb_runners *out);
/* One manifest's text (`file` names it in messages, `dir` is its runner's
 * directory): what cb_runners_load does with each runners/NAME/manifest.json.
 * cb_runner_release frees what a parsed runner owns. */
cb_status cb_runner_parse(const char *text, size_t len, const char *file, const char *dir, const char *self,
                          cb_runner *r);
void cb_runner_release(cb_runner *r);
void cb_runners_free(cb_runners *r);
const cb_runner *cb_runners_find(const cb_runners *r, const char *name);
int cb_runner_has(const char list[][CB_NAME], int n, const char *item);
/* The binding's versions as its version command prints them, on one line
 * ("not reported" without one); the command's output goes to work_dir.
 * Returns 0 when the command failed: the binding's environment is missing,
 * and `version` says why. */
int cb_runner_version(const cb_runner *r, const char *work_dir, char *version, size_t cap);
/* "install it with: COMMAND", or that the manifest names none: the hint
 * every message about a missing environment ends with. */
void cb_runner_install_hint(const cb_runner *r, char *out, size_t cap);
/* Processor, cores, memory and kernel, on one line. */
void cb_machine_describe(char *out, size_t cap);
/* "parameters" or "serialization" for a model file format, NULL if unknown. */
const char *cb_format_load_mode(const char *format);

/* A binding of a study, as far as choosing its framework's default goes. */
typedef struct {
    const char *name, *framework;
    int runnable;   /* it has a manifest (not unavailable.json) */
    int flagged;    /* its manifest says "framework_default": true */
    int trains;     /* it trains some model */
} cb_fw_member;
typedef struct { const char *framework, *binding; } cb_fw_override; /* the configuration's "defaults" */
enum { CB_DEFAULT_NONE, CB_DEFAULT_CONFIG, CB_DEFAULT_MANIFEST, CB_DEFAULT_FIRST };
/* def[i]: the index of member i's framework default (-1 for a member that
 * cannot run); why[i] (may be NULL): how it was chosen. In this order: the
 * configuration's override for the framework, the member whose manifest
 * flags it, the first member (in the study's order) that trains, the
 * first member. Overrides are trusted to name a runnable member of their
 * framework (the configuration checks that). */
void cb_framework_defaults(const cb_fw_member *m, int n, const cb_fw_override *ov, int nov, int *def, int *why);

typedef struct cb_data_source { char format[CB_NAME]; char path[512]; char name[600]; int stand_in; } cb_data_source;

/* Fills `name` and `stand_in` from the directory (a stand-in's README says so). */
void cb_data_describe(cb_data_source *d);

typedef struct cb_study_config {
    char profile[256];
    char models[CB_MAX_LIST][CB_NAME]; int nmodels;
    char bindings[CB_MAX_LIST][CB_NAME]; int nbindings;
    char reference[CB_NAME];                   /* trains the reference models (RQ2): by default PyTorch's default binding */
    char def_framework[CB_MAX_LIST][64], def_binding[CB_MAX_LIST][CB_NAME]; int ndefaults; /* "defaults" */
    int default_of[CB_MAX_LIST];               /* per binding: the index of its framework's default (-1: cannot run) */
    int init_shared;                           /* "init": "shared": one initial-weights file per model and run */
    char devices[4][CB_NAME]; int ndevices;
    int runs[CB_MAX_LIST], epochs[CB_MAX_LIST];  /* per model */
    long limit_train[CB_MAX_LIST], limit_test[CB_MAX_LIST];
    char data_format[CB_MAX_LIST][CB_NAME];      /* per model: mnist, cifar or imdb */
    int threads, repeat, subactivities;
    char optimizer[CB_NAME];                     /* "lr-only" (the published study) or "momentum" */
    double timeout_s;
    cb_data_source data[3];                      /* mnist, cifar, imdb */
    char *canonical;                             /* everything that changes a measurement, as JSON (owned) */
} cb_study_config;

/* Loads a profile: "quick", "paper", or a JSON file. Unknown models,
 * bindings, devices and keys are refused with a message naming them. */
cb_status cb_study_config_load(const char *profile, const cb_runners *runners, cb_study_config *out);
/* The same for a configuration's text in memory; `profile` names it in
 * messages and in the study's record. */
cb_status cb_study_config_parse(const char *text, size_t len, const char *profile, const cb_runners *runners,
                                cb_study_config *out);
void cb_study_config_free(cb_study_config *c);
int cb_study_model_index(const cb_study_config *c, const char *model);

typedef struct cb_study_options {
    const char *self;        /* this crossbind command */
    const char *work_dir;    /* trained models, logits and runner logs */
    int quiet;
    struct cb_lock *lock;    /* the store's lock this process holds (records the study id), or NULL */
} cb_study_options;

/* What a run of the study left to look at. A measurement of a binding whose
 * environment is missing is 'unavailable', not failed: the user chose not
 * to install it, and the other bindings' results are complete without it. */
typedef struct cb_study_outcome {
    int64_t study_id;
    int failures;     /* measurements that ran and failed this time */
    int unavailable;  /* measurements stored as unavailable this time */
} cb_study_outcome;

/* Runs (or resumes) the study in `store`. Failed runs are recorded and the
 * study goes on; it stops early only when interrupted or when the store
 * cannot be written. */
cb_status cb_study_run(const cb_study_config *c, const cb_runners *runners, cb_store *store,
                       const cb_study_options *opt, cb_study_outcome *outcome);

#endif
