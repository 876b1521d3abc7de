/* Predicates on a convolution's shape that several kernel files ask
 * (conv.c's dispatcher, conv_dense.c, conv_dnnl.c): kept apart so that no
 * kernel file depends on another for them. */
#include "ops.h"

int cb_conv2d_whole_window(const cb_conv_shape *s)
{
    return s->oh == 1 && s->ow == 1 && s->ph == 0 && s->pw == 0 && s->kh == s->h && s->kw == s->w;
}
