/* The ONNX backend node tests (Debian's libonnx-testdata, onnx 1.12) as a
 * conformance suite for crossbind's ONNX import and kernels.
 *
 * Every case whose operators are all ones crossbind claims
 * (cb_onnx_supported_ops) is run, except those in the exclude list, each
 * listed with its reason. A claimed case must import, run and match every
 * reference output within the suite's own tolerance (rtol 1e-3, atol 1e-7),
 * with both kernel levels. Cases using other operators are counted as not
 * claimed.
 *
 * crossbind takes weights from initializers, while many node tests feed
 * them as graph inputs. So every graph input after the first is bound to its
 * test data as an initializer before import (per data set): the kernels are
 * checked on the same values, and only the first input carries the batch.
 * Usage: onnx_conformance DATA_DIR EXCLUDE_FILE */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/crossbind.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"
#include "../src/core/file.h"
#include "../src/formats/onnx_util.h"

#define RTOL 1e-3
#define ATOL 1e-7
#define MAX_CASES 4096

typedef struct exclusion { char name[128]; char reason[256]; int used; } exclusion;

static exclusion excl[512];
static int n_excl;

static int load_excludes(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "cannot open exclude list %s\n", path); return -1; }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char *sp = strpbrk(line, " \t");
        if (!sp) { fprintf(stderr, "exclude list: '%s' has no reason\n", line); fclose(f); return -1; }
        *sp++ = 0;
        while (*sp == ' ' || *sp == '\t') sp++;
        sp[strcspn(sp, "\n")] = 0;
        if (!*sp || n_excl == 512) { fprintf(stderr, "exclude list: '%s' has no reason\n", line); fclose(f); return -1; }
        snprintf(excl[n_excl].name, sizeof excl[n_excl].name, "%.127s", line);
        snprintf(excl[n_excl].reason, sizeof excl[n_excl].reason, "%.255s", sp);
        n_excl++;
    }
    fclose(f);
    return 0;
}

static exclusion *excluded(const char *name)
{
    for (int i = 0; i < n_excl; i++)
        if (!strcmp(excl[i].name, name)) return &excl[i];
    return NULL;
}

static int claimed(const Onnx__ModelProto *mp)
{
    const char *const *ops = cb_onnx_supported_ops();
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        int ok = 0;
        for (const char *const *o = ops; *o && !ok; o++) ok = !strcmp(*o, mp->graph->node[i]->op_type);
        if (!ok) return 0;
    }
    return mp->graph->n_node > 0;
}

static cb_status read_pb(const char *path, cb_tensor *out)
{
    unsigned char *buf;
    size_t len;
    cb_status s = cb_read_file(path, (size_t)1 << 30, &buf, &len);
    if (s != CB_OK) return s;
    s = cb_pb_precheck(&onnx__tensor_proto__descriptor, buf, len, path);
    Onnx__TensorProto *t = s == CB_OK ? onnx__tensor_proto__unpack(NULL, len, buf) : NULL;
    free(buf);
    if (s != CB_OK) return s;
    if (!t) return cb_fail(CB_ERR_FORMAT, "%s: not a TensorProto", path);
    s = cb_onnx_tensor_to_cb(t, path, out);
    onnx__tensor_proto__free_unpacked(t, NULL);
    return s;
}

/* Imports the case with graph inputs 1.. bound to the data set's values as
 * initializers (see the top of this file). */
static cb_status import_bound(const unsigned char *buf, size_t len, const char *what, const char *dir,
                              cb_model **out)
{
    Onnx__ModelProto *mp;
    cb_status s = cb_onnx_unpack(buf, len, what, &mp);
    if (s != CB_OK) return s;
    Onnx__GraphProto *g = mp->graph;
    size_t n_in = g->n_input, n_init = g->n_initializer;
    Onnx__TensorProto **inits = calloc(n_init + n_in + 1, sizeof *inits), **saved = g->initializer;
    Onnx__TensorProto **bound = calloc(n_in + 1, sizeof *bound);
    s = inits && bound ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory");
    size_t n_bound = 0;
    for (size_t i = 0; s == CB_OK && i < n_init; i++) inits[i] = saved[i];
    for (size_t k = 1; s == CB_OK && k < n_in; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%.4000s/input_%zu.pb", dir, k);
        unsigned char *tb;
        size_t tl;
        if (cb_read_file(path, (size_t)1 << 30, &tb, &tl) != CB_OK) { s = CB_ERR_IO; break; }
        Onnx__TensorProto *t = cb_pb_precheck(&onnx__tensor_proto__descriptor, tb, tl, path) == CB_OK
                                   ? onnx__tensor_proto__unpack(NULL, tl, tb) : NULL;
        free(tb);
        if (!t) { s = cb_fail(CB_ERR_FORMAT, "%s: not a TensorProto", path); break; }
        free(t->name);
        t->name = strdup(g->input[k]->name);
        bound[n_bound++] = t;
        inits[n_init + n_bound - 1] = t;
    }
    if (s == CB_OK) {
        g->initializer = inits;
        g->n_initializer = n_init + n_bound;
        g->n_input = n_in ? 1 : 0; /* the bound inputs are constants now */
        size_t plen = onnx__model_proto__get_packed_size(mp);
        unsigned char *pb = malloc(plen + 1);
        if (!pb) s = cb_fail(CB_ERR_NOMEM, "out of memory");
        else {
            onnx__model_proto__pack(mp, pb);
            s = cb_onnx_import(pb, plen, what, 0, out);
            free(pb);
        }
        g->initializer = saved;
        g->n_initializer = n_init;
        g->n_input = n_in;
    }
    for (size_t i = 0; i < n_bound; i++) onnx__tensor_proto__free_unpacked(bound[i], NULL);
    free(bound);
    free(inits);
    onnx__model_proto__free_unpacked(mp, NULL);
    return s;
}

/* Runs one test_data_set directory; returns 0 on a match, 1 otherwise. */
static int run_set(cb_model *m, const char *dir, cb_kernels kernels, char *why, size_t wsize)
{
    char path[4096];
    cb_tensor in[CB_MAX_IO], out;
    memset(in, 0, sizeof in);
    int64_t batch = -1;
    int rc = 1;
    cb_exec *ex = NULL;
    for (int k = 0; k < m->n_inputs; k++) {
        snprintf(path, sizeof path, "%.4000s/input_%d.pb", dir, k);
        if (read_pb(path, &in[k]) != CB_OK || in[k].dtype != CB_F32 || in[k].ndim < 1) {
            snprintf(why, wsize, "cannot read %.200s: %.200s", path, cb_last_error());
            goto done;
        }
        const cb_node *n = &m->graph.nodes[m->inputs[k]];
        if (in[k].ndim != n->ndim + 1 || (batch >= 0 && in[k].shape[0] != batch) ||
            cb_tensor_numel(&in[k]) != in[k].shape[0] * cb_node_numel(n)) {
            snprintf(why, wsize, "input %d shape does not match the model", k);
            goto done;
        }
        batch = in[k].shape[0];
    }
    if (cb_exec_create(&m->graph, (int)batch, 0, kernels, &ex) != CB_OK) {
        snprintf(why, wsize, "executor: %s", cb_last_error());
        goto done;
    }
    for (int k = 0; k < m->n_inputs; k++)
        memcpy(cb_exec_value(ex, m->inputs[k]), in[k].data, (size_t)cb_tensor_numel(&in[k]) * sizeof(float));
    if (cb_exec_forward(ex, (int)batch) != CB_OK) {
        snprintf(why, wsize, "forward: %s", cb_last_error());
        goto done;
    }
    rc = 0;
    for (int k = 0; k < m->n_outputs && !rc; k++) {
        snprintf(path, sizeof path, "%.4000s/output_%d.pb", dir, k);
        memset(&out, 0, sizeof out);
        if (read_pb(path, &out) != CB_OK || out.dtype != CB_F32) {
            snprintf(why, wsize, "cannot read %.300s", path);
            rc = 1;
            break;
        }
        const cb_node *n = &m->graph.nodes[m->outputs[k]];
        if (cb_tensor_numel(&out) != batch * cb_node_numel(n)) {
            snprintf(why, wsize, "output %d has %lld values, crossbind computes %lld", k,
                     (long long)cb_tensor_numel(&out), (long long)(batch * cb_node_numel(n)));
            rc = 1;
        }
        const float *got = cb_exec_value(ex, m->outputs[k]), *want = out.data;
        for (int64_t i = 0; !rc && i < cb_tensor_numel(&out); i++) {
            double g = got[i], w = want[i];
            int bad = isnan(w) ? !isnan(g) : !(fabs(g - w) <= ATOL + RTOL * fabs(w));
            if (bad) {
                snprintf(why, wsize, "output %d[%lld]: got %.9g, expected %.9g", k, (long long)i, g, w);
                rc = 1;
            }
        }
        cb_tensor_free(&out);
    }
done:
    cb_exec_free(ex);
    for (int k = 0; k < CB_MAX_IO; k++) cb_tensor_free(&in[k]);
    return rc;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    cb_blas_restart_with_better_core(argv); /* the kernels the crossbind command uses */
    if (argc != 3) { fprintf(stderr, "usage: %s DATA_DIR EXCLUDE_FILE\n", argv[0]); return 2; }
    if (load_excludes(argv[2])) return 2;
    DIR *d = opendir(argv[1]);
    if (!d) { fprintf(stderr, "cannot open %s (install libonnx-testdata)\n", argv[1]); return 2; }
    char *names[MAX_CASES];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_CASES)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    int passed = 0, failed = 0, skipped = 0, unclaimed = 0;
    for (int i = 0; i < n; i++) {
        char path[4096], why[512] = "";
        snprintf(path, sizeof path, "%s/%s/model.onnx", argv[1], names[i]);
        unsigned char *buf;
        size_t len;
        if (cb_read_file(path, (size_t)1 << 30, &buf, &len) != CB_OK) { unclaimed++; continue; }
        Onnx__ModelProto *mp = NULL;
        int mine = cb_onnx_unpack(buf, len, path, &mp) == CB_OK && claimed(mp);
        if (mp) onnx__model_proto__free_unpacked(mp, NULL);
        if (!mine) { unclaimed++; free(buf); continue; }
        exclusion *x = excluded(names[i]);
        if (x) {
            x->used = 1;
            skipped++;
            printf("skip %s: %s\n", names[i], x->reason);
            free(buf);
            continue;
        }
        int bad = 0;
        for (int set = 0; !bad; set++) {
            char dir[4096];
            snprintf(dir, sizeof dir, "%s/%s/test_data_set_%d", argv[1], names[i], set);
            DIR *sd = opendir(dir);
            if (!sd) { if (set == 0) { snprintf(why, sizeof why, "no test data"); bad = 1; } break; }
            closedir(sd);
            cb_model *m = NULL;
            /* Inputs after the first become constants (a Conv's W); where the
             * model wants them computed (Add's second operand), every input
             * stays an input and is fed from its file. */
            if (import_bound(buf, len, path, dir, &m) != CB_OK && cb_onnx_import(buf, len, path, 0, &m) != CB_OK) {
                snprintf(why, sizeof why, "import: %.400s", cb_last_error());
                bad = 1;
                break;
            }
            /* Every optimisation level (exec.h), each against the expected outputs. */
            const cb_kernels levels[] = {CB_KERNELS_REFERENCE, CB_KERNELS_EXACT, CB_KERNELS_FUSED, CB_KERNELS_FAST};
            for (int l = 0; !bad && l < 4; l++)
                if ((bad = run_set(m, dir, levels[l], why, sizeof why))) {
                    char at[sizeof why];
                    snprintf(at, sizeof at, "level %s: %.400s", cb_level_name(levels[l]), why);
                    snprintf(why, sizeof why, "%s", at);
                }
            cb_model_free(m);
        }
        free(buf);
        if (bad) { failed++; printf("FAIL %s: %s\n", names[i], why); }
        else { passed++; printf("ok   %s\n", names[i]); }
    }
    for (int i = 0; i < n_excl; i++)
        if (!excl[i].used) { failed++; printf("FAIL exclude list names %s, which is not a claimed case\n", excl[i].name); }
    for (int i = 0; i < n; i++) free(names[i]);
    printf("onnx node tests: %d of %d cases use only operators crossbind implements; %d excluded with reasons\n",
           passed + failed + skipped, n, skipped);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    (void)unclaimed;
    return failed ? 1 : 0;
}
