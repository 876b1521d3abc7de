/* Localisation of a diverging pair of variants (protocol section 6): the
 * first layer whose activations differ beyond the tolerance, found two
 * ways.
 *   capture:   both sides expose their intermediate values for one input
 *              (crossbind by node through cb_exec_capture, ONNX Runtime
 *              through a copy of the file with every value as a graph
 *              output, PyTorch through forward hooks), matched by name
 *              (the ONNX value name; PyTorch's module path between two
 *              PyTorch variants) and checked on element count; per layer
 *              the mean, standard deviation and maximum of |a - b| and of
 *              the difference of the weights it reads.
 *   bisection: for runtimes of ONNX files, sub-models cut at one value are
 *              run by both sides and a binary search over the file's
 *              order finds the first value that differs; it assumes that
 *              a difference, once there, stays (checked at both ends).
 * A layer "exceeds the tolerance" when max |a - b| > tolerance * max |a|.
 * Internal. */
#ifndef CB_DELTA_LOCALISE_H
#define CB_DELTA_LOCALISE_H

#include "../core/json.h"
#include "variant.h"

/* Localises the pair (a, b) on input `input` (the first one they disagree
 * on, chosen by the caller) and appends the result as a JSON object to
 * `out`: {"input", "capture": {...}, "bisection": {...}}, each with
 * "first" (node id, ONNX name, op) or a reason it could not run. */
cb_status delta_localise(const delta_env *e, const delta_variant *a, const delta_variant *b, int input, cb_buf *out);

#endif
