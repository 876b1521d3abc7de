/* The table of built-in models: what each consumes and which loss trains it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/model.h"
#include "models.h"

typedef struct model_entry {
    const char *name;
    const char *data; /* the data set format it trains on */
    int ndim;
    int64_t input[3];
    int classes;
    cb_op loss;
    int (*build)(cb_graph *g, int x);
    cb_train_defaults defaults; /* protocol section 3, the default study */
} model_entry;

static const model_entry models[] = {
    {"lenet1", "mnist", 3, {1, 28, 28}, 10, CB_OP_SOFTMAX_XENT, cb_build_lenet1, {CB_OPTIM_SGD, 0.05f, 128, 200}},
    {"lenet5", "mnist", 3, {1, 28, 28}, 10, CB_OP_SOFTMAX_XENT, cb_build_lenet5, {CB_OPTIM_SGD, 0.05f, 128, 200}},
    {"vgg16", "cifar", 3, {3, 32, 32}, 10, CB_OP_SOFTMAX_XENT, cb_build_vgg16, {CB_OPTIM_SGD, 0.05f, 128, 200}},
    {"lstm", "imdb", 1, {300}, 1, CB_OP_BCE, cb_build_lstm, {CB_OPTIM_ADAM, 8e-5f, 256, 30}},
    {"gru", "imdb", 1, {300}, 1, CB_OP_BCE, cb_build_gru, {CB_OPTIM_ADAM, 3e-4f, 256, 30}},
    {"gru-rb", "imdb", 1, {300}, 1, CB_OP_BCE, cb_build_gru_rb, {CB_OPTIM_ADAM, 3e-4f, 256, 30}},
};
#define N_MODELS (sizeof models / sizeof models[0])

const char *const *cb_model_names(void)
{
    static const char *names[N_MODELS + 1];
    for (size_t i = 0; i < N_MODELS; i++) names[i] = models[i].name;
    return names;
}

const char *cb_model_data_format(const char *name)
{
    for (size_t i = 0; i < N_MODELS; i++)
        if (name && strcmp(models[i].name, name) == 0) return models[i].data;
    return NULL;
}

cb_status cb_model_train_defaults(const char *name, cb_train_defaults *out)
{
    for (size_t i = 0; i < N_MODELS; i++)
        if (strcmp(models[i].name, name) == 0) {
            *out = models[i].defaults;
            return CB_OK;
        }
    return cb_fail(CB_ERR_NOT_FOUND, "unknown model '%s'", name);
}

cb_status cb_model_create(const char *name, cb_model **out)
{
    *out = NULL;
    const model_entry *e = NULL;
    char known[256] = "";
    for (size_t i = 0; i < N_MODELS; i++) {
        if (strcmp(models[i].name, name) == 0) e = &models[i];
        size_t used = strlen(known);
        snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", models[i].name);
    }
    if (!e) return cb_fail(CB_ERR_NOT_FOUND, "unknown model '%s' (known: %s)", name, known);
    cb_model *m = calloc(1, sizeof *m);
    if (!m) return cb_fail(CB_ERR_NOMEM, "out of memory creating model %s", name);
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->data_format, sizeof m->data_format, "%s", e->data);
    m->classes = e->classes;
    cb_graph *g = &m->graph;
    cb_graph_init(g);
    int64_t one[1] = {1};
    m->input = cb_graph_input(g, "input", e->ndim, e->input);
    m->labels = cb_graph_input(g, "labels", 1, one);
    int pred = e->build(g, m->input);
    if (pred >= 0) g->output = pred;
    m->n_inputs = m->n_outputs = 1;
    m->inputs[0] = m->input;
    m->outputs[0] = pred;
    int loss = cb_graph_loss(g, e->loss, pred, m->labels);
    cb_status s = loss < 0 ? CB_ERR_SHAPE : cb_graph_finalize(g);
    if (s != CB_OK) {
        cb_model_free(m);
        return s;
    }
    *out = m;
    return CB_OK;
}

void cb_model_free(cb_model *m)
{
    if (!m) return;
    if (m->onnx_values)
        for (int i = 0; i < m->n_onnx_values; i++) free(m->onnx_values[i]);
    free(m->onnx_values);
    cb_graph_free(&m->graph);
    free(m);
}

void cb_model_init(cb_model *m, uint64_t seed)
{
    cb_rng rng;
    cb_rng_seed(&rng, seed);
    cb_graph_init_params(&m->graph, &rng);
}

size_t cb_model_param_count(const cb_model *m) { return m->graph.n_params; }
