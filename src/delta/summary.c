/* crossbind delta --json: the machine-readable summary. Per variant its
 * manifest, status, output hash and times; per axis and pair the rank
 * measures, logit distances, times compared, the differing inputs with
 * their top-K, and the localisation as stored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/json.h"
#include "analysis.h"

static void num(cb_buf *b, const char *key, double v)
{
    cb_buf_printf(b, ", \"%s\": ", key);
    cb_buf_json_number(b, v);
}

static void topk(cb_buf *b, const delta_result *r, int input, int k)
{
    int ids[64];
    if (k > 64) k = 64;
    if (k > delta_classes(r->classes)) k = delta_classes(r->classes);
    cb_buf_printf(b, "[");
    if (delta_topk(r->outputs + (size_t)input * (size_t)r->classes, r->classes, k, ids) == CB_OK)
        for (int i = 0; i < k; i++) cb_buf_printf(b, "%s%d", i ? ", " : "", ids[i]);
    cb_buf_printf(b, "]");
}

static void variants(cb_buf *b, const delta_analysis *a)
{
    const delta_config *c = a->c;
    cb_buf_printf(b, ", \"variants\": [");
    for (int i = 0; i < c->n_variants; i++) {
        const delta_result *r = &a->res[i];
        double m, lo, hi;
        cb_buf_printf(b, "%s{\"key\": ", i ? ", " : "");
        cb_buf_json_string(b, c->variants[i].key);
        cb_buf_printf(b, ", \"base\": %s, \"status\": ", i == c->base ? "true" : "false");
        cb_buf_json_string(b, r->status[0] ? r->status : "not run");
        if (r->error) {
            cb_buf_printf(b, ", \"error\": ");
            cb_buf_json_string(b, r->error);
        }
        if (r->manifest) cb_buf_printf(b, ", \"manifest\": %s", r->manifest); /* JSON made by variant.c */
        if (!strcmp(r->status, "ok")) {
            cb_buf_printf(b, ", \"outputs_sha256\": \"%s\"", r->outputs_sha256);
            if (a->inputs.labels) num(b, "accuracy", delta_accuracy(a, r));
            delta_median_range(r->times, r->n_inputs * r->reps, &m, &lo, &hi);
            num(b, "first_call_s", r->first_call_s);
            num(b, "median_s", m), num(b, "min_s", lo), num(b, "max_s", hi);
        }
        cb_buf_printf(b, "}");
    }
    cb_buf_printf(b, "]");
}

static void pair(cb_buf *b, const delta_analysis *a, const delta_axis_pair *q)
{
    const delta_config *c = a->c;
    const delta_pair *p = &q->pair;
    const delta_result *ra = &a->res[p->a], *rb = &a->res[p->b];
    cb_buf_printf(b, "{\"a\": ");
    cb_buf_json_string(b, c->variants[p->a].key);
    cb_buf_printf(b, ", \"b\": ");
    cb_buf_json_string(b, c->variants[p->b].key);
    num(b, "top1_agreement", p->agree_frac);
    num(b, "mean_rbo", p->mean_rbo), num(b, "mean_jaccard", p->mean_jaccard), num(b, "mean_kendall_tau", p->mean_kendall);
    num(b, "max_logit_diff", p->max_abs), num(b, "mean_logit_diff", p->mean_abs), num(b, "min_cosine", p->min_cosine);
    cb_buf_printf(b, ", \"identical_outputs\": %s, \"diverges\": %s",
                  !strcmp(ra->outputs_sha256, rb->outputs_sha256) ? "true" : "false", q->diverges ? "true" : "false");
    cb_buf_printf(b, ", \"time\": {\"test\": \"Mann-Whitney U, two-sided, Bonferroni over the axis\"");
    num(b, "u", p->u), num(b, "p", p->p_time), num(b, "p_adjusted", p->p_adj), num(b, "cliff_delta", p->cliff);
    num(b, "median_relative_change", p->median_rel_time);
    cb_buf_printf(b, "}, \"differing_inputs\": [");
    int k = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->in[i].top1_a == p->in[i].top1_b) continue;
        cb_buf_printf(b, "%s{\"input\": %d, \"name\": ", k++ ? ", " : "", i);
        cb_buf_json_string(b, a->inputs.names[i]);
        if (a->inputs.labels) cb_buf_printf(b, ", \"label\": %d", a->inputs.labels[i]);
        cb_buf_printf(b, ", \"top_a\": ");
        topk(b, ra, i, c->k);
        cb_buf_printf(b, ", \"top_b\": ");
        topk(b, rb, i, c->k);
        num(b, "rbo", p->in[i].rbo);
        cb_buf_printf(b, "}");
    }
    cb_buf_printf(b, "], \"localisation\": %s}", q->localisation ? q->localisation : "null");
}

cb_status delta_write_summary(const delta_analysis *a, const char *path)
{
    const delta_config *c = a->c;
    cb_buf b = {0};
    cb_buf_printf(&b, "{\"format\": \"crossbind-delta/1\", \"model\": ");
    cb_buf_json_string(&b, c->model);
    cb_buf_printf(&b, ", \"weights\": ");
    if (c->weights[0]) cb_buf_json_string(&b, c->weights);
    else if (c->model[0]) cb_buf_printf(&b, "\"seeded random weights (seed %ld), not pretrained\"", c->seed);
    else cb_buf_printf(&b, "null");
    cb_buf_printf(&b, ", \"model_sha256\": \"%s\", \"weights_sha256\": \"%s\", \"pipeline\": ", a->model_sha, a->weights_sha);
    cb_buf_json_string(&b, a->pipeline);
    cb_buf_printf(&b, ", \"machine\": ");
    cb_buf_json_string(&b, a->machine);
    cb_buf_printf(&b, ", \"k\": %d", c->k);
    num(&b, "p", c->p), num(&b, "tolerance", c->tolerance);
    cb_buf_printf(&b, ", \"reps\": %d, \"warmup\": %d, \"mode\": \"%s\", \"inputs\": [", c->reps, c->warmup, c->mode);
    for (int i = 0; i < a->inputs.n; i++) {
        cb_buf_printf(&b, "%s{\"name\": ", i ? ", " : "");
        cb_buf_json_string(&b, a->inputs.names[i]);
        cb_buf_printf(&b, ", \"sha256\": \"%s\"}", a->inputs.sha256[i]);
    }
    cb_buf_printf(&b, "]");
    variants(&b, a);
    cb_buf_printf(&b, ", \"axes\": [");
    for (int x = 0; x < c->n_axes; x++) {
        cb_buf_printf(&b, "%s{\"name\": ", x ? ", " : "");
        cb_buf_json_string(&b, c->axes[x].name);
        cb_buf_printf(&b, ", \"variants\": [");
        for (int i = 0; i < c->axes[x].n; i++) {
            if (i) cb_buf_printf(&b, ", ");
            cb_buf_json_string(&b, c->variants[c->axes[x].members[i]].key);
        }
        cb_buf_printf(&b, "], \"pairs\": [");
        int k = 0;
        for (int i = 0; i < a->n_pairs; i++)
            if (a->pairs[i].axis == x) {
                if (k++) cb_buf_printf(&b, ", ");
                pair(&b, a, &a->pairs[i]);
            }
        cb_buf_printf(&b, "]}");
    }
    cb_buf_printf(&b, "]");
    num(&b, "wall_s", a->wall_s);
    cb_buf_printf(&b, "}\n");
    if (!cb_buf_ok(&b)) {
        cb_buf_free(&b);
        return cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    }
    cb_status s = cb_write_file_atomic(path, b.data, b.len);
    cb_buf_free(&b);
    return s;
}
