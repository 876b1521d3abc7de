/* The post-ops of crossbind's own convolutions on blocked values
 * (conv_winograd.c, conv_direct16.c), on 8 lanes: in order, as the plain
 * steps compute them (ReLU and Clip let NaN through). */
#ifndef CROSSBIND_BLK_POST_H
#define CROSSBIND_BLK_POST_H

#include "ops.h"
#include "vec.h"

static inline v8f cb_blk_post_v8(v8f o, const float *old, const cb_blk_post *post, int npost)
{
    for (int k = 0; k < npost; k++) {
        if (post[k].kind == CB_POST_SUM) o += v8_load(old);
        else if (post[k].kind == CB_POST_RELU) o = v8_select(o <= v8_splat(0.0f), v8_splat(0.0f), o);
        else o = v8_select(o < v8_splat(post[k].lo), v8_splat(post[k].lo),
                           v8_select(o > v8_splat(post[k].hi), v8_splat(post[k].hi), o));
    }
    return o;
}

#endif
