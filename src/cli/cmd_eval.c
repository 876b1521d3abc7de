/* crossbind eval MODEL --weights FILE: the protocol's inference measurement
 * (section 4): one warm-up pass over the test set, then N timed passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "crossbind/formats.h"
#include "../core/json.h"

static void help(void)
{
    printf("usage: crossbind eval [MODEL] --weights FILE [options]\n"
           "  FILE is safetensors, a PyTorch state dict (.pt/.pth) or ONNX, recognised by\n"
           "  content. Parameters files need MODEL, one of: %s; an ONNX file\n"
           "  brings its own graph (serialization mode), and MODEL, if given, must take the same input.\n",
           cli_models(NULL, ", "));
    printf("  --data DIR          MNIST format for %s (default %s), CIFAR-10\n"
           "                      binary batches for %s (default data/cifar-stand-in),\n"
           "                      IMDb (aclImdb or prepared) for %s\n"
           "                      (default data/imdb-prepared)\n",
           cli_models("mnist", ", "), CB_DEFAULT_DATA, cli_models("cifar", ", "), cli_models("imdb", ", "));
    printf(           "  --vocab FILE        the vocabulary the text model was trained with (the run's\n"
           "                      vocab.txt); needed for raw aclImdb reviews\n"
           "  --batch N           batch size (default 128)\n"
           "  --repeat N          timed passes after one warm-up pass (default 5)\n"
           "  --limit-test N      use the first N test samples\n"
           "  --threads N         threads (default: all cores; at most 4 x the cores)\n"
           "  --level reference|fast|fused|fastmath (default fastmath; --kernels fast|reference: the older\n"
           "  spelling of fastmath and reference)\n"
           "  --predictions FILE  per-sample CSV: index,label,prediction,probabilities...\n"
           "  --logits FILE       the last pass's outputs as .npy (float32 [N,K])\n"
           "  --json              print one JSON object\n"
           "  --non-strict        load a parameters file that also holds tensors the model lacks\n");
}

static cb_status write_predictions(const char *path, const cb_evaluator *ev, const cb_dataset *d, int k)
{
    cb_buf b = {0};
    const int *pred = cb_evaluator_predictions(ev);
    const float *p = cb_evaluator_scores(ev);
    cb_buf_printf(&b, "index,label,prediction");
    for (int j = 0; j < k; j++) cb_buf_printf(&b, ",p%d", j);
    cb_buf_printf(&b, "\n");
    for (int64_t i = 0; i < d->n; i++) {
        cb_buf_printf(&b, "%lld,%d,%d", (long long)i, (int)d->y[i], pred[i]);
        for (int j = 0; j < k; j++) cb_buf_printf(&b, ",%.9g", (double)p[i * k + j]);
        cb_buf_printf(&b, "\n");
    }
    cb_status s = cb_buf_ok(&b) ? cb_write_file_atomic(path, b.data, b.len)
                                : cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    cb_buf_free(&b);
    return s;
}

int cmd_eval(int argc, char **argv)
{
    const char *model = NULL, *weights = NULL, *data = NULL, *pred_path = NULL, *logits_path = NULL, *v;
    const char *vocab = NULL;
    long batch = 128, repeat = 5, limit = 0, threads = cli_default_threads();
    int json = 0, strict = 1;
    cb_kernels kernels = CB_KERNELS_FAST;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return 0; }
        else if (a[0] != '-') {
            if (model) return cli_error("unexpected argument '%s'", a);
            model = a;
        }
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--non-strict")) strict = 0;
        else if (!(v = cli_option_value("eval",
                                        (const char *const[]){"--weights", "--data", "--vocab", "--predictions",
                                                              "--logits", "--batch", "--repeat", "--limit-test",
                                                              "--threads", "--kernels", "--level", NULL},
                                        argc, argv, &i)))
            return 1;
        else if (!strcmp(a, "--weights")) weights = v;
        else if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "--vocab")) vocab = v;
        else if (!strcmp(a, "--predictions")) pred_path = v;
        else if (!strcmp(a, "--logits")) logits_path = v;
        else if (!strcmp(a, "--batch")) { if (cli_long(a, v, 1, 65536, &batch)) return 1; }
        else if (!strcmp(a, "--repeat")) { if (cli_long(a, v, 1, 1000, &repeat)) return 1; }
        else if (!strcmp(a, "--limit-test")) { if (cli_long(a, v, 1, 1000000000L, &limit)) return 1; }
        else if (!strcmp(a, "--threads")) { if (cli_threads(a, v, &threads)) return 1; }
        else if (!strcmp(a, "--kernels")) { if (cli_kernels(v, &kernels)) return 1; }
        else if (!strcmp(a, "--level")) { if (cli_level(v, &kernels)) return 1; }
        else return cli_error("unknown option '%s' (see crossbind eval --help)", a);
    }
    if (!weights) return cli_error("eval: --weights FILE is required");

    cb_model *m = NULL;
    cb_dataset test = {0};
    cb_evaluator *ev = NULL;
    double *times = NULL;
    int64_t *counts = NULL;
    int rc = 1;
    cb_load_info info;
    cb_status s = cb_set_threads((int)threads);
    if (s == CB_OK) s = cb_model_load_ex(model, weights, 1, strict, &m, &info);
    if (s == CB_ERR_UNSUPPORTED) { /* the file is sound, but uses what crossbind lacks: the runner protocol's exit 3 */
        cli_status(s);
        return CB_EXIT_UNSUPPORTED;
    }
    if (s == CB_OK) cli_notice_load(weights, &info);
    /* The data set: the model's format, or for an imported model the one
     * whose samples have its input's size. */
    const char *format = "mnist";
    if (s == CB_OK && m->data_format[0]) format = m->data_format;
    else if (s == CB_OK && cb_node_numel(&m->graph.nodes[m->input]) == 3 * 32 * 32) format = "cifar";
    for (int i = 0; s == CB_OK && !m->data_format[0] && i < m->graph.count; i++)
        if (m->graph.nodes[i].op == CB_OP_EMBEDDING) format = "imdb"; /* token ids in, a text model */
    if (!data) data = cb_dataset_default_dir(format);
    cb_vocab given = {0};
    if (s == CB_OK && vocab) s = cb_vocab_load(vocab, &given);
    if (s == CB_OK) s = cli_load_data(m, format, data, 0, limit, vocab ? &given : NULL, NULL, &test);
    cb_vocab_free(&given);
    if (s == CB_OK && cb_node_numel(&m->graph.nodes[m->input]) != (int64_t)test.c * test.h * test.w)
        s = cb_fail(CB_ERR_SHAPE, "%s takes %lld values per sample, the data set in %s has %dx%dx%d (give "
                    "--data DIR with the model's data)", weights, (long long)cb_node_numel(&m->graph.nodes[m->input]),
                    data, test.c, test.h, test.w);
    if (s == CB_OK && m->n_inputs != 1)
        s = cb_fail(CB_ERR_UNSUPPORTED, "%s has %d inputs; eval feeds one (use crossbind run)", weights, m->n_inputs);
    if (s == CB_OK && m->fixed_batch && m->fixed_batch != batch)
        s = cb_fail(CB_ERR_SHAPE, "%s fixes the batch size to %lld: use --batch %lld", weights,
                    (long long)m->fixed_batch, (long long)m->fixed_batch);
    if (s == CB_OK) s = cb_evaluator_create(m, (int)batch, test.n, kernels, &ev);
    if (s == CB_OK && (!(times = calloc((size_t)repeat, sizeof *times)) ||
                       !(counts = calloc((size_t)repeat, sizeof *counts))))
        s = cb_fail(CB_ERR_NOMEM, "out of memory");
    cb_eval_result r;
    if (s == CB_OK) s = cb_evaluate(ev, &test, 0, &r); /* warm-up */
    double mean = 0;
    for (long i = 0; s == CB_OK && i < repeat; i++) {
        /* F1 and AUC from the last timed pass's outputs; its time_s covers
         * the forward passes only, not the metrics. */
        s = cb_evaluate(ev, &test, i == repeat - 1, &r);
        times[i] = r.time_s;
        counts[i] = r.correct;
        mean += r.time_s / (double)repeat;
    }
    if (s == CB_OK && pred_path) s = write_predictions(pred_path, ev, &test, m->classes);
    if (s == CB_OK && logits_path) {
        cb_tensor t = {.dtype = CB_F32, .ndim = 2, .shape = {test.n, m->classes},
                       .data = (void *)cb_evaluator_logits(ev)};
        s = cb_npy_write(logits_path, &t);
    }
    if (s != CB_OK) { rc = cli_status(s); goto done; }
    cli_notice_nonfinite(weights, "test", &r);
    if (json) {
        cb_buf b = {0};
        cb_buf_printf(&b, "{\"binding\": \"crossbind\", \"model\": ");
        cb_buf_json_string(&b, m->name);
        cb_buf_printf(&b, ", \"load_mode\": \"%s\", \"format\": ", info.serialized ? "serialization" : "parameters");
        cb_buf_json_string(&b, cb_file_kind_name((cb_file_kind)info.kind));
        cb_buf_printf(&b, ", \"weights\": ");
        cb_buf_json_string(&b, weights);
        cb_buf_printf(&b, ", \"correct\": %lld, \"total\": %lld, \"accuracy\": ", (long long)r.correct,
                      (long long)r.total);
        cb_buf_json_number(&b, r.accuracy);
        cb_buf_printf(&b, ", \"loss\": ");
        cb_buf_json_number(&b, r.loss);
        cb_buf_printf(&b, ", \"f1_macro\": ");
        cb_buf_json_number(&b, r.f1_macro);
        cb_buf_printf(&b, ", \"auc_macro\": ");
        cb_buf_json_number(&b, r.auc_macro);
        cb_buf_printf(&b, ", \"nonfinite_outputs\": %lld", (long long)r.nonfinite);
        cb_buf_printf(&b, ", \"batch\": %ld, \"threads\": %ld, \"times_s\": [", batch, threads);
        for (long i = 0; i < repeat; i++) cb_buf_printf(&b, "%s%.9g", i ? ", " : "", times[i]);
        cb_buf_printf(&b, "], \"correct_per_pass\": [");
        for (long i = 0; i < repeat; i++) cb_buf_printf(&b, "%s%lld", i ? ", " : "", (long long)counts[i]);
        cb_buf_printf(&b, "], \"mean_time_s\": %.9g}\n", mean);
        if (cb_buf_ok(&b)) fputs(b.data, stdout);
        cb_buf_free(&b);
    } else {
        printf("%s: %lld/%lld correct, accuracy %.4f, loss %.4f, macro F1 %.4f, AUC %.4f, "
               "mean time %.4fs over %ld passes (batch %ld, %ld threads)\n",
               m->name, (long long)r.correct, (long long)r.total, r.accuracy, r.loss, r.f1_macro, r.auc_macro,
               mean, repeat, batch, threads);
    }
    rc = 0;
done:
    free(times);
    free(counts);
    cb_evaluator_free(ev);
    cb_dataset_free(&test);
    cb_model_free(m);
    return rc;
}
