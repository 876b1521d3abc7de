/* Graph builders of the built-in models: each takes the input node and
 * returns the prediction node (or -1 with the reason in cb_last_error()). */
#ifndef CB_MODELS_H
#define CB_MODELS_H
#include "crossbind/graph.h"

int cb_build_lenet1(cb_graph *g, int x);
int cb_build_lenet5(cb_graph *g, int x);
int cb_build_vgg16(cb_graph *g, int x);
int cb_build_lstm(cb_graph *g, int x);
int cb_build_gru(cb_graph *g, int x);
int cb_build_gru_rb(cb_graph *g, int x);

#endif
