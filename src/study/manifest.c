/* Runner manifests: what each binding supports, read from
 * runners/<name>/manifest.json. Adding a binding means adding a runner
 * directory with a manifest; the harness reads nothing else about it. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../core/file.h"
#include "../core/json.h"
#include "study.h"
#include "validate.h"

const char *cb_format_load_mode(const char *format)
{
    if (!strcmp(format, "pt") || !strcmp(format, "safetensors")) return "parameters";
    if (!strcmp(format, "onnx") || !strcmp(format, "ts") || !strcmp(format, "savedmodel")) return "serialization";
    return NULL;
}

void cb_runner_install_hint(const cb_runner *r, char *out, size_t cap)
{
    if (r->install[0]) snprintf(out, cap, "install it with: %s", r->install);
    else snprintf(out, cap, "its manifest names no install command");
}

int cb_runner_has(const char list[][CB_NAME], int n, const char *item)
{
    for (int i = 0; i < n; i++) if (!strcmp(list[i], item)) return 1;
    return 0;
}

static cb_status get_str(const cb_json *m, const char *key, const char *file, char *out, size_t cap, int required)
{
    const cb_json *v = cb_json_get(m, key);
    if (!v) {
        if (!required) { out[0] = 0; return CB_OK; }
        return cb_fail(CB_ERR_FORMAT, "%s: the manifest has no \"%s\"", file, key);
    }
    if (v->type != CB_JSON_STR || strlen(v->str) >= cap || !v->str[0])
        return cb_fail(CB_ERR_FORMAT, "%s: \"%s\" must be a non-empty string of under %zu characters", file, key, cap);
    strcpy(out, v->str);
    return CB_OK;
}

/* Names in a manifest end up in file paths (train/<binding>/<model>/...,
 * final.<format>): each is checked where it is read. */
static cb_status check_name(const char *file, const char *key, const char *name)
{
    if (cb_valid_name(name)) return CB_OK;
    return cb_fail(CB_ERR_FORMAT, "%s: \"%s\" holds \"%.60s\", which is not a valid name: names become parts of file "
                   "paths, so each is 1 to %d of A-Z a-z 0-9 . _ - and does not start with . or -", file, key, name,
                   CB_NAME_MAX);
}

static cb_status get_name(const cb_json *m, const char *key, const char *file, char *out, size_t cap, int required)
{
    cb_status st = get_str(m, key, file, out, cap, required);
    if (st == CB_OK && out[0]) st = check_name(file, key, out);
    return st;
}

static cb_status get_list(const cb_json *m, const char *key, const char *file, char (*out)[CB_NAME], int cap, int *n,
                          int names)
{
    const cb_json *v = cb_json_get(m, key);
    *n = 0;
    if (!v) return CB_OK;
    if (v->type != CB_JSON_ARR || v->count > cap)
        return cb_fail(CB_ERR_FORMAT, "%s: \"%s\" must be a list of at most %d names", file, key, cap);
    for (int i = 0; i < v->count; i++) {
        const cb_json *e = &v->items[i];
        if (e->type != CB_JSON_STR || !e->str[0] || strlen(e->str) >= CB_NAME)
            return cb_fail(CB_ERR_FORMAT, "%s: \"%s\" item %d must be a short name", file, key, i + 1);
        if (names) {
            cb_status st = check_name(file, key, e->str);
            if (st != CB_OK) return st;
        }
        for (int j = 0; j < *n; j++)
            if (!strcmp(out[j], e->str))
                return cb_fail(CB_ERR_FORMAT, "%s: \"%s\" lists \"%s\" twice", file, key, e->str);
        strcpy(out[(*n)++], e->str);
    }
    return CB_OK;
}

/* Expands {dir} and {crossbind} in one argument. */
static char *expand(const char *arg, const char *dir, const char *self)
{
    cb_buf b = {0};
    for (const char *p = arg; *p;) {
        if (!strncmp(p, "{dir}", 5)) { cb_buf_printf(&b, "%s", dir); p += 5; }
        else if (!strncmp(p, "{crossbind}", 11)) { cb_buf_printf(&b, "%s", self); p += 11; }
        else cb_buf_append(&b, p++, 1);
    }
    if (!cb_buf_ok(&b)) { cb_buf_free(&b); return NULL; }
    if (!b.data) return strdup("");
    return b.data;
}

static cb_status get_argv(const cb_json *m, const char *key, const char *file, const char *dir, const char *self,
                          char **out, int *n, int required)
{
    const cb_json *v = cb_json_get(m, key);
    *n = 0;
    if (!v) return required ? cb_fail(CB_ERR_FORMAT, "%s: the manifest has no \"%s\"", file, key) : CB_OK;
    if (v->type != CB_JSON_ARR || v->count < 1 || v->count > 7)
        return cb_fail(CB_ERR_FORMAT, "%s: \"%s\" must be a command: a list of 1 to 7 strings", file, key);
    for (int i = 0; i < v->count; i++) {
        if (v->items[i].type != CB_JSON_STR) return cb_fail(CB_ERR_FORMAT, "%s: \"%s\" item %d is not a string", file, key, i + 1);
        if (!(out[i] = expand(v->items[i].str, dir, self))) return cb_fail(CB_ERR_NOMEM, "out of memory");
        *n = i + 1;
    }
    out[*n] = NULL;
    return CB_OK;
}

cb_status cb_runner_parse(const char *text, size_t len, const char *file, const char *dir, const char *self,
                          cb_runner *r)
{
    memset(r, 0, sizeof *r);
    cb_json m;
    cb_status st = cb_json_parse(text, len, file, &m);
    if (st != CB_OK) return st;
    r->manifest = malloc(len + 1); /* kept as a C string for the store */
    if (!r->manifest) { cb_json_free(&m); return cb_fail(CB_ERR_NOMEM, "out of memory"); }
    memcpy(r->manifest, text, len);
    r->manifest[len] = 0;
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    char fmt[64];
    if (m.type != CB_JSON_OBJ) st = cb_fail(CB_ERR_FORMAT, "%s: a manifest is a JSON object", file);
    if (st == CB_OK) st = get_str(&m, "format", file, fmt, sizeof fmt, 1);
    if (st == CB_OK && strcmp(fmt, "crossbind-runner/1"))
        st = cb_fail(CB_ERR_UNSUPPORTED, "%s: manifest format \"%s\" (this crossbind reads crossbind-runner/1)", file, fmt);
    if (st == CB_OK) st = get_name(&m, "binding", file, r->name, sizeof r->name, 1);
    if (st == CB_OK) st = get_str(&m, "framework", file, r->framework, sizeof r->framework, 1);
    if (st == CB_OK) st = get_str(&m, "language", file, r->language, sizeof r->language, 1);
    if (st == CB_OK) st = get_name(&m, "native_format", file, r->native, sizeof r->native, 0);
    if (st == CB_OK) st = get_str(&m, "install", file, r->install, sizeof r->install, 0);
    if (st == CB_OK) st = get_str(&m, "library", file, r->library, sizeof r->library, 0);
    if (st == CB_OK) {
        const cb_json *v = cb_json_get(&m, "framework_default");
        if (v && v->type != CB_JSON_BOOL)
            st = cb_fail(CB_ERR_FORMAT, "%s: \"framework_default\" must be true or false", file);
        r->framework_default = v && v->num != 0;
    }
    if (st == CB_OK) st = get_argv(&m, "command", file, dir, self, r->command, &r->ncommand, 1);
    if (st == CB_OK) st = get_argv(&m, "version_command", file, dir, self, r->version_cmd, &r->nversion, 0);
    if (st == CB_OK) st = get_list(&m, "train", file, r->train, CB_MAX_LIST, &r->ntrain, 1);
    if (st == CB_OK) st = get_list(&m, "infer", file, r->infer, CB_MAX_LIST, &r->ninfer, 1);
    if (st == CB_OK) st = get_list(&m, "writes", file, r->writes, 8, &r->nwrites, 1);
    if (st == CB_OK) st = get_list(&m, "loads", file, r->loads, 8, &r->nloads, 1);
    if (st == CB_OK) st = get_list(&m, "devices", file, r->devices, 4, &r->ndevices, 1);
    if (st == CB_OK) st = get_list(&m, "bench", file, r->bench, 4, &r->nbench, 1);
    if (st == CB_OK) st = get_argv(&m, "bench_command", file, dir, self, r->bench_cmd, &r->nbench_cmd, 0);
    if (st == CB_OK) st = get_list(&m, "bench_env", file, r->bench_env, 4, &r->nbench_env, 0);
    for (int i = 0; st == CB_OK && i < r->nbench; i++)
        if (strcmp(r->bench[i], "train") && strcmp(r->bench[i], "infer") && strcmp(r->bench[i], "latency") &&
            strcmp(r->bench[i], "startup"))
            st = cb_fail(CB_ERR_FORMAT, "%s: unknown benchmark kind \"%s\" (train, infer, latency, startup)", file,
                         r->bench[i]);
    for (int i = 0; st == CB_OK && i < r->nbench_env; i++)
        if (!strchr(r->bench_env[i], '=') || r->bench_env[i][0] == '=')
            st = cb_fail(CB_ERR_FORMAT, "%s: \"bench_env\" entries are VAR=value, got \"%s\"", file, r->bench_env[i]);
    for (int i = 0; st == CB_OK && i < r->nwrites + r->nloads; i++) {
        const char *f = i < r->nwrites ? r->writes[i] : r->loads[i - r->nwrites];
        if (!cb_format_load_mode(f))
            st = cb_fail(CB_ERR_FORMAT, "%s: unknown model format \"%s\" (known: pt, safetensors, onnx, ts, savedmodel)", file, f);
    }
    if (st == CB_OK && r->ntrain && (!r->native[0] || !cb_runner_has(r->writes, r->nwrites, r->native)))
        st = cb_fail(CB_ERR_FORMAT, "%s: a binding that trains needs a \"native_format\" among the formats it writes",
                     file);
    if (st == CB_OK && r->ndevices == 0) st = cb_fail(CB_ERR_FORMAT, "%s: \"devices\" lists none", file);
    for (int i = 0; st == CB_OK && i < r->ntrain; i++)
        if (!cb_runner_has(r->infer, r->ninfer, r->train[i]))
            st = cb_fail(CB_ERR_FORMAT, "%s: it trains %s but does not list it under \"infer\"", file, r->train[i]);
    cb_json_free(&m);
    if (st != CB_OK) cb_runner_release(r);
    return st;
}

/* runners/<name>/unavailable.json: {"binding", "framework", "language",
 * "reason"}: a binding that cannot be installed on this kind of machine. */
static cb_status parse_unavailable(const char *file, const char *dir, cb_runner *r)
{
    unsigned char *text;
    size_t len;
    cb_status st = cb_read_file(file, 1 << 16, &text, &len);
    if (st != CB_OK) return st;
    cb_json m;
    st = cb_json_parse((const char *)text, len, file, &m);
    if (st != CB_OK) { free(text); return st; }
    r->manifest = malloc(len + 1);
    if (!r->manifest) { cb_json_free(&m); free(text); return cb_fail(CB_ERR_NOMEM, "out of memory"); }
    memcpy(r->manifest, text, len);
    r->manifest[len] = 0;
    free(text);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    r->declared_unavailable = 1;
    if (m.type != CB_JSON_OBJ) st = cb_fail(CB_ERR_FORMAT, "%s: unavailable.json is a JSON object", file);
    if (st == CB_OK) st = get_name(&m, "binding", file, r->name, sizeof r->name, 1);
    if (st == CB_OK) st = get_str(&m, "framework", file, r->framework, sizeof r->framework, 1);
    if (st == CB_OK) st = get_str(&m, "language", file, r->language, sizeof r->language, 1);
    if (st == CB_OK) st = get_str(&m, "reason", file, r->reason, sizeof r->reason, 1);
    if (st == CB_OK) st = get_str(&m, "library", file, r->library, sizeof r->library, 0);
    cb_json_free(&m);
    return st;
}

static cb_status parse_manifest(const char *file, const char *dir, const char *self, cb_runner *r)
{
    unsigned char *text;
    size_t len;
    cb_status st = cb_read_file(file, 1 << 20, &text, &len);
    if (st != CB_OK) return st;
    st = cb_runner_parse((const char *)text, len, file, dir, self, r);
    free(text);
    return st;
}

void cb_runner_release(cb_runner *r)
{
    for (int i = 0; i < r->ncommand; i++) free(r->command[i]);
    for (int i = 0; i < r->nversion; i++) free(r->version_cmd[i]);
    for (int i = 0; i < r->nbench_cmd; i++) free(r->bench_cmd[i]);
    free(r->manifest);
    memset(r, 0, sizeof *r);
}

static int cmp_runner(const void *a, const void *b)
{
    return strcmp(((const cb_runner *)a)->name, ((const cb_runner *)b)->name);
}

cb_status cb_runners_load(const char *dir, const char *self, cb_runners *out)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d) return cb_fail(CB_ERR_NOT_FOUND, "%s: no runners directory (give one with --runners DIR)", dir);
    cb_status st = CB_OK;
    struct dirent *e;
    while (st == CB_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[768], file[800];
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        snprintf(file, sizeof file, "%s/manifest.json", sub);
        char unav[800];
        snprintf(unav, sizeof unav, "%s/unavailable.json", sub);
        int has_manifest = access(file, F_OK) == 0, has_unav = access(unav, F_OK) == 0;
        if (!has_manifest && !has_unav) continue; /* not a runner */
        if (has_manifest && has_unav) {
            st = cb_fail(CB_ERR_FORMAT, "%s: both manifest.json and unavailable.json: a binding either runs here (a "
                         "manifest) or cannot be installed here (unavailable.json); remove one", sub);
            break;
        }
        cb_runner *grown = realloc(out->items, (size_t)(out->count + 1) * sizeof *grown);
        if (!grown) { st = cb_fail(CB_ERR_NOMEM, "out of memory"); break; }
        out->items = grown;
        cb_runner *r = &out->items[out->count];
        memset(r, 0, sizeof *r);
        st = has_manifest ? parse_manifest(file, sub, self, r) : parse_unavailable(unav, sub, r);
        if (st != CB_OK) { cb_runner_release(r); break; }
        if (cb_runners_find(out, r->name)) {
            st = cb_fail(CB_ERR_FORMAT, "%s: binding \"%s\" is declared twice", has_manifest ? file : unav, r->name);
            cb_runner_release(r);
            break;
        }
        out->count++;
    }
    closedir(d);
    if (st == CB_OK && out->count == 0) st = cb_fail(CB_ERR_NOT_FOUND, "%s: no runner manifests (*/manifest.json)", dir);
    if (st != CB_OK) { cb_runners_free(out); return st; }
    qsort(out->items, (size_t)out->count, sizeof *out->items, cmp_runner);
    /* At most one default binding per framework. */
    for (int i = 0; i < out->count; i++)
        for (int j = i + 1; j < out->count; j++) {
            const cb_runner *a = &out->items[i], *b = &out->items[j];
            if (a->framework_default && b->framework_default && !strcmp(a->framework, b->framework)) {
                st = cb_fail(CB_ERR_FORMAT, "%s/manifest.json and %s/manifest.json both declare \"framework_default\": "
                             "true for the framework \"%s\" (bindings %s and %s): a framework has one default binding; "
                             "remove the flag from one", a->dir, b->dir, a->framework, a->name, b->name);
                cb_runners_free(out);
                return st;
            }
        }
    return CB_OK;
}

void cb_runners_free(cb_runners *r)
{
    for (int i = 0; i < r->count; i++) cb_runner_release(&r->items[i]);
    free(r->items);
    memset(r, 0, sizeof *r);
}

const cb_runner *cb_runners_find(const cb_runners *r, const char *name)
{
    for (int i = 0; i < r->count; i++) if (!strcmp(r->items[i].name, name)) return &r->items[i];
    return NULL;
}
