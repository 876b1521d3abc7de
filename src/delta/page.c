/* crossbind delta's report: one HTML page with inline SVG, no script (the
 * study report's rules, report/out.h). First the experiment (model,
 * weights, inputs, machine); per axis an agreement matrix (top-1 and RBO),
 * the times as box plots and the pairs' measures; per diverging pair the
 * per-layer divergence and where each method placed the first diverging
 * layer; the differing inputs with their top-K; every variant's manifest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/file.h"
#include "../core/json.h"
#include "../report/out.h"
#include "../report/svg.h"
#include "../study/study.h"
#include "crossbind/data.h"
#include "crossbind/model.h"
#include "analysis.h"
#include "thumb.h"

#define STYLE \
    "<style>body{font-family:sans-serif;max-width:1200px;margin:1em auto;padding:0 1em;color:#222}" \
    "table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;" \
    "text-align:left}th{background:#f0f0f0}figure.chart{display:inline-block;margin:.5em 1em 1em 0;vertical-align:top}" \
    "figcaption{font-size:13px;font-weight:bold;max-width:560px}.stand-in{color:#b00}code{font-size:12px}" \
    "td.m{text-align:right}div.thumb{width:96px;height:96px;background-size:cover}#summary{border-bottom:2px solid #444;padding-bottom:.5em}</style>"

static void num(cb_out *o, double v)
{
    if (isnan(v)) cb_out_lit(o, "n/a");
    else if (v != 0 && (fabs(v) < 1e-3 || fabs(v) >= 1e5)) cb_out_markf(o, "%.3g", v);
    else cb_out_markf(o, "%.4f", v);
}

static void header(cb_out *o, const delta_analysis *a)
{
    const delta_config *c = a->c;
    cb_out_lit(o, "<h1>crossbind delta: differential testing of environments</h1><div id=\"summary\"><p><b>Model:</b> ");
    if (c->study) {
        cb_out_text(o, c->model);
        cb_out_lit(o, " (the study's model), its trained weights ");
        cb_out_text(o, c->weights);
        cb_out_lit(o, "; ONNX file (crossbind's export) SHA-256 <code>");
        cb_out_text(o, a->model_sha);
        cb_out_lit(o, "</code>");
    } else if (c->model[0]) {
        cb_out_text(o, c->model);
        cb_out_lit(o, " (torchvision), ");
        if (c->weights[0]) {
            cb_out_lit(o, "the user's weights ");
            cb_out_text(o, c->weights);
        } else {
            cb_out_markf(o, "<span class=\"stand-in\">seeded random weights (seed %ld), not pretrained: labels are "
                            "class indices without meaning</span>", c->seed);
        }
        cb_out_lit(o, "; ONNX file SHA-256 <code>");
        cb_out_text(o, a->model_sha);
        cb_out_lit(o, "</code>");
    } else {
        cb_out_lit(o, "the user's ONNX files (see the manifests)");
    }
    cb_out_lit(o, "</p><p><b>Data sets:</b> ");
    if (c->study) { /* its test split; a stand-in says so in its README (cb_data_describe) */
        cb_data_source d = {0};
        snprintf(d.format, sizeof d.format, "%s", cb_model_data_format(c->model));
        snprintf(d.path, sizeof d.path, "%.511s", c->data[0] ? c->data : cb_dataset_default_dir(d.format));
        cb_data_describe(&d);
        if (d.stand_in) cb_out_lit(o, "<span class=\"stand-in\">STAND-IN: ");
        else cb_out_lit(o, "<span>");
        cb_out_text(o, d.name);
        cb_out_lit(o, "</span>, the test split's labels");
    } else if (c->inputs_npy[0]) {
        cb_out_lit(o, "the user's tensor ");
        cb_out_text(o, c->inputs_npy);
    } else if (c->images[0]) {
        cb_out_lit(o, "the user's images in ");
        cb_out_text(o, c->images);
    } else {
        cb_out_lit(o, "<span class=\"stand-in\">STAND-IN: photographs shipped by Debian packages (python3-skimage, "
                      "python3-sklearn), not ImageNet images, without labels</span>");
    }
    cb_out_markf(o, ", %d inputs; ", a->inputs.n);
    cb_out_text(o, a->pipeline);
    cb_out_lit(o, "</p><p><b>Machine:</b> ");
    cb_out_text(o, a->machine);
    cb_out_markf(o, "; threads per variant as named (t1, t2). <b>Times:</b> batch 1, %d warm-up passes, %d repetitions "
                    "per input; the first call is reported on its own. <b>Measures:</b> top-%d, RBO p = %.2f "
                    "(extrapolated, Webber et al. 2010, eq. 32), divergence tolerance %.3g (max |a - b| over max |a|).</p>",
                 c->warmup, c->reps, c->k, c->p, c->tolerance);
    cb_out_markf(o, "<p><b>Variants:</b> %d in %d groups (", c->n_variants, c->n_axes);
    if (!strcmp(c->mode, "product")) cb_out_lit(o, "all combinations");
    else cb_out_lit(o, "one axis varied at a time, the rest frozen");
    cb_out_lit(o, "); the base is ");
    cb_out_text(o, c->variants[c->base].key);
    cb_out_lit(o, ".</p></div>\n");
}

/* A cell coloured from red (0) to green (1). */
static void shaded(cb_out *o, double v, int percent)
{
    int hue = isnan(v) ? 0 : (int)(120 * fmax(0, fmin(1, v)));
    cb_out_markf(o, "<td class=\"m\" style=\"background:hsl(%d,70%%,85%%)\">", hue);
    if (isnan(v)) cb_out_lit(o, "n/a");
    else if (percent) cb_out_markf(o, "%.1f%%", 100 * v);
    else cb_out_markf(o, "%.3f", v);
    cb_out_lit(o, "</td>");
}

static const delta_axis_pair *find_pair(const delta_analysis *a, int axis, int i, int j)
{
    for (int k = 0; k < a->n_pairs; k++) {
        const delta_axis_pair *q = &a->pairs[k];
        if (q->axis == axis && ((q->pair.a == i && q->pair.b == j) || (q->pair.a == j && q->pair.b == i))) return q;
    }
    return NULL;
}

static void matrix(cb_out *o, const delta_analysis *a, int x, int rbo)
{
    const delta_axis *ax = &a->c->axes[x];
    if (rbo) cb_out_markf(o, "<table id=\"t-matrix-rbo-%d\"><caption>", x);
    else cb_out_markf(o, "<table id=\"t-matrix-top1-%d\"><caption>", x);
    if (rbo) cb_out_lit(o, "Mean RBO (upper triangle)");
    else cb_out_lit(o, "Top-1 agreement (upper triangle)");
    cb_out_lit(o, "</caption><tr><th></th>");
    for (int j = 0; j < ax->n; j++) {
        cb_out_lit(o, "<th>");
        cb_out_text(o, a->c->variants[ax->members[j]].key);
        cb_out_lit(o, "</th>");
    }
    cb_out_lit(o, "</tr>");
    for (int i = 0; i < ax->n; i++) {
        cb_out_lit(o, "<tr><th>");
        cb_out_text(o, a->c->variants[ax->members[i]].key);
        cb_out_lit(o, "</th>");
        for (int j = 0; j < ax->n; j++) {
            const delta_axis_pair *q = j > i ? find_pair(a, x, ax->members[i], ax->members[j]) : NULL;
            if (i == j) cb_out_lit(o, "<td class=\"m\">-</td>");
            else if (!q) cb_out_lit(o, "<td></td>");
            else shaded(o, rbo ? q->pair.mean_rbo : q->pair.agree_frac, !rbo);
        }
        cb_out_lit(o, "</tr>");
    }
    cb_out_lit(o, "</table>\n");
}

static void time_boxes(cb_out *o, const delta_analysis *a, int x)
{
    const delta_axis *ax = &a->c->axes[x];
    svg_box boxes[DELTA_MAX_VARIANTS];
    double *secs[DELTA_MAX_VARIANTS] = {0};
    int nb = 0;
    for (int i = 0; i < ax->n; i++) {
        const delta_result *r = &a->res[ax->members[i]];
        if (strcmp(r->status, "ok") || !r->times) continue;
        int n = r->n_inputs * r->reps;
        if (!(secs[nb] = malloc((size_t)n * sizeof(double)))) break;
        memcpy(secs[nb], r->times, (size_t)n * sizeof(double)); /* seconds: the box plot's axis is in seconds */
        boxes[nb] = (svg_box){a->c->variants[ax->members[i]].key, secs[nb], n};
        nb++;
    }
    char id[32];
    snprintf(id, sizeof id, "times-%d", x);
    if (nb) svg_box_plot(o, id, "Inference time per input at batch 1 (every timed pass)", "seconds", boxes, nb);
    for (int i = 0; i < nb; i++) free(secs[i]);
}

static void first_cell(cb_out *o, const cb_json *loc, const char *method)
{
    const cb_json *m = loc ? cb_json_get(loc, method) : NULL, *f = m ? cb_json_get(m, "first") : NULL;
    const cb_json *avail = m ? cb_json_get(m, "available") : NULL, *why = m ? cb_json_get(m, "reason") : NULL;
    cb_out_lit(o, "<td>");
    if (!m) cb_out_lit(o, "-");
    else if (avail && avail->type == CB_JSON_BOOL && !avail->num) {
        cb_out_lit(o, "not available: ");
        cb_out_text(o, why && why->type == CB_JSON_STR ? why->str : "");
    } else if (!f || f->type != CB_JSON_OBJ) cb_out_lit(o, "none beyond the tolerance");
    else {
        const cb_json *node = cb_json_get(f, "onnx_node"), *op = cb_json_get(f, "op"), *idx = cb_json_get(f, "index");
        cb_out_text(o, node && node->type == CB_JSON_STR ? node->str : "?");
        cb_out_lit(o, " (");
        cb_out_text(o, op && op->type == CB_JSON_STR ? op->str : "");
        if (idx && idx->type == CB_JSON_NUM) cb_out_markf(o, ", value %d", (int)idx->num);
        cb_out_lit(o, ")");
    }
    cb_out_lit(o, "</td>");
}

static void pairs_table(cb_out *o, const delta_analysis *a, int x)
{
    cb_out_markf(o, "<table id=\"t-pairs-%d\"><tr><th>variant a</th><th>variant b</th><th>top-1 equal</th><th>mean RBO"
                    "</th><th>mean Jaccard</th><th>mean Kendall tau</th><th>max |logit diff|</th><th>outputs identical</th>"
                    "<th>time change (median)</th><th>Cliff's delta</th><th>p (Bonferroni)</th><th>first diverging "
                    "(capture)</th><th>first diverging (bisection)</th></tr>", x);
    for (int k = 0; k < a->n_pairs; k++) {
        const delta_axis_pair *q = &a->pairs[k];
        if (q->axis != x) continue;
        const delta_pair *p = &q->pair;
        cb_out_lit(o, "<tr><td>");
        cb_out_text(o, a->c->variants[p->a].key);
        cb_out_lit(o, "</td><td>");
        cb_out_text(o, a->c->variants[p->b].key);
        cb_out_lit(o, "</td>");
        shaded(o, p->agree_frac, 1);
        cb_out_lit(o, "<td class=\"m\">");
        num(o, p->mean_rbo);
        cb_out_lit(o, "</td><td class=\"m\">");
        num(o, p->mean_jaccard);
        cb_out_lit(o, "</td><td class=\"m\">");
        num(o, p->mean_kendall);
        cb_out_lit(o, "</td><td class=\"m\">");
        num(o, p->max_abs);
        cb_out_lit(o, "</td><td>");
        if (!strcmp(a->res[p->a].outputs_sha256, a->res[p->b].outputs_sha256)) cb_out_lit(o, "yes");
        else cb_out_lit(o, "no");
        cb_out_markf(o, "</td><td class=\"m\">%+.1f%%</td><td class=\"m\">", 100 * p->median_rel_time);
        num(o, p->cliff);
        cb_out_lit(o, "</td><td class=\"m\">");
        num(o, p->p_adj);
        if (p->significant) cb_out_lit(o, " *");
        cb_out_lit(o, "</td>");
        cb_json loc = {0};
        int parsed = q->localisation &&
                     cb_json_parse(q->localisation, strlen(q->localisation), "a localisation", &loc) == CB_OK;
        if (!q->diverges) cb_out_lit(o, "<td colspan=\"2\">within the tolerance</td>");
        else if (!parsed) cb_out_lit(o, "<td colspan=\"2\">not localised</td>");
        else {
            first_cell(o, &loc, "capture");
            first_cell(o, &loc, "bisection");
        }
        if (parsed) cb_json_free(&loc);
        cb_out_lit(o, "</tr>");
    }
    cb_out_lit(o, "</table>\n");
}

/* Per layer, log10 of the largest activation difference (the weights' are in the summary). */
static void layer_chart(cb_out *o, const delta_analysis *a, const delta_axis_pair *q, int n)
{
    cb_json loc;
    if (!q->localisation || cb_json_parse(q->localisation, strlen(q->localisation), "a localisation", &loc) != CB_OK) return;
    const cb_json *cap = cb_json_get(&loc, "capture"), *layers = cap ? cb_json_get(cap, "layers") : NULL;
    if (layers && layers->type == CB_JSON_ARR && layers->count > 0) {
        int m = layers->count;
        double *x = malloc((size_t)m * sizeof *x), *ya = malloc((size_t)m * sizeof *ya);
        double lo = 0, hi = -12;
        for (int i = 0; x && ya && i < m; i++) {
            const cb_json *act = cb_json_get(&layers->items[i], "activation");
            const cb_json *mx = act ? cb_json_get(act, "max") : NULL;
            x[i] = i;
            ya[i] = log10(fmax(1e-12, mx && mx->type == CB_JSON_NUM ? mx->num : 0));
            lo = fmin(lo, ya[i]), hi = fmax(hi, ya[i]);
        }
        if (x && ya) {
            char id[32], title[600];
            snprintf(id, sizeof id, "layers-%d", n);
            snprintf(title, sizeof title, "%s vs %s: log10 max |a - b| of each layer's activations, input %d",
                     a->c->variants[q->pair.a].key, a->c->variants[q->pair.b].key, q->input);
            svg_line l = {"activations", x, ya, m};
            svg_line_chart(o, id, title, "layer (execution order)", "log10 max |a - b|", &l, 1, floor(fmin(lo, -12)),
                           ceil(fmax(hi, 0)));
        }
        free(x), free(ya);
    }
    cb_json_free(&loc);
}

static void ids(cb_out *o, const int *v, int n)
{
    for (int j = 0; j < n; j++) {
        if (j) cb_out_lit(o, ", ");
        cb_out_markf(o, "%d", v[j]);
    }
}

static void differing(cb_out *o, const delta_analysis *a)
{
    const delta_config *c = a->c;
    /* one picture per input, made the first time a pair differs on it */
    char **thumbs = calloc((size_t)a->inputs.n + 1, sizeof *thumbs);
    unsigned char *tried = calloc((size_t)a->inputs.n + 1, 1);
    cb_out_lit(o, "<h2 id=\"differing\">Differing inputs</h2><table id=\"t-differing\"><tr><th>variant a</th><th>variant b"
                  "</th><th>input</th><th>image (centre crop)</th><th>top-K of a</th><th>top-K of b</th><th>RBO</th></tr>");
    int rows = 0;
    for (int k = 0; k < a->n_pairs && rows < 500; k++) {
        const delta_pair *p = &a->pairs[k].pair;
        for (int i = 0; i < p->n && rows < 500; i++) {
            if (p->in[i].top1_a == p->in[i].top1_b) continue;
            int ta[64], tb[64], kk = c->k < 64 ? c->k : 64;
            const delta_result *ra = &a->res[p->a], *rb = &a->res[p->b];
            if (kk > delta_classes(ra->classes)) kk = delta_classes(ra->classes);
            if (delta_topk(ra->outputs + (size_t)i * (size_t)ra->classes, ra->classes, kk, ta) != CB_OK ||
                delta_topk(rb->outputs + (size_t)i * (size_t)rb->classes, rb->classes, kk, tb) != CB_OK)
                continue;
            cb_out_lit(o, "<tr><td>");
            cb_out_text(o, c->variants[p->a].key);
            cb_out_lit(o, "</td><td>");
            cb_out_text(o, c->variants[p->b].key);
            cb_out_lit(o, "</td><td>");
            cb_out_text(o, a->inputs.names[i]);
            cb_out_lit(o, "</td><td>");
            /* base64 has no character HTML escapes: cb_out_text leaves it whole */
            if (thumbs && tried && !tried[i]) tried[i] = 1, thumbs[i] = delta_thumbnail(a->inputs.names[i], 96);
            const char *thumb = thumbs ? thumbs[i] : NULL;
            if (thumb) {
                cb_out_lit(o, "<div class=\"thumb\" role=\"img\" style=\"background-image:url(data:image/png;base64,");
                cb_out_text(o, thumb);
                cb_out_lit(o, ")\"></div>");
            }
            cb_out_lit(o, "</td><td>");
            ids(o, ta, kk);
            cb_out_lit(o, "</td><td>");
            ids(o, tb, kk);
            cb_out_lit(o, "</td><td class=\"m\">");
            num(o, p->in[i].rbo);
            cb_out_lit(o, "</td></tr>");
            rows++;
        }
    }
    cb_out_lit(o, "</table>");
    if (!rows) cb_out_lit(o, "<p>Every pair agreed on the top-1 class of every input.</p>");
    for (int i = 0; thumbs && i < a->inputs.n; i++) free(thumbs[i]);
    free(thumbs);
    free(tried);
}

static void manifests(cb_out *o, const delta_analysis *a)
{
    cb_out_lit(o, "<h2 id=\"manifests\">Variants and what each changes</h2><table id=\"t-variants\"><tr><th>variant</th>"
                  "<th>status</th><th>first call</th><th>median [min, max]</th>");
    if (a->inputs.labels) cb_out_lit(o, "<th>accuracy (labels)</th>");
    cb_out_lit(o, "<th>output SHA-256</th><th>manifest</th></tr>");
    for (int i = 0; i < a->c->n_variants; i++) {
        const delta_result *r = &a->res[i];
        cb_out_lit(o, "<tr><td>");
        cb_out_text(o, a->c->variants[i].key);
        cb_out_lit(o, "</td><td>");
        cb_out_text(o, r->status[0] ? r->status : "not run");
        if (r->error) {
            cb_out_lit(o, ": ");
            cb_out_text(o, r->error);
        }
        cb_out_lit(o, "</td>");
        if (!strcmp(r->status, "ok")) {
            double m, lo, hi;
            delta_median_range(r->times, r->n_inputs * r->reps, &m, &lo, &hi);
            cb_out_markf(o, "<td class=\"m\">%.2f ms</td><td class=\"m\">%.3f ms [%.3f, %.3f]</td>",
                         1e3 * r->first_call_s, 1e3 * m, 1e3 * lo, 1e3 * hi);
            if (a->inputs.labels) cb_out_markf(o, "<td class=\"m\">%.1f%%</td>", 100 * delta_accuracy(a, r));
            cb_out_lit(o, "<td><code>");
            cb_out_text(o, r->outputs_sha256);
            cb_out_lit(o, "</code></td>");
        } else {
            cb_out_lit(o, "<td></td><td></td><td></td>");
            if (a->inputs.labels) cb_out_lit(o, "<td></td>");
        }
        cb_out_lit(o, "<td><code>");
        cb_out_text(o, r->manifest ? r->manifest : "");
        cb_out_lit(o, "</code></td></tr>");
    }
    cb_out_lit(o, "</table>\n");
}

cb_status delta_write_report(const delta_analysis *a, const char *dir)
{
    cb_status s = cb_mkdirs(dir);
    if (s != CB_OK) return s;
    cb_out *o = cb_out_new(CB_OUT_HTML);
    cb_out_lit(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"" CB_PAGE_CSP "\">"
                  "<title>crossbind delta report</title>" STYLE "</head><body>\n");
    header(o, a);
    int chart = 0;
    for (int x = 0; x < a->c->n_axes; x++) {
        cb_out_markf(o, "<h2 id=\"axis-%d\">", x);
        cb_out_text(o, a->c->axes[x].name);
        cb_out_lit(o, "</h2>");
        matrix(o, a, x, 0);
        matrix(o, a, x, 1);
        time_boxes(o, a, x);
        pairs_table(o, a, x);
        for (int k = 0; k < a->n_pairs; k++)
            if (a->pairs[k].axis == x && a->pairs[k].diverges) layer_chart(o, a, &a->pairs[k], chart++);
    }
    differing(o, a);
    manifests(o, a);
    cb_out_lit(o, "</body></html>\n");
    char path[4200];
    snprintf(path, sizeof path, "%s/index.html", dir);
    s = cb_out_write(o, path);
    cb_out_free(o);
    return s;
}
