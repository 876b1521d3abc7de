/* crossbind train MODEL: one run of the study protocol (section 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "cli.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"
#include "../core/json.h"

typedef struct train_cli {
    const char *model, *data, *init, *out, *vocab;
    long epochs, batch, threads, limit_train, limit_test, run;
    uint64_t seed;
    int seed_given, quiet, no_dropout, non_strict;
    cb_train_options opt;
    const cb_dataset *train_set, *test_set;
    char run_json[4200];
} train_cli;

static void help(void)
{
    printf("usage: crossbind train %s [options]\n", cli_models(NULL, "|"));
    printf("  --data DIR          the model's data set: MNIST format for %s (default %s),\n"
           "                      CIFAR-10 binary batches for %s (default data/cifar-stand-in,\n"
           "                      made by: crossbind data cifar-stand-in --out data/cifar-stand-in),\n"
           "                      IMDb, aclImdb layout or prepared, for %s (default\n"
           "                      data/imdb-prepared, made by crossbind data imdb-stand-in, then\n"
           "                      crossbind data imdb-prepare --out data/imdb-prepared)\n",
           cli_models("mnist", ", "), CB_DEFAULT_DATA, cli_models("cifar", ", "), cli_models("imdb", ", "));
    printf(           "  --vocab FILE        text models: use this vocabulary instead of building one from\n"
           "                      the training reviews; the one used is saved as OUT/vocab.txt\n"
           "  --epochs N          epochs (default: the protocol's, 200 for CNNs, 30 for RNNs)\n"
           "  --batch N           batch size (default: the protocol's, 128 or 256)\n"
           "  --optimizer sgd|adam (default: the protocol's, SGD for CNNs, Adam for RNNs)\n"
           "  --lr X              learning rate (default: the protocol's: 0.05, LSTM 8e-5, GRU 3e-4)\n"
           "  --momentum X        SGD momentum (default 0)\n"
           "  --weight-decay X    L2 weight decay (default 0)\n"
           "  --seed S | --run I  seed, or the protocol's run I in 1..5 (default: run 1)\n"
           "  --init FILE         start from these weights instead of a seeded initialisation\n"
           "  --non-strict        --init may hold tensors the model lacks (ignored, listed)\n"
           "  --threads N         threads for everything (default: all cores; at most 4 x the cores)\n"
           "  --limit-train N     use the first N training samples\n"
           "  --limit-test N      use the first N test samples\n"
           "  --shuffle           seeded shuffle each epoch (the protocol does not shuffle)\n"
           "  --subactivities     time batch loading, forward+loss and backward+step\n"
           "  --level reference|fast|fused|fastmath  optimisation level (default fastmath; see crossbind plan)\n"
           "  --kernels fast|reference  the older spelling of --level fastmath and reference\n"
           "  --out DIR           output directory (default runs/MODEL-SEED)\n"
           "  --quiet             no progress output\n"
           "  --no-dropout        dropout probability 0 (parity runs: each binding draws its own masks)\n");
}

static void json_meta(cb_buf *b, const train_cli *c)
{
    struct utsname u;
    char host[256] = "unknown";
    if (uname(&u) == 0) snprintf(host, sizeof host, "%s %s %s", u.sysname, u.release, u.machine);
    cb_buf_printf(b, "  \"binding\": \"crossbind\",\n  \"model\": ");
    cb_buf_json_string(b, c->model);
    cb_buf_printf(b, ",\n  \"seed\": %llu,\n  \"run\": %ld,\n  \"data\": ", (unsigned long long)c->seed, c->run);
    cb_buf_json_string(b, c->data);
    cb_buf_printf(b, ",\n  \"n_train\": %lld,\n  \"n_test\": %lld,\n", (long long)c->train_set->n,
                  (long long)c->test_set->n);
    cb_buf_printf(b, "  \"batch\": %ld,\n  \"optimizer\": \"%s\",\n  \"lr\": ", c->batch,
                  c->opt.optim.kind == CB_OPTIM_ADAM ? "adam" : "sgd");
    cb_buf_printf(b, "%.7g", (double)c->opt.optim.lr); /* float options: 7 digits, as given */
    cb_buf_printf(b, ",\n  \"momentum\": ");
    cb_buf_printf(b, "%.7g", (double)c->opt.optim.momentum);
    cb_buf_printf(b, ",\n  \"weight_decay\": ");
    cb_buf_printf(b, "%.7g", (double)c->opt.optim.weight_decay);
    cb_buf_printf(b, ",\n  \"shuffle\": %s,\n  \"dropout\": %s,\n  \"init\": ", c->opt.shuffle ? "true" : "false",
                  c->no_dropout ? "false" : "true");
    if (c->init) cb_buf_json_string(b, c->init);
    else cb_buf_printf(b, "null");
    cb_buf_printf(b, ",\n  \"threads\": %ld,\n", c->threads);
    /* "kernels": the older two-way spelling, where the level has one. */
    if (c->opt.kernels == CB_KERNELS_REFERENCE || c->opt.kernels == CB_KERNELS_FAST)
        cb_buf_printf(b, "  \"kernels\": \"%s\",\n", c->opt.kernels == CB_KERNELS_FAST ? "fast" : "reference");
    cb_buf_printf(b, "  \"level\": \"%s\",\n", cb_level_name(c->opt.kernels));
    cb_buf_printf(b, "  \"versions\": {\"crossbind\": \"%s\", \"blas\": ", CB_VERSION);
    cb_buf_json_string(b, cb_blas_name());
    cb_buf_printf(b, ", \"convolutions\": ");
    cb_buf_json_string(b, cb_conv_backend());
    cb_buf_printf(b, ", \"compiler\": ");
    cb_buf_json_string(b, __VERSION__);
    cb_buf_printf(b, "},\n  \"machine\": ");
    cb_buf_json_string(b, host);
    cb_buf_printf(b, ",\n");
}

/* run.json is rewritten (atomically) after every epoch, so measured epochs
 * survive a later failure or interruption; "status" says which it is. */
static cb_status write_run_json(const train_cli *c, const cb_train_result *r, const char *status)
{
    cb_buf b = {0};
    cb_buf_printf(&b, "{\n  \"format\": \"crossbind-run/1\",\n  \"status\": \"%s\",\n", status);
    json_meta(&b, c);
    cb_buf_printf(&b, "  \"epochs\": [");
    for (int i = 0; i < r->n_epochs; i++) {
        const cb_epoch_stats *e = &r->epochs[i];
        cb_buf_printf(&b, "%s\n    {\"epoch\": %d, \"train_acc\": ", i ? "," : "", e->epoch);
        cb_buf_json_number(&b, e->train_acc);
        cb_buf_printf(&b, ", \"test_acc\": ");
        cb_buf_json_number(&b, e->test_acc);
        cb_buf_printf(&b, ", \"train_loss\": ");
        cb_buf_json_number(&b, e->train_loss);
        cb_buf_printf(&b, ", \"test_loss\": ");
        cb_buf_json_number(&b, e->test_loss);
        cb_buf_printf(&b, ", \"train_time_s\": %.6f, \"eval_time_s\": %.6f}", e->train_time_s, e->eval_time_s);
    }
    double train_s = 0, eval_s = 0;
    for (int i = 0; i < r->n_epochs; i++) {
        train_s += r->epochs[i].train_time_s;
        eval_s += r->epochs[i].eval_time_s;
    }
    int done = !strcmp(status, "complete");
    cb_buf_printf(&b, "\n  ],\n  \"training_time_s\": %.6f,\n  \"eval_time_s\": %.6f,\n  \"total_time_s\": %.6f,\n",
                  done ? r->training_time_s : train_s, eval_s, done ? r->total_time_s : train_s + eval_s);
    if (c->opt.subactivities)
        cb_buf_printf(&b, "  \"subactivities_s\": {\"load\": %.6f, \"forward\": %.6f, \"backward\": %.6f},\n",
                      r->load_s, r->forward_s, r->backward_s);
    const cb_eval_result *f = &r->final_test;
    cb_buf_printf(&b, "  \"test_accuracy\": ");
    if (done) cb_buf_json_number(&b, f->accuracy); else cb_buf_printf(&b, "null");
    cb_buf_printf(&b, ",\n  \"test_correct\": %lld,\n  \"f1_macro\": ", done ? (long long)f->correct : -1LL);
    if (done) cb_buf_json_number(&b, f->f1_macro); else cb_buf_printf(&b, "null");
    cb_buf_printf(&b, ",\n  \"auc_macro\": ");
    if (done) cb_buf_json_number(&b, f->auc_macro); else cb_buf_printf(&b, "null");
    cb_buf_printf(&b, ",\n  \"nonfinite_outputs\": %lld", done ? (long long)f->nonfinite : -1LL);
    if (r->plan_sha256[0]) /* which kernels ran: `crossbind plan MODEL --train --batch B --hash` */
        cb_buf_printf(&b, ",\n  \"plan_sha256\": \"%s\"", r->plan_sha256);
    cb_buf_printf(&b, "\n}\n");
    cb_status s = cb_buf_ok(&b) ? cb_write_file_atomic(c->run_json, b.data, b.len)
                                : cb_fail(CB_ERR_NOMEM, "out of memory writing run.json");
    cb_buf_free(&b);
    return s;
}

typedef struct progress_state {
    train_cli *c;
    cb_train_result *partial; /* for per-epoch saving */
    int tty;
    cb_status save_status;
} progress_state;

static void on_progress(const cb_train_progress *p, void *user)
{
    progress_state *ps = user;
    if (p->finished) {
        const cb_epoch_stats *e = p->finished;
        if (!ps->c->quiet)
            fprintf(stderr, "%sepoch %d/%d  train acc %.4f loss %.4f  test acc %.4f loss %.4f  (%.2fs train, %.2fs eval)\n",
                    ps->tty ? "\r\033[K" : "", e->epoch, p->epochs, e->train_acc, e->train_loss, e->test_acc,
                    e->test_loss, e->train_time_s, e->eval_time_s);
        /* Save what is measured so far (the last epoch is saved as complete). */
        if (e->epoch < p->epochs && ps->save_status == CB_OK)
            ps->save_status = write_run_json(ps->c, ps->partial, "incomplete");
        return;
    }
    if (!ps->c->quiet && ps->tty && (p->step % 20 == 0 || p->step == p->steps)) {
        double per_step = p->elapsed_s / ((double)(p->epoch - 1) * p->steps + p->step);
        double left = per_step * ((double)(p->epochs - p->epoch) * p->steps + (p->steps - p->step));
        fprintf(stderr, "\r\033[Kepoch %d/%d  step %lld/%lld  loss %.4f  ~%.0fs left (training only)",
                p->epoch, p->epochs, (long long)p->step, (long long)p->steps, p->last_loss, left);
    }
}

static int parse(train_cli *c, int argc, char **argv)
{
    const char *v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); exit(0); }
        else if (a[0] != '-') {
            if (c->model) return cli_error("unexpected argument '%s'", a);
            c->model = a;
        }
        else if (!strcmp(a, "--shuffle")) c->opt.shuffle = 1;
        else if (!strcmp(a, "--subactivities")) c->opt.subactivities = 1;
        else if (!strcmp(a, "--quiet")) c->quiet = 1;
        else if (!strcmp(a, "--no-dropout")) c->no_dropout = 1;
        else if (!strcmp(a, "--non-strict")) c->non_strict = 1;
        else if (!(v = cli_option_value("train",
                                        (const char *const[]){"--data", "--vocab", "--init", "--out", "--epochs",
                                                              "--batch", "--threads", "--limit-train", "--limit-test",
                                                              "--run", "--seed", "--lr", "--momentum",
                                                              "--weight-decay", "--optimizer", "--kernels", "--level", NULL},
                                        argc, argv, &i)))
            return 1;
        else if (!strcmp(a, "--data")) c->data = v;
        else if (!strcmp(a, "--vocab")) c->vocab = v;
        else if (!strcmp(a, "--init")) c->init = v;
        else if (!strcmp(a, "--out")) c->out = v;
        else if (!strcmp(a, "--epochs")) { if (cli_long(a, v, 1, 100000, &c->epochs)) return 1; }
        else if (!strcmp(a, "--batch")) { if (cli_long(a, v, 1, 65536, &c->batch)) return 1; }
        else if (!strcmp(a, "--threads")) { if (cli_threads(a, v, &c->threads)) return 1; }
        else if (!strcmp(a, "--limit-train")) { if (cli_long(a, v, 1, 1000000000L, &c->limit_train)) return 1; }
        else if (!strcmp(a, "--limit-test")) { if (cli_long(a, v, 1, 1000000000L, &c->limit_test)) return 1; }
        else if (!strcmp(a, "--run")) { if (cli_long(a, v, 1, 5, &c->run)) return 1; }
        else if (!strcmp(a, "--seed")) {
            long s;
            if (cli_long(a, v, 0, 0x7fffffffffffffffL, &s)) return 1;
            c->seed = (uint64_t)s;
            c->seed_given = 1;
        }
        else if (!strcmp(a, "--lr")) { if (cli_float(a, v, 1e-12, 100, &c->opt.optim.lr)) return 1; }
        else if (!strcmp(a, "--momentum")) { if (cli_float(a, v, 0, 0.999999, &c->opt.optim.momentum)) return 1; }
        else if (!strcmp(a, "--weight-decay")) { if (cli_float(a, v, 0, 10, &c->opt.optim.weight_decay)) return 1; }
        else if (!strcmp(a, "--optimizer")) {
            if (!strcmp(v, "sgd")) c->opt.optim.kind = CB_OPTIM_SGD;
            else if (!strcmp(v, "adam")) c->opt.optim.kind = CB_OPTIM_ADAM;
            else return cli_error("--optimizer must be sgd or adam, got '%s'", v);
        }
        else if (!strcmp(a, "--kernels")) { if (cli_kernels(v, &c->opt.kernels)) return 1; }
        else if (!strcmp(a, "--level")) { if (cli_level(v, &c->opt.kernels)) return 1; }
        else return cli_error("unknown option '%s' (see crossbind train --help)", a);
    }
    if (!c->model) return cli_error("train: which model? (see crossbind train --help)");
    if (c->seed_given && c->run) return cli_error("give --seed or --run, not both");
    if (!c->seed_given) {
        if (!c->run) c->run = 1;
        c->seed = cb_protocol_seeds[c->run - 1];
    }
    return 0;
}

/* The model in every format crossbind writes: <stem>.safetensors, <stem>.pt
 * (a PyTorch state dict) and <stem>.onnx. */
static cb_status save_model(const cb_model *m, const char *dir, const char *stem, const char *const *meta)
{
    char path[4200];
    cb_tensor_list params = {0};
    cb_status s = cb_graph_params_to_list(&m->graph, &params);
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, stem);
    if (s == CB_OK) s = cb_safetensors_write(path, &params, meta);
    snprintf(path, sizeof path, "%s/%s.pt", dir, stem);
    if (s == CB_OK) s = cb_torch_write(path, &params);
    snprintf(path, sizeof path, "%s/%s.onnx", dir, stem);
    if (s == CB_OK) s = cb_onnx_export(m, path);
    cb_tensor_list_free(&params);
    return s;
}

int cmd_train(int argc, char **argv)
{
    train_cli c = {.data = NULL, .threads = cli_default_threads()};
    c.opt.optim = cb_optim_defaults(CB_OPTIM_SGD, 0.0f);
    c.opt.optim.kind = (cb_optim_kind)-1;
    c.opt.kernels = CB_KERNELS_FAST;
    if (parse(&c, argc, argv)) return 1;
    /* What the user left out comes from the protocol's configuration. */
    cb_train_defaults d;
    cb_status ds = cb_model_train_defaults(c.model, &d);
    if (ds != CB_OK) return cli_status(ds);
    if (!c.epochs) c.epochs = d.epochs;
    if (!c.batch) c.batch = d.batch;
    if ((int)c.opt.optim.kind < 0) {
        c.opt.optim.kind = d.optimizer;
        if (c.opt.optim.lr == 0.0f) c.opt.optim.lr = d.lr;
    }
    if (c.opt.optim.lr == 0.0f) c.opt.optim.lr = c.opt.optim.kind == CB_OPTIM_ADAM ? 1e-3f : 0.05f;
    float lr = c.opt.optim.lr, mom = c.opt.optim.momentum, wd = c.opt.optim.weight_decay;
    c.opt.optim = cb_optim_defaults(c.opt.optim.kind, lr);
    c.opt.optim.momentum = mom;
    c.opt.optim.weight_decay = wd;
    if (c.opt.optim.kind == CB_OPTIM_ADAM && mom != 0.0f) return cli_error("--momentum applies to sgd only");
    c.opt.epochs = (int)c.epochs;
    c.opt.batch = (int)c.batch;
    c.opt.shuffle_seed = c.seed;

    cb_model *m = NULL;
    cb_status s = cb_model_create(c.model, &m);
    if (s != CB_OK) return cli_status(s);
    for (int i = 0; c.no_dropout && i < m->graph.count; i++)
        if (m->graph.nodes[i].op == CB_OP_DROPOUT) m->graph.nodes[i].p = 0.0f;
    char outbuf[4096];
    if (!c.out) {
        snprintf(outbuf, sizeof outbuf, "runs/%s-%llu", c.model, (unsigned long long)c.seed);
        c.out = outbuf;
    }
    int rc = 1;
    cb_dataset train = {0}, test = {0};
    cb_vocab vocab = {0};
    cb_train_result r = {0};
    if (cli_prepare_out_dir(c.out)) goto done;
    snprintf(c.run_json, sizeof c.run_json, "%s/run.json", c.out);
    remove(c.run_json); /* a stale result must not pass for this run's */
    if ((s = cb_set_threads((int)c.threads)) != CB_OK) { rc = cli_status(s); goto done; }
    if (!c.data) c.data = cb_dataset_default_dir(m->data_format);
    /* The training split fixes the vocabulary of a text model; the test
     * split and every later evaluation use it (saved as vocab.txt). */
    cb_vocab given = {0};
    if (c.vocab && (s = cb_vocab_load(c.vocab, &given)) != CB_OK) { rc = cli_status(s); goto done; }
    s = cli_load_data(m, m->data_format, c.data, 1, c.limit_train, c.vocab ? &given : NULL, &vocab, &train);
    cb_vocab_free(&given);
    if (s != CB_OK ||
        (s = cli_load_data(m, m->data_format, c.data, 0, c.limit_test, vocab.num_words ? &vocab : NULL, NULL,
                           &test)) != CB_OK) {
        rc = cli_status(s);
        goto done;
    }
    if (vocab.num_words) {
        char vpath[4200];
        snprintf(vpath, sizeof vpath, "%s/vocab.txt", c.out);
        if ((s = cb_vocab_save(&vocab, vpath)) != CB_OK) { rc = cli_status(s); goto done; }
    }
    c.train_set = &train;
    c.test_set = &test;
    if (c.init) s = cli_load_weights(m, c.init, !c.non_strict);
    else cb_model_init(m, c.seed);
    if (s != CB_OK) { rc = cli_status(s); goto done; }

    const char *meta[] = {"model", c.model, "format", "crossbind-weights/1", NULL};
    if ((s = save_model(m, c.out, "init", meta)) != CB_OK) { rc = cli_status(s); goto done; }

    if (!c.quiet)
        fprintf(stderr, "crossbind: training %s (%zu parameters) on %lld samples of %s, %ld epochs, %ld threads\n",
                c.model, cb_model_param_count(m), (long long)train.n, c.data, c.epochs, c.threads);
    progress_state ps = {.c = &c, .partial = &r, .tty = isatty(2)};
    c.opt.progress = on_progress;
    c.opt.user = &ps;
    s = cb_train(m, &train, &test, &c.opt, &r);
    if (s != CB_OK) {
        /* Saving the measured epochs may fail too; report the first error. */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", cb_last_error());
        if (r.n_epochs > 0) write_run_json(&c, &r, "failed");
        rc = cli_status(cb_fail(s, "%s", msg));
        goto done;
    }
    if (ps.save_status != CB_OK) { rc = cli_status(ps.save_status); goto done; }
    cli_notice_nonfinite(c.model, "test", &r.final_test);
    s = save_model(m, c.out, "final", meta);
    if (s == CB_OK) s = write_run_json(&c, &r, "complete");
    if (s != CB_OK) { rc = cli_status(s); goto done; }
    printf("%s: test accuracy %.4f (%lld/%lld), macro F1 %.4f, AUC %.4f, training %.2fs, eval %.2fs -> %s\n",
           c.model, r.final_test.accuracy, (long long)r.final_test.correct, (long long)r.final_test.total,
           r.final_test.f1_macro, r.final_test.auc_macro, r.training_time_s, r.eval_time_s, c.run_json);
    rc = 0;
done:
    cb_train_result_free(&r);
    cb_dataset_free(&train);
    cb_dataset_free(&test);
    cb_vocab_free(&vocab);
    cb_model_free(m);
    return rc;
}
