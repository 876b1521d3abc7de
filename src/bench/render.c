/* crossbind bench: the results as JSON (every value), a Markdown page (the
 * ratios first) and an HTML page of box plots. Ratios are the first
 * binding's median over each peer's: below 1 the first binding is faster.
 * The pages are written through the escaping writer (report/out.h); the
 * JSON through its own string escaper. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/file.h"
#include "../core/json.h"
#include "../report/out.h"
#include "../report/svg.h"
#include "bench.h"

static const char *cell_status(const cb_bench_cell *cl) { return cl->failed ? "failed" : cl->times.n ? "ok" : "pending"; }

static const char *setting_of(const cb_bench_results *r, const cb_bench_cell *cl)
{
    return cl->chosen >= 0 ? r->runners[cl->binding]->bench_env[cl->chosen] : "";
}

static void json_series(cb_buf *b, const cb_series *s)
{
    cb_buf_printf(b, "[");
    for (int i = 0; i < s->n; i++) {
        cb_buf_printf(b, "%s", i ? ", " : "");
        cb_buf_json_number(b, s->v[i]);
    }
    cb_buf_printf(b, "]");
}

/* Each training unit's convolution rate over the SGEMM rate its worker
 * measured right after it (units without one are left out; out of memory,
 * all are: the page then shows the other share only). */
static void paired_shares(double conv_flops_per_unit, const cb_bench_cell *tr, cb_series *out)
{
    *out = (cb_series){0};
    const int n = tr->conv.n < tr->conv_sgemm.n ? tr->conv.n : tr->conv_sgemm.n;
    if (n == 0 || !(out->v = malloc((size_t)n * sizeof *out->v))) return;
    for (int i = 0; i < n; i++)
        if (isfinite(tr->conv_sgemm.v[i]) && tr->conv.v[i] > 0)
            out->v[out->n++] = conv_flops_per_unit / tr->conv.v[i] / 1e9 / tr->conv_sgemm.v[i];
    out->cap = n;
}

static void write_json(const cb_bench_results *r, cb_buf *b)
{
    const cb_bench_config *c = r->c;
    cb_buf_printf(b, "{\n  \"format\": \"crossbind-bench/1\",\n  \"date\": ");
    cb_buf_json_string(b, r->date);
    cb_buf_printf(b, ",\n  \"machine\": ");
    cb_buf_json_string(b, r->machine);
    cb_buf_printf(b, ",\n  \"threads\": %d, \"rounds\": %d, \"rounds_done\": %d, \"quick\": %s,\n", c->threads, c->rounds,
                  r->rounds_done, c->quick ? "true" : "false");
    cb_buf_printf(b, "  \"sgemm_gflops\": {\"before\": {\"1\": ");
    cb_buf_json_number(b, r->sgemm[0][0]);
    cb_buf_printf(b, ", \"%d\": ", c->threads);
    cb_buf_json_number(b, r->sgemm[0][1]);
    cb_buf_printf(b, "}, \"after\": {\"1\": ");
    cb_buf_json_number(b, r->sgemm[1][0] > 0 ? r->sgemm[1][0] : NAN);
    cb_buf_printf(b, ", \"%d\": ", c->threads);
    cb_buf_json_number(b, r->sgemm[1][1] > 0 ? r->sgemm[1][1] : NAN);
    cb_buf_printf(b, "}},\n  \"fma_peak_gflops\": {\"1\": ");
    cb_buf_json_number(b, r->fma[0]);
    cb_buf_printf(b, ", \"%d\": ", c->threads);
    cb_buf_json_number(b, r->fma[1]);
    cb_buf_printf(b, "},\n  \"bindings\": [");
    for (int i = 0; i < c->nbindings; i++) {
        cb_buf_printf(b, "%s\n    {\"name\": ", i ? "," : "");
        cb_buf_json_string(b, r->runners[i]->name);
        cb_buf_printf(b, ", \"framework\": ");
        cb_buf_json_string(b, r->runners[i]->framework);
        cb_buf_printf(b, ", \"language\": ");
        cb_buf_json_string(b, r->runners[i]->language);
        cb_buf_printf(b, ", \"version\": ");
        cb_buf_json_string(b, r->versions[i]);
        cb_buf_printf(b, "}");
    }
    cb_buf_printf(b, "\n  ],\n  \"models\": [");
    for (int m = 0; m < c->nmodels; m++)
    {
        cb_buf_printf(b, "%s\n    {\"name\": ", m ? "," : "");
        cb_buf_json_string(b, c->models[m]);
        if (c->onnx[m][0]) { /* a file of the user's: where it was read */
            cb_buf_printf(b, ", \"onnx_file\": ");
            cb_buf_json_string(b, c->onnx[m]);
        }
        cb_buf_printf(b, ", \"forward_gflop_per_sample\": %.9g, \"conv_forward_gflop_per_sample\": %.9g, "
                         "\"forward_gflop_done_per_sample\": %.9g}",
                      r->flops[m] / 1e9, r->conv_flops[m] / 1e9, r->flops_done[m] / 1e9);
    }
    cb_buf_printf(b, "\n  ],\n  \"cells\": [");
    for (int i = 0; i < r->ncells; i++) {
        const cb_bench_cell *cl = &r->cells[i];
        const cb_runner *rn = r->runners[cl->binding];
        cb_buf_printf(b, "%s\n    {\"model\": ", i ? "," : "");
        cb_buf_json_string(b, c->models[cl->model]);
        cb_buf_printf(b, ", \"kind\": \"%s\", \"binding\": ", cb_bench_kind_names[cl->kind]);
        cb_buf_json_string(b, rn->name);
        cb_buf_printf(b, ", \"batch\": %d, \"samples\": %ld, \"repeat\": %d, \"status\": \"%s\", \"error\": ", cl->sz.batch,
                      cl->sz.samples, cl->sz.repeat, cell_status(cl));
        cb_buf_json_string(b, cl->error);
        cb_buf_printf(b, ", \"setting\": ");
        cb_buf_json_string(b, setting_of(r, cl));
        cb_buf_printf(b, ", \"worker\": ");
        cb_buf_json_string(b, cl->info);
        cb_buf_printf(b, ", \"peak_rss_kib\": %ld,", cl->rss_kb);
        if (cl->flops_done > 0) cb_buf_printf(b, " \"flops_done_per_sample\": %.6g,", cl->flops_done);
        cb_buf_printf(b, "\n     \"times_s\": ");
        json_series(b, &cl->times);
        cb_buf_printf(b, ", \"round_medians_s\": ");
        json_series(b, &cl->rounds);
        if (cl->conv.n) {
            cb_buf_printf(b, ", \"conv_s\": ");
            json_series(b, &cl->conv);
            cb_buf_printf(b, ", \"conv_sgemm_gflops\": ");
            json_series(b, &cl->conv_sgemm);
        }
        if (rn->nbench_env && cl->probe[0].n) {
            cb_buf_printf(b, ",\n     \"round1_by_setting\": {");
            for (int v = 0; v < rn->nbench_env; v++) {
                cb_buf_printf(b, "%s", v ? ", " : "");
                cb_buf_json_string(b, rn->bench_env[v]);
                cb_buf_printf(b, ": ");
                json_series(b, &cl->probe[v]);
            }
            cb_buf_printf(b, "}");
        }
        cb_buf_printf(b, "}");
    }
    cb_buf_printf(b, "\n  ]\n}\n");
}

/* "0.123 s [0.120, 0.131]" (or ms for short times). */
static void fmt_time(cb_out *b, const cb_series *s)
{
    double med = cb_series_quantile(s, 0.5), lo = cb_series_min(s), hi = cb_series_max(s);
    if (med < 1.0) cb_out_markf(b, "%.2f ms [%.2f, %.2f]", med * 1e3, lo * 1e3, hi * 1e3);
    else cb_out_markf(b, "%.3f s [%.3f, %.3f]", med, lo, hi);
}

static const char *kind_title(int k)
{
    static const char *t[CB_BENCH_KINDS] = {"training", "inference", "batch-1 latency per sample",
                                            "start-up to the first prediction"};
    return t[k];
}

static void unit_title(cb_out *b, const cb_bench_cell *cl)
{
    switch (cl->kind) {
    case CB_BENCH_TRAIN:
        if (cl->sz.samples == cl->sz.batch) cb_out_markf(b, "training step, batch %d", cl->sz.batch);
        else cb_out_markf(b, "training epoch, %ld samples, batch %d", cl->sz.samples, cl->sz.batch);
        break;
    case CB_BENCH_INFER: cb_out_markf(b, "inference, %ld samples, batch %d", cl->sz.samples, cl->sz.batch); break;
    default: cb_out_text(b, kind_title(cl->kind));
    }
}

/* " **R**" (or " –" where either is unmeasured), without the cell's end. */
static int ratio_text(cb_out *b, const cb_bench_cell *mine, const cb_bench_cell *peer)
{
    if (!mine || !peer || !mine->times.n || !peer->times.n) { cb_out_lit(b, " –"); return 0; }
    cb_out_markf(b, " **%.2fx**", cb_series_quantile(&mine->times, 0.5) / cb_series_quantile(&peer->times, 0.5));
    return 1;
}

static void ratio_cell(cb_out *b, const cb_bench_cell *mine, const cb_bench_cell *peer)
{
    ratio_text(b, mine, peer);
    cb_out_lit(b, " |");
}

/* The ratio, then the range of the ratios of the two bindings' medians
 * within each round they both completed: on a machine whose speed drifts
 * between rounds, the pairs measured minutes apart are compared only with
 * each other. */
static void ratio_with_rounds(cb_out *b, const cb_bench_cell *mine, const cb_bench_cell *peer)
{
    const int n = ratio_text(b, mine, peer) ? (mine->rounds.n < peer->rounds.n ? mine->rounds.n : peer->rounds.n) : 0;
    double lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < n; j++) {
        const double q = mine->rounds.v[j] / peer->rounds.v[j];
        if (q < lo) lo = q;
        if (q > hi) hi = q;
    }
    if (n >= 2) cb_out_markf(b, " (%.2fx-%.2fx by round)", lo, hi);
    cb_out_lit(b, " |");
}

/* " TEXT |": one table cell of untrusted text. */
static void cell(cb_out *b, const char *text)
{
    cb_out_lit(b, " ");
    cb_out_text(b, text);
    cb_out_lit(b, " |");
}

/* The rest of a table's header after "| model | measurement |": a column
 * per binding, then one per peer for the ratio. */
static void binding_columns(cb_out *b, const cb_bench_config *c)
{
    for (int i = 0; i < c->nbindings; i++) cell(b, c->bindings[i]);
    for (int i = 1; i < c->nbindings; i++) {
        cb_out_lit(b, " ");
        cb_out_textf(b, "%s / %s", c->bindings[0], c->bindings[i]);
        cb_out_lit(b, " |");
    }
    cb_out_lit(b, "\n|---|---|");
    for (int i = 1; i < 2 * c->nbindings; i++) cb_out_lit(b, "---|");
    cb_out_lit(b, "\n");
}

/* The study's view of speed: per framework default binding D in the
 * bench, D's median time over each other binding's (above 1: the binding
 * is faster than D), as the paper states "tch 3.08x faster than Python". */
static void write_relative_speed(const cb_bench_results *r, cb_out *b)
{
    const cb_bench_config *c = r->c;
    for (int d = 0; d < c->nbindings; d++) {
        if (!r->runners[d]->framework_default) continue;
        cb_out_lit(b, "\n## Speed relative to ");
        cb_out_text(b, c->bindings[d]);
        cb_out_lit(b, "\n\n");
        cb_out_text(b, c->bindings[d]);
        cb_out_lit(b, " is ");
        cb_out_text(b, r->runners[d]->framework);
        cb_out_lit(b, "'s default binding. Each cell is its median time over the binding's: above 1, the binding is"
                      " faster.\n\n| model | measurement |");
        for (int i = 0; i < c->nbindings; i++)
            if (i != d) cell(b, c->bindings[i]);
        cb_out_lit(b, "\n|---|---|");
        for (int i = 1; i < c->nbindings; i++) cb_out_lit(b, "---|");
        cb_out_lit(b, "\n");
        for (int m = 0; m < c->nmodels; m++)
            for (int k = 0; k < CB_BENCH_KINDS; k++) {
                const cb_bench_cell *ref = cb_bench_find(r, m, k, d);
                if (!ref) continue;
                cb_out_lit(b, "|");
                cell(b, c->models[m]);
                cell(b, cb_bench_kind_names[k]);
                for (int i = 0; i < c->nbindings; i++)
                    if (i != d) ratio_cell(b, ref, cb_bench_find(r, m, k, i));
                cb_out_lit(b, "\n");
            }
    }
}

static void write_markdown(const cb_bench_results *r, cb_out *b)
{
    const cb_bench_config *c = r->c;
    cb_out_lit(b, "# crossbind benchmarks\n\nWritten by `crossbind bench` on ");
    cb_out_text(b, r->date);
    if (c->quick) cb_out_lit(b, " with `--quick` (small sample counts: a check of the instrument, not a measurement)");
    cb_out_markf(b, ". Every figure below was measured in that one invocation: the bindings alternate within each of %d"
                    " round(s) (%d completed), each measurement in a fresh process after warm-up, %d threads for every"
                    " binding.\n\n", c->rounds, r->rounds_done, c->threads);
    cb_out_lit(b, "- Machine: ");
    cb_out_text(b, r->machine);
    cb_out_markf(b, "\n- SGEMM (this machine's BLAS, 2048^3, best of 5): %.1f GFLOP/s at 1 thread, %.1f at %d before the"
                    " runs", r->sgemm[0][0], r->sgemm[0][1], c->threads);
    if (r->sgemm[1][0] > 0) cb_out_markf(b, "; %.1f and %.1f after them", r->sgemm[1][0], r->sgemm[1][1]);
    cb_out_markf(b, "\n- FMA peak (this processor's fused multiply-adds, measured on registers: src/bench/fma.c): %.1f"
                    " GFLOP/s at 1 thread, %.1f at %d", r->fma[0], r->fma[1], c->threads);
    cb_out_lit(b, "\n");
    for (int i = 0; i < c->nbindings; i++) {
        cb_out_lit(b, "- ");
        cb_out_text(b, r->runners[i]->name);
        cb_out_lit(b, " (");
        cb_out_text(b, r->runners[i]->framework);
        cb_out_lit(b, ", ");
        cb_out_text(b, r->runners[i]->language);
        cb_out_lit(b, "): ");
        cb_out_text(b, r->versions[i]);
        cb_out_lit(b, "\n");
    }
    cb_out_lit(b, "\nInputs are synthetic and identical in every binding (runners/README.md); times exclude making"
                  " them. Times are medians with [min, max] over every timed unit of every round. A ratio is ");
    cb_out_text(b, c->bindings[0]);
    cb_out_lit(b, "'s median over the peer's: below 1, ");
    cb_out_text(b, c->bindings[0]);
    cb_out_lit(b, " is faster. After it, with two rounds or more: the lowest and highest ratio of the two medians"
                  " within one round, which the machine's drift between rounds does not move.\n\n## Times\n\n| model |"
                  " measurement |");
    binding_columns(b, c);
    for (int m = 0; m < c->nmodels; m++)
        for (int k = 0; k < CB_BENCH_KINDS; k++) {
            const cb_bench_cell *any = NULL;
            for (int i = 0; i < c->nbindings && !any; i++) any = cb_bench_find(r, m, k, i);
            if (!any) continue;
            cb_out_lit(b, "|");
            cell(b, c->models[m]);
            cb_out_lit(b, " ");
            unit_title(b, any);
            cb_out_lit(b, " |");
            for (int i = 0; i < c->nbindings; i++) {
                const cb_bench_cell *cl = cb_bench_find(r, m, k, i);
                if (!cl) cb_out_lit(b, " not measured by this binding |");
                else if (cl->failed) cb_out_lit(b, " failed |");
                else if (!cl->times.n) cb_out_lit(b, " pending |");
                else {
                    cb_out_lit(b, " ");
                    fmt_time(b, &cl->times);
                    if (cl->kind == CB_BENCH_LATENCY)
                        cb_out_markf(b, ", p99 %.2f ms", cb_series_quantile(&cl->times, 0.99) * 1e3);
                    cb_out_lit(b, " |");
                }
            }
            for (int i = 1; i < c->nbindings; i++) ratio_with_rounds(b, cb_bench_find(r, m, k, 0), cb_bench_find(r, m, k, i));
            cb_out_lit(b, "\n");
        }
    write_relative_speed(r, b);
    cb_out_lit(b, "\n## Peak resident memory\n\nThe largest peak resident set (VmHWM, as each worker"
                  " reads it from /proc/self/status when it answers) of the measurement's processes, MiB.\n\n| model | measurement |");
    binding_columns(b, c);
    for (int m = 0; m < c->nmodels; m++)
        for (int k = 0; k < CB_BENCH_KINDS; k++) {
            if (k == CB_BENCH_LATENCY) continue;
            const cb_bench_cell *mine = cb_bench_find(r, m, k, 0);
            cb_out_lit(b, "|");
            cell(b, c->models[m]);
            cell(b, cb_bench_kind_names[k]);
            for (int i = 0; i < c->nbindings; i++) {
                const cb_bench_cell *cl = cb_bench_find(r, m, k, i);
                if (cl && cl->rss_kb) cb_out_markf(b, " %.1f |", cl->rss_kb / 1024.0);
                else cb_out_lit(b, " – |");
            }
            for (int i = 1; i < c->nbindings; i++) {
                const cb_bench_cell *cl = cb_bench_find(r, m, k, i);
                if (mine && cl && mine->rss_kb && cl->rss_kb) cb_out_markf(b, " **%.2fx** |", (double)mine->rss_kb / cl->rss_kb);
                else cb_out_lit(b, " – |");
            }
            cb_out_lit(b, "\n");
        }
    /* The ceiling: the better of the two measurements (one can catch the
     * machine in a slow moment: 155 before, 308 GFLOP/s after, once). */
    const double ceiling = r->sgemm[1][1] > r->sgemm[0][1] ? r->sgemm[1][1] : r->sgemm[0][1];
    cb_out_markf(b, "\n## Share of this machine's SGEMM throughput and FMA peak\n\nProducts' FLOPs (2 per multiply-add of the"
                    " convolutions, fully connected and recurrent layers; a training step counted as 3 forward"
                    " passes) over the median time, against the better SGEMM measurement at %d threads (%.1f"
                    " GFLOP/s). The last column is the time ", c->threads, ceiling);
    cb_out_text(b, c->bindings[0]);
    cb_out_lit(b, " spends inside its convolutions (forward and backward, its per-node timing); for a model with"
                  " convolutions, also over the SGEMM rate that ");
    cb_out_text(b, c->bindings[0]);
    cb_out_lit(b, "'s worker measured right after its units, in the same process and moment (median"
                  " over the units, [min, max]): on a shared machine both rates drift by a third within"
                  " minutes, and a ceiling from another moment moves the share with them.\n\n"
                  "The columns \"of FMA peak\" count only the multiply-adds done (a convolution's taps on"
                  " padding left out; in a crossbind inference cell, its plan's: a convolution run by"
                  " Winograd's method counts its point products, 16 per channel pair and 2x2 block of outputs"
                  " instead of 36, and a recurrent layer's input projections looked up in a table made once"
                  " count none) against the processor's measured FMA peak: the share of the limit that"
                  " the hardware sets.\n\n"
                  "| model | binding | training GFLOP/s | of SGEMM | of FMA peak | inference GFLOP/s | of SGEMM |"
                  " of FMA peak | convolutions in training |\n"
                  "|---|---|---|---|---|---|---|---|---|\n");
    for (int m = 0; m < c->nmodels; m++) {
        if (r->flops[m] <= 0) continue;
        for (int i = 0; i < c->nbindings; i++) {
            const cb_bench_cell *tr = cb_bench_find(r, m, CB_BENCH_TRAIN, i), *in = cb_bench_find(r, m, CB_BENCH_INFER, i);
            if ((!tr || !tr->times.n) && (!in || !in->times.n)) continue;
            cb_out_lit(b, "|");
            cell(b, c->models[m]);
            cell(b, c->bindings[i]);
            if (tr && tr->times.n) {
                const double t = cb_series_quantile(&tr->times, 0.5);
                double g = 3 * r->flops[m] * tr->sz.samples / t / 1e9, done = 3 * r->flops_done[m] * tr->sz.samples / t / 1e9;
                cb_out_markf(b, " %.1f | %.0f%% | %.0f%% |", g, 100 * g / ceiling, 100 * done / r->fma[1]);
            } else cb_out_lit(b, " – | – | – |");
            if (in && in->times.n) {
                const double t = cb_series_quantile(&in->times, 0.5);
                const double per = in->flops_done > 0 ? in->flops_done : r->flops_done[m];
                double g = r->flops[m] * in->sz.samples / t / 1e9, done = per * in->sz.samples / t / 1e9;
                cb_out_markf(b, " %.1f | %.0f%% | %.0f%% |", g, 100 * g / ceiling, 100 * done / r->fma[1]);
            } else cb_out_lit(b, " – | – | – |");
            if (tr && tr->conv.n && r->conv_flops[m] > 0) {
                double g = 3 * r->conv_flops[m] * tr->sz.samples / cb_series_quantile(&tr->conv, 0.5) / 1e9;
                cb_out_markf(b, " %.1f GFLOP/s, %.0f%% of SGEMM (%.0f%% of the step)", g, 100 * g / ceiling,
                             100 * cb_series_quantile(&tr->conv, 0.5) / cb_series_quantile(&tr->times, 0.5));
                cb_series paired;
                paired_shares(r->conv_flops[m] * 3 * tr->sz.samples, tr, &paired);
                if (paired.n)
                    cb_out_markf(b, "; %.0f%% [%.0f, %.0f] of the SGEMM measured beside each unit", 100 * cb_series_quantile(&paired, 0.5),
                                 100 * cb_series_min(&paired), 100 * cb_series_max(&paired));
                free(paired.v);
                cb_out_lit(b, " |");
            } else cb_out_lit(b, " – |");
            cb_out_lit(b, "\n");
        }
    }
    cb_out_lit(b, "\n## Settings\n\nA binding that offers several settings (its manifest's `bench_env`) runs each"
                  " once in round 1; the fastest by median is used from then on (start-up and latency use"
                  " inference's choice).\n\n| model | measurement | binding | setting used | round 1 medians |"
                  " the worker said |\n|---|---|---|---|---|---|\n");
    for (int i = 0; i < r->ncells; i++) {
        const cb_bench_cell *cl = &r->cells[i];
        const cb_runner *rn = r->runners[cl->binding];
        if (!rn->nbench_env && !cl->info[0]) continue;
        cb_out_lit(b, "|");
        cell(b, c->models[cl->model]);
        cell(b, cb_bench_kind_names[cl->kind]);
        cell(b, rn->name);
        cell(b, cl->chosen >= 0 ? setting_of(r, cl) : "–");
        for (int v = 0; v < rn->nbench_env; v++)
            if (cl->probe[v].n) {
                cb_out_lit(b, " ");
                cb_out_text(b, rn->bench_env[v]);
                cb_out_markf(b, ": %.4g s;", cb_series_quantile(&cl->probe[v], 0.5));
            }
        cb_out_lit(b, " |");
        cell(b, cl->info);
        cb_out_lit(b, "\n");
    }
    int failed = 0;
    for (int i = 0; i < r->ncells; i++) failed += r->cells[i].failed;
    if (failed) {
        cb_out_lit(b, "\n## Failures\n\n");
        for (int i = 0; i < r->ncells; i++)
            if (r->cells[i].failed) {
                cb_out_lit(b, "- ");
                cb_out_textf(b, "%s %s %s: %s", c->models[r->cells[i].model], cb_bench_kind_names[r->cells[i].kind],
                             r->runners[r->cells[i].binding]->name, r->cells[i].error);
                cb_out_lit(b, "\n");
            }
    }
    /* The command as text, not a code span: a backtick in a name would end the span. */
    cb_out_lit(b, "\nReproduce: ");
    cb_buf cmd = {0};
    cb_buf_printf(&cmd, "crossbind bench");
    for (int m = 0, first = 1; m < c->nmodels; m++)
        if (!c->onnx[m][0]) {
            cb_buf_printf(&cmd, "%s%s", first ? " --models " : ",", c->models[m]);
            first = 0;
        }
    for (int m = 0; m < c->nmodels; m++)
        if (c->onnx[m][0]) {
            cb_buf_printf(&cmd, " --onnx ");
            cb_buf_shell_word(&cmd, c->onnx[m]);
        }
    cb_buf_printf(&cmd, " --bindings");
    for (int i = 0; i < c->nbindings; i++) cb_buf_printf(&cmd, "%s%s", i ? "," : " ", c->bindings[i]);
    int all = 1; /* --kinds only where some kind was left out */
    for (int k = 0; k < CB_BENCH_KINDS; k++) all &= c->kinds[k] != 0;
    if (!all) {
        cb_buf_printf(&cmd, " --kinds");
        for (int k = 0, first = 1; k < CB_BENCH_KINDS; k++)
            if (c->kinds[k]) {
                cb_buf_printf(&cmd, "%s%s", first ? " " : ",", cb_bench_kind_names[k]);
                first = 0;
            }
    }
    cb_buf_printf(&cmd, " --threads %d --rounds %d%s", c->threads, c->rounds, c->quick ? " --quick" : "");
    cb_out_text(b, cmd.data);
    cb_buf_free(&cmd);
    cb_out_lit(b, ". The box plots: the HTML page beside this one.\n");
}

static void write_html(const cb_bench_results *r, cb_out *b)
{
    const cb_bench_config *c = r->c;
    cb_out_lit(b, "<!doctype html><html><head><meta charset=\"utf-8\">"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"" CB_PAGE_CSP "\">"
                  "<title>crossbind benchmarks</title>"
                  "<style>body{font-family:sans-serif;max-width:1100px;margin:1em auto}figure{display:inline-block;"
                  "margin:0.5em}</style></head><body><h1>crossbind benchmarks</h1><p>");
    cb_out_text(b, r->date);
    cb_out_lit(b, "; ");
    cb_out_text(b, r->machine);
    cb_out_markf(b, "; %d threads; %d round(s) done. Log-scale box plots of every timed unit; the tables are in the"
                    " Markdown page and bench.json.</p>\n", c->threads, r->rounds_done);
    cb_out_lit(b, "<ul id=\"versions\">\n");
    for (int i = 0; i < c->nbindings; i++) {
        cb_out_lit(b, "<li><b>");
        cb_out_text(b, r->runners[i]->name);
        cb_out_lit(b, "</b> (");
        cb_out_text(b, r->runners[i]->framework);
        cb_out_lit(b, ", ");
        cb_out_text(b, r->runners[i]->language);
        cb_out_lit(b, "): ");
        cb_out_text(b, r->versions[i]);
        cb_out_lit(b, "</li>\n");
    }
    cb_out_lit(b, "</ul>\n");
    for (int m = 0; m < c->nmodels; m++)
        for (int k = 0; k < CB_BENCH_KINDS; k++) {
            svg_box boxes[CB_BENCH_MAX_BINDINGS];
            int n = 0;
            for (int i = 0; i < c->nbindings; i++) {
                const cb_bench_cell *cl = cb_bench_find(r, m, k, i);
                if (cl && cl->times.n) boxes[n++] = (svg_box){c->bindings[i], cl->times.v, cl->times.n};
            }
            if (!n) continue;
            char id[96], title[160];
            snprintf(id, sizeof id, "bench-%s-%s", c->models[m], cb_bench_kind_names[k]);
            snprintf(title, sizeof title, "%s: %s", c->models[m], kind_title(k));
            svg_box_plot(b, id, title, "seconds", boxes, n);
        }
    cb_out_lit(b, "</body></html>\n");
}

static cb_status write_page(const char *path, cb_out_mode mode, void (*fill)(const cb_bench_results *, cb_out *),
                            const cb_bench_results *r)
{
    cb_out *o = cb_out_new(mode);
    if (o) fill(r, o);
    cb_status st = cb_out_write(o, path);
    cb_out_free(o);
    return st;
}

static cb_status write_buf(const char *path, void (*fill)(const cb_bench_results *, cb_buf *), const cb_bench_results *r)
{
    cb_buf b = {0};
    fill(r, &b);
    cb_status st = cb_buf_ok(&b) ? cb_write_file_atomic(path, b.data, b.len) : cb_fail(CB_ERR_NOMEM, "out of memory");
    cb_buf_free(&b);
    return st;
}

cb_status cb_bench_write(const cb_bench_results *r)
{
    char path[800];
    snprintf(path, sizeof path, "%s/bench.json", r->c->out_dir);
    cb_status st = write_buf(path, write_json, r);
    snprintf(path, sizeof path, "%s/bench.md", r->c->out_dir);
    if (st == CB_OK) st = write_page(path, CB_OUT_MD, write_markdown, r);
    snprintf(path, sizeof path, "%s/bench.html", r->c->out_dir);
    if (st == CB_OK) st = write_page(path, CB_OUT_HTML, write_html, r);
    if (st == CB_OK && r->c->doc_path[0]) {
        st = write_page(r->c->doc_path, CB_OUT_MD, write_markdown, r);
        snprintf(path, sizeof path, "%s", r->c->doc_path);
        char *dot = strrchr(path, '.');
        if (dot && !strcmp(dot, ".md")) strcpy(dot, ".html");
        else strncat(path, ".html", sizeof path - strlen(path) - 1);
        if (st == CB_OK) st = write_page(path, CB_OUT_HTML, write_html, r);
    }
    return st;
}
