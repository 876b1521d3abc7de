/* Study configuration: the built-in profiles and configuration files.
 *
 * A configuration is a JSON object; per-model settings take a number or an
 * object of model names with an optional "default":
 *   {"models": ["lenet5", "vgg16"], "bindings": ["crossbind", "pytorch"],
 *    "reference": "pytorch", "defaults": {"PyTorch": "pytorch"}, "init": "shared",
 *    "runs": 5, "epochs": {"default": 200},
 *    "limit_train": 0, "limit_test": 0, "devices": ["cpu"], "threads": 2,
 *    "repeat": 5, "optimizer": "lr-only", "timeout_s": 86400,
 *    "subactivities": true, "data": {"mnist": "DIR", "cifar": "DIR", "imdb": "DIR"}}
 * "models" and "bindings" may be "all". Anything else is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../core/file.h"
#include "../core/json.h"
#include "crossbind/data.h"
#include "crossbind/model.h"
#include "study.h"
#include "validate.h"

/* The README's main job: every implemented model and binding on the
 * package stand-ins, with subsets and short schedules sized so that every
 * binding of both frameworks (six that train) finishes in well under half an
 * hour on a 2-core machine: the recurrent models and VGG-16 see 128 samples. */
static const char quick_profile[] =
    "{\"models\": \"all\", \"bindings\": \"all\", \"init\": \"shared\","
    " \"runs\": {\"default\": 3, \"vgg16\": 2, \"lstm\": 1, \"gru\": 1, \"gru-rb\": 1},"
    " \"epochs\": {\"default\": 3, \"vgg16\": 2, \"lstm\": 2, \"gru\": 2, \"gru-rb\": 2},"
    " \"limit_train\": {\"default\": 2048, \"vgg16\": 128, \"lstm\": 128, \"gru\": 128, \"gru-rb\": 128},"
    " \"limit_test\": {\"default\": 1000, \"vgg16\": 128, \"lstm\": 128, \"gru\": 128, \"gru-rb\": 128},"
    " \"devices\": [\"cpu\"], \"repeat\": 5, \"optimizer\": \"lr-only\", \"timeout_s\": 900,"
    " \"subactivities\": true}";

/* The full protocol: five runs, 200 epochs (CNNs) or 30 (RNNs), full data. */
static const char paper_profile[] =
    "{\"models\": \"all\", \"bindings\": \"all\", \"init\": \"own\", \"runs\": 5,"
    " \"epochs\": {\"default\": 200, \"lstm\": 30, \"gru\": 30, \"gru-rb\": 30}, \"limit_train\": 0,"
    " \"limit_test\": 0, \"devices\": [\"cpu\"], \"repeat\": 5, \"optimizer\": \"lr-only\","
    " \"timeout_s\": 1209600, \"subactivities\": true}";

static const char *const known_keys[] = {"name", "models", "bindings", "reference", "defaults", "init", "runs", "epochs", "limit_train",
                                         "limit_test", "devices", "threads", "repeat", "optimizer", "timeout_s",
                                         "subactivities", "data", NULL};

int cb_study_model_index(const cb_study_config *c, const char *model)
{
    for (int i = 0; i < c->nmodels; i++) if (!strcmp(c->models[i], model)) return i;
    return -1;
}

/* The range comes first: converting a double beyond long (1e300, or the
 * infinity that 1e999 reads as) is undefined behaviour. */
static int is_int(const cb_json *v, double lo, double hi)
{
    return v->type == CB_JSON_NUM && v->num >= lo && v->num <= hi && v->num == (double)(long)v->num;
}

/* A per-model integer setting. */
static cb_status per_model(const cb_json *cfg, const char *key, const char *what, cb_study_config *c, double lo,
                           double hi, long dflt, long *out)
{
    const cb_json *v = cb_json_get(cfg, key);
    for (int i = 0; i < c->nmodels; i++) out[i] = dflt;
    if (!v) return CB_OK;
    if (is_int(v, lo, hi)) {
        for (int i = 0; i < c->nmodels; i++) out[i] = (long)v->num;
        return CB_OK;
    }
    if (v->type != CB_JSON_OBJ)
        return cb_fail(CB_ERR_INVALID_ARG, "%s: \"%s\" must be an integer in [%g, %g] or an object of models", what, key, lo, hi);
    const cb_json *d = cb_json_get(v, "default");
    if (d) {
        if (!is_int(d, lo, hi)) return cb_fail(CB_ERR_INVALID_ARG, "%s: \"%s\".default must be an integer in [%g, %g]", what, key, lo, hi);
        for (int i = 0; i < c->nmodels; i++) out[i] = (long)d->num;
    }
    for (int k = 0; k < v->count; k++) {
        if (!strcmp(v->keys[k], "default")) continue;
        int known = 0;
        for (const char *const *n = cb_model_names(); *n; n++) known |= !strcmp(*n, v->keys[k]);
        if (!known) return cb_fail(CB_ERR_NOT_FOUND, "%s: \"%s\" names an unknown model \"%s\"", what, key, v->keys[k]);
        if (!is_int(&v->items[k], lo, hi))
            return cb_fail(CB_ERR_INVALID_ARG, "%s: \"%s\".%s must be an integer in [%g, %g]", what, key, v->keys[k], lo, hi);
        int i = cb_study_model_index(c, v->keys[k]);
        if (i >= 0) out[i] = (long)v->items[k].num;
    }
    return CB_OK;
}

static cb_status name_list(const cb_json *cfg, const char *key, const char *what, char (*out)[CB_NAME], int cap,
                           int *n, int *all)
{
    const cb_json *v = cb_json_get(cfg, key);
    *n = 0;
    if (all) *all = 0;
    if (!v) {
        if (all) { *all = 1; return CB_OK; }
        return CB_OK;
    }
    if (all && v->type == CB_JSON_STR && !strcmp(v->str, "all")) { *all = 1; return CB_OK; }
    if (v->type != CB_JSON_ARR || v->count == 0 || v->count > cap)
        return cb_fail(CB_ERR_INVALID_ARG, "%s: \"%s\" must be %sa list of 1 to %d names", what, key, all ? "\"all\" or " : "", cap);
    for (int i = 0; i < v->count; i++) {
        if (v->items[i].type != CB_JSON_STR || !cb_valid_name(v->items[i].str))
            return cb_fail(CB_ERR_INVALID_ARG, "%s: \"%s\" item %d must be a name (1 to %d of A-Z a-z 0-9 . _ -, not "
                           "starting with . or -: names become parts of file paths)", what, key, i + 1, CB_NAME_MAX);
        for (int j = 0; j < *n; j++)
            if (!strcmp(out[j], v->items[i].str)) return cb_fail(CB_ERR_INVALID_ARG, "%s: \"%s\" lists %s twice", what, key, out[j]);
        strcpy(out[(*n)++], v->items[i].str);
    }
    return CB_OK;
}

/* The first two lines of DIR/README.txt as one ("" if none). */
static void readme_line(const char *dir, char *line, size_t cap)
{
    char readme[700], second[256] = "";
    snprintf(readme, sizeof readme, "%s/README.txt", dir);
    FILE *f = fopen(readme, "r");
    line[0] = 0;
    if (f) {
        if (!fgets(line, (int)cap, f)) line[0] = 0;
        else if (!fgets(second, sizeof second, f)) second[0] = 0;
        fclose(f);
    }
    line[strcspn(line, "\n")] = 0;
    second[strcspn(second, "\n")] = 0;
    size_t n = strlen(line);
    if (second[0] && n + 1 < cap) snprintf(line + n, cap - n, " %s", second);
}

/* The description a report shows for a data directory. crossbind's
 * stand-ins say on their README's first line that they are one ("A
 * stand-in in ..., NOT ..."); a prepared IMDb directory names the directory
 * it was made from, whose README is read in turn; Debian's Fashion-MNIST is
 * named as the MNIST stand-in it is; anything else is described only by its
 * format. */
void cb_data_describe(cb_data_source *d)
{
    d->stand_in = 0;
    if (!strcmp(d->format, "mnist") && strstr(d->path, "fashion-mnist")) {
        snprintf(d->name, sizeof d->name, "Fashion-MNIST (Debian dataset-fashion-mnist): a stand-in for MNIST");
        d->stand_in = 1;
        return;
    }
    char line[512], source[512] = "";
    readme_line(d->path, line, sizeof line);
    static const char prepared[] = "IMDb-format data prepared by crossbind data imdb-prepare from ";
    if (!strncmp(line, prepared, sizeof prepared - 1)) {
        snprintf(source, sizeof source, "%s", line + sizeof prepared - 1);
        source[strcspn(source, ":")] = 0;
        readme_line(source, line, sizeof line);
    }
    if (!strncmp(line, "A stand-in", 10) && strstr(line, "NOT")) {
        snprintf(d->name, sizeof d->name, "%s%s", line, source[0] ? " (tokenised by crossbind data imdb-prepare)" : "");
        d->stand_in = 1;
    } else {
        const char *fmt = !strcmp(d->format, "mnist") ? "MNIST-format (IDX)" :
                          !strcmp(d->format, "cifar") ? "CIFAR-10-format (binary batches)" : "IMDb-format";
        snprintf(d->name, sizeof d->name, "%s data, source not stated", fmt);
    }
}

/* "defaults": {"FRAMEWORK": "binding", ...} overrides the manifests'
 * "framework_default"; then every binding's framework default is resolved
 * (cb_framework_defaults). */
static cb_status defaults(const cb_json *cfg, const char *what, const cb_runners *runners, cb_study_config *c)
{
    const cb_json *v = cb_json_get(cfg, "defaults");
    c->ndefaults = 0;
    if (v && (v->type != CB_JSON_OBJ || v->count > CB_MAX_LIST))
        return cb_fail(CB_ERR_INVALID_ARG, "%s: \"defaults\" must be an object of at most %d frameworks, each naming "
                       "its default binding: {\"PyTorch\": \"pytorch-python\"}", what, CB_MAX_LIST);
    for (int k = 0; v && k < v->count; k++) {
        const char *fw = v->keys[k];
        const cb_json *b = &v->items[k];
        if (b->type != CB_JSON_STR)
            return cb_fail(CB_ERR_INVALID_ARG, "%s: \"defaults\".%s must be a binding's name", what, fw);
        int known_fw = 0;
        for (int i = 0; i < c->nbindings; i++)
            known_fw |= !strcmp(cb_runners_find(runners, c->bindings[i])->framework, fw);
        if (!known_fw || strlen(fw) >= sizeof c->def_framework[0])
            return cb_fail(CB_ERR_NOT_FOUND, "%s: \"defaults\" names the framework \"%.80s\", which no binding of the "
                           "study belongs to", what, fw);
        const cb_runner *r = NULL;
        for (int i = 0; i < c->nbindings; i++) if (!strcmp(c->bindings[i], b->str)) r = cb_runners_find(runners, b->str);
        if (!r || r->declared_unavailable || strcmp(r->framework, fw))
            return cb_fail(CB_ERR_INVALID_ARG, "%s: \"defaults\".%s is \"%.60s\": the default of a framework must be "
                           "one of the study's bindings of that framework that can run here", what, fw, b->str);
        snprintf(c->def_framework[c->ndefaults], sizeof c->def_framework[0], "%s", fw);
        snprintf(c->def_binding[c->ndefaults++], CB_NAME, "%s", b->str);
    }
    /* In a fixed order, so that the canonical configuration does not depend on the file's. */
    for (int i = 1; i < c->ndefaults; i++)
        for (int j = i; j > 0 && strcmp(c->def_framework[j - 1], c->def_framework[j]) > 0; j--) {
            char f[64], b[CB_NAME];
            memcpy(f, c->def_framework[j], sizeof f); memcpy(c->def_framework[j], c->def_framework[j - 1], sizeof f);
            memcpy(c->def_framework[j - 1], f, sizeof f);
            memcpy(b, c->def_binding[j], sizeof b); memcpy(c->def_binding[j], c->def_binding[j - 1], sizeof b);
            memcpy(c->def_binding[j - 1], b, sizeof b);
        }
    cb_fw_member m[CB_MAX_LIST];
    cb_fw_override ov[CB_MAX_LIST];
    for (int i = 0; i < c->nbindings; i++) {
        const cb_runner *r = cb_runners_find(runners, c->bindings[i]);
        m[i] = (cb_fw_member){r->name, r->framework, !r->declared_unavailable, r->framework_default, r->ntrain > 0};
    }
    for (int k = 0; k < c->ndefaults; k++) ov[k] = (cb_fw_override){c->def_framework[k], c->def_binding[k]};
    cb_framework_defaults(m, c->nbindings, ov, c->ndefaults, c->default_of, NULL);
    return CB_OK;
}

static cb_status parse(const cb_json *cfg, const char *what, const cb_runners *runners, cb_study_config *c)
{
    if (cfg->type != CB_JSON_OBJ) return cb_fail(CB_ERR_INVALID_ARG, "%s: a study configuration is a JSON object", what);
    for (int k = 0; k < cfg->count; k++) {
        int known = 0;
        for (const char *const *n = known_keys; *n; n++) known |= !strcmp(*n, cfg->keys[k]);
        if (!known) return cb_fail(CB_ERR_INVALID_ARG, "%s: unknown setting \"%s\"", what, cfg->keys[k]);
    }
    int all;
    cb_status st = name_list(cfg, "models", what, c->models, CB_MAX_LIST, &c->nmodels, &all);
    if (st != CB_OK) return st;
    if (all) /* every model some binding trains */
        for (const char *const *n = cb_model_names(); *n && c->nmodels < CB_MAX_LIST; n++)
            for (int r = 0; r < runners->count; r++)
                if (cb_runner_has(runners->items[r].train, runners->items[r].ntrain, *n)) {
                    strcpy(c->models[c->nmodels++], *n);
                    break;
                }
    /* The registry knows each model's data format: building the model (VGG-16's
     * 15 million parameters) only to ask it would cost a configuration read
     * tens of megabytes and milliseconds. */
    for (int i = 0; i < c->nmodels; i++) {
        const char *format = cb_model_data_format(c->models[i]);
        if (!format) {
            cb_buf known = {0};
            for (const char *const *n = cb_model_names(); *n; n++) cb_buf_printf(&known, "%s%s", known.len ? ", " : "", *n);
            st = cb_fail(CB_ERR_NOT_FOUND, "%s: unknown model \"%s\" (known: %s)", what, c->models[i],
                         known.data ? known.data : "");
            cb_buf_free(&known);
            return st;
        }
        snprintf(c->data_format[i], CB_NAME, "%s", format[0] ? format : "mnist");
    }
    st = name_list(cfg, "bindings", what, c->bindings, CB_MAX_LIST, &c->nbindings, &all);
    if (st != CB_OK) return st;
    if (all) /* every binding that can run: unavailable.json directories are listed by the report anyway */
        for (int r = 0; r < runners->count && c->nbindings < CB_MAX_LIST; r++)
            if (!runners->items[r].declared_unavailable) strcpy(c->bindings[c->nbindings++], runners->items[r].name);
    for (int i = 0; i < c->nbindings; i++)
        if (!cb_runners_find(runners, c->bindings[i])) {
            cb_buf known = {0};
            for (int r = 0; r < runners->count; r++) cb_buf_printf(&known, "%s%s", r ? ", " : "", runners->items[r].name);
            st = cb_fail(CB_ERR_NOT_FOUND, "%s: unknown binding \"%s\" (runners with a manifest: %s)", what,
                         c->bindings[i], known.data ? known.data : "none");
            cb_buf_free(&known);
            return st;
        }
    if ((st = defaults(cfg, what, runners, c)) != CB_OK) return st;
    const cb_json *v = cb_json_get(cfg, "reference");
    if (v && v->type != CB_JSON_STR) return cb_fail(CB_ERR_INVALID_ARG, "%s: \"reference\" must be a binding's name", what);
    if (v) snprintf(c->reference, sizeof c->reference, "%s", v->str);
    else { /* PyTorch's default binding when it trains, else the first binding that trains */
        for (int i = 0; i < c->nbindings && !c->reference[0]; i++) {
            const cb_runner *r = cb_runners_find(runners, c->bindings[i]);
            if (!r->declared_unavailable && !strcmp(r->framework, "PyTorch") && c->default_of[i] >= 0) {
                const cb_runner *d = cb_runners_find(runners, c->bindings[c->default_of[i]]);
                if (d->ntrain) snprintf(c->reference, sizeof c->reference, "%s", d->name);
            }
        }
        for (int i = 0; i < c->nbindings && !c->reference[0]; i++) {
            const cb_runner *r = cb_runners_find(runners, c->bindings[i]);
            if (!r->declared_unavailable && r->ntrain) snprintf(c->reference, sizeof c->reference, "%s", r->name);
        }
        if (!c->reference[0])
            return cb_fail(CB_ERR_INVALID_ARG, "%s: no binding of the study trains a model, so there are no reference "
                           "models: add a binding that trains", what);
    }
    int ref_listed = 0;
    for (int i = 0; i < c->nbindings; i++) ref_listed |= !strcmp(c->bindings[i], c->reference);
    const cb_runner *ref = cb_runners_find(runners, c->reference);
    if (!ref_listed || !ref || !ref->ntrain)
        return cb_fail(CB_ERR_INVALID_ARG, "%s: the reference binding \"%s\" must be one of the study's bindings and "
                       "able to train", what, c->reference);
    if ((v = cb_json_get(cfg, "init"))) {
        if (v->type != CB_JSON_STR || (strcmp(v->str, "shared") && strcmp(v->str, "own")))
            return cb_fail(CB_ERR_INVALID_ARG, "%s: \"init\" must be \"shared\" (every binding starts a model's run "
                           "from one file of initial weights) or \"own\" (each binding's own initialisation from the "
                           "run's seed, as the published study)", what);
        c->init_shared = !strcmp(v->str, "shared");
    }
    st = name_list(cfg, "devices", what, c->devices, 4, &c->ndevices, NULL);
    if (st != CB_OK) return st;
    if (c->ndevices == 0) { strcpy(c->devices[0], "cpu"); c->ndevices = 1; }
    for (int i = 0; i < c->ndevices; i++)
        if (strcmp(c->devices[i], "cpu") && strcmp(c->devices[i], "cuda"))
            return cb_fail(CB_ERR_NOT_FOUND, "%s: unknown device \"%s\" (known: cpu, cuda)", what, c->devices[i]);
    long tmp[CB_MAX_LIST];
    if ((st = per_model(cfg, "runs", what, c, 1, 5, 5, tmp)) != CB_OK) return st;
    for (int i = 0; i < c->nmodels; i++) c->runs[i] = (int)tmp[i];
    long dflt_epochs[CB_MAX_LIST];
    if ((st = per_model(cfg, "epochs", what, c, 1, 100000, 0, dflt_epochs)) != CB_OK) return st;
    for (int i = 0; i < c->nmodels; i++) {
        cb_train_defaults d;
        if (dflt_epochs[i] == 0 && cb_model_train_defaults(c->models[i], &d) == CB_OK) dflt_epochs[i] = d.epochs;
        c->epochs[i] = (int)dflt_epochs[i];
    }
    if ((st = per_model(cfg, "limit_train", what, c, 0, 1e9, 0, c->limit_train)) != CB_OK) return st;
    if ((st = per_model(cfg, "limit_test", what, c, 0, 1e9, 0, c->limit_test)) != CB_OK) return st;
    c->threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (c->threads < 1) c->threads = 1;
    c->repeat = 5;
    c->timeout_s = 86400;
    c->subactivities = 1;
    strcpy(c->optimizer, "lr-only");
    if ((v = cb_json_get(cfg, "threads"))) {
        if (!is_int(v, 1, 1024)) return cb_fail(CB_ERR_INVALID_ARG, "%s: \"threads\" must be an integer in [1, 1024]", what);
        c->threads = (int)v->num;
    }
    if ((v = cb_json_get(cfg, "repeat"))) {
        if (!is_int(v, 1, 1000)) return cb_fail(CB_ERR_INVALID_ARG, "%s: \"repeat\" must be an integer in [1, 1000]", what);
        c->repeat = (int)v->num;
    }
    if ((v = cb_json_get(cfg, "timeout_s"))) {
        if (v->type != CB_JSON_NUM || !(v->num > 0)) return cb_fail(CB_ERR_INVALID_ARG, "%s: \"timeout_s\" must be a positive number", what);
        c->timeout_s = v->num;
    }
    if ((v = cb_json_get(cfg, "subactivities"))) {
        if (v->type != CB_JSON_BOOL) return cb_fail(CB_ERR_INVALID_ARG, "%s: \"subactivities\" must be true or false", what);
        c->subactivities = v->num != 0;
    }
    if ((v = cb_json_get(cfg, "optimizer"))) {
        if (v->type != CB_JSON_STR || (strcmp(v->str, "lr-only") && strcmp(v->str, "momentum")))
            return cb_fail(CB_ERR_INVALID_ARG, "%s: \"optimizer\" must be \"lr-only\" (the published study) or "
                           "\"momentum\" (the original's momentum variant)", what);
        strcpy(c->optimizer, v->str);
    }
    static const char *const formats[3] = {"mnist", "cifar", "imdb"};
    const cb_json *data = cb_json_get(cfg, "data");
    if (data && data->type != CB_JSON_OBJ) return cb_fail(CB_ERR_INVALID_ARG, "%s: \"data\" must be an object of directories", what);
    for (int k = 0; data && k < data->count; k++) {
        int known = 0;
        for (int f = 0; f < 3; f++) known |= !strcmp(data->keys[k], formats[f]);
        if (!known || data->items[k].type != CB_JSON_STR || strlen(data->items[k].str) >= sizeof c->data[0].path)
            return cb_fail(CB_ERR_INVALID_ARG, "%s: \"data\".%s: the keys are mnist, cifar and imdb, each a directory",
                           what, data->keys[k]);
    }
    for (int f = 0; f < 3; f++) {
        strcpy(c->data[f].format, formats[f]);
        const cb_json *p = data ? cb_json_get(data, formats[f]) : NULL;
        snprintf(c->data[f].path, sizeof c->data[f].path, "%s", p ? p->str : cb_dataset_default_dir(formats[f]));
    }
    return CB_OK;
}

/* Everything that changes a measurement, in a fixed order: two commands
 * with the same canonical configuration are the same study. */
static char *canonical(const cb_study_config *c)
{
    cb_buf b = {0};
    cb_buf_printf(&b, "{\"models\": [");
    for (int i = 0; i < c->nmodels; i++) {
        cb_buf_printf(&b, "%s{\"model\": ", i ? ", " : "");
        cb_buf_json_string(&b, c->models[i]);
        cb_buf_printf(&b, ", \"runs\": %d, \"epochs\": %d, \"limit_train\": %ld, \"limit_test\": %ld}", c->runs[i],
                      c->epochs[i], c->limit_train[i], c->limit_test[i]);
    }
    cb_buf_printf(&b, "], \"bindings\": [");
    for (int i = 0; i < c->nbindings; i++) {
        if (i) cb_buf_printf(&b, ", ");
        cb_buf_json_string(&b, c->bindings[i]);
    }
    cb_buf_printf(&b, "], \"reference\": ");
    cb_buf_json_string(&b, c->reference);
    /* Written only when set, so that a study configured as before keeps its identity. */
    if (c->ndefaults) {
        cb_buf_printf(&b, ", \"defaults\": {");
        for (int i = 0; i < c->ndefaults; i++) {
            if (i) cb_buf_printf(&b, ", ");
            cb_buf_json_string(&b, c->def_framework[i]);
            cb_buf_printf(&b, ": ");
            cb_buf_json_string(&b, c->def_binding[i]);
        }
        cb_buf_printf(&b, "}");
    }
    if (c->init_shared) cb_buf_printf(&b, ", \"init\": \"shared\"");
    cb_buf_printf(&b, ", \"devices\": [");
    for (int i = 0; i < c->ndevices; i++) {
        if (i) cb_buf_printf(&b, ", ");
        cb_buf_json_string(&b, c->devices[i]);
    }
    cb_buf_printf(&b, "], \"threads\": %d, \"repeat\": %d, \"optimizer\": ", c->threads, c->repeat);
    cb_buf_json_string(&b, c->optimizer);
    cb_buf_printf(&b, ", \"subactivities\": %s, \"data\": {", c->subactivities ? "true" : "false");
    for (int f = 0; f < 3; f++) {
        cb_buf_printf(&b, "%s\"%s\": ", f ? ", " : "", c->data[f].format);
        cb_buf_json_string(&b, c->data[f].path);
    }
    cb_buf_printf(&b, "}}");
    if (!cb_buf_ok(&b)) { cb_buf_free(&b); return NULL; }
    return b.data;
}

cb_status cb_study_config_parse(const char *text, size_t len, const char *profile, const cb_runners *runners,
                                cb_study_config *out)
{
    memset(out, 0, sizeof *out);
    cb_json cfg;
    cb_status st = cb_json_parse(text, len, profile, &cfg);
    if (st != CB_OK) return st;
    snprintf(out->profile, sizeof out->profile, "%s", profile);
    st = parse(&cfg, profile, runners, out);
    cb_json_free(&cfg);
    if (st == CB_OK && !(out->canonical = canonical(out))) st = cb_fail(CB_ERR_NOMEM, "out of memory");
    if (st != CB_OK) cb_study_config_free(out);
    return st;
}

cb_status cb_study_config_load(const char *profile, const cb_runners *runners, cb_study_config *out)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(profile, "quick")) return cb_study_config_parse(quick_profile, strlen(quick_profile), profile, runners, out);
    if (!strcmp(profile, "paper")) return cb_study_config_parse(paper_profile, strlen(paper_profile), profile, runners, out);
    unsigned char *file;
    size_t len;
    cb_status st = cb_read_file(profile, 1 << 20, &file, &len);
    if (st != CB_OK)
        return cb_fail(st, "profile '%s' is neither quick, paper nor a readable configuration file: %s", profile,
                       cb_last_error());
    st = cb_study_config_parse((const char *)file, len, profile, runners, out);
    free(file);
    return st;
}

void cb_study_config_free(cb_study_config *c)
{
    free(c->canonical);
    c->canonical = NULL;
}
