/* The study's IMDb classifiers (protocol section 2): token ids [300] ->
 * embedding 10,000 x 300 -> one recurrent layer, hidden 512, batch first ->
 * the last time step -> dropout 0.5 -> dense 512 -> 1 -> sigmoid.
 * The recurrent layer is an LSTM, PyTorch's GRU, or the reset-before GRU.
 * Names follow a PyTorch module with attributes embedding, rnn and fc
 * (PyTorch's RNNs carry two bias vectors, so the count is 4,667,585 where
 * TensorFlow's LSTM, with one, has the protocol's 4,665,537). */
#include "models.h"

#define VOCAB 10000
#define EMBED 300
#define HIDDEN 512

static int classifier(cb_graph *g, int x, int kind)
{
    int h = cb_graph_embedding(g, "embedding", x, VOCAB, EMBED);
    h = kind == 0 ? cb_graph_lstm(g, "rnn", h, HIDDEN) : cb_graph_gru(g, "rnn", h, HIDDEN, kind == 2);
    h = cb_graph_last_step(g, h);
    h = cb_graph_dropout(g, h, 0.5f);
    h = cb_graph_linear(g, "fc", h, 1, 1);
    return cb_graph_unary(g, CB_OP_SIGMOID, h);
}

int cb_build_lstm(cb_graph *g, int x) { return classifier(g, x, 0); }
int cb_build_gru(cb_graph *g, int x) { return classifier(g, x, 1); }
int cb_build_gru_rb(cb_graph *g, int x) { return classifier(g, x, 2); }
