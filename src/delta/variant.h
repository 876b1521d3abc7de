/* Running one variant of crossbind delta on the prepared inputs. Internal. */
#ifndef CB_DELTA_VARIANT_H
#define CB_DELTA_VARIANT_H

#include "../study/study.h"
#include "delta.h"
#include "store.h"
#include "../core/json.h"

/* What every variant of one experiment shares. */
typedef struct delta_env {
    const delta_config *c;
    const cb_runners *runners;
    char work[2048];        /* the experiment's directory */
    char model_onnx[4096];  /* the model exported once to ONNX ("" without a model) */
    char weights[4096];     /* its weights as a torchvision state dict ("" without a model) */
    char inputs[4096];      /* the inputs, float32 .npy [N, ...] */
    char export_note[512];  /* how the ONNX file was made (tools and versions) */
    char keras_dir[2100];   /* Keras' export: model.h5, model.onnx, model-float.tflite, model-int8.tflite ("" without) */
    char keras_inputs[2100];/* the inputs as Keras' model takes them: its preprocessing, [N,H,W,3] */
    char keras_note[512];
    double timeout_s;       /* per runner process */
} delta_env;

/* Runs variant v into r (r->status "ok", or "failed" / "unavailable" with
 * r->error). Returns an error only for what stops the whole experiment
 * (out of memory, an interrupt). */
cb_status delta_run_variant(const delta_env *e, const delta_variant *v, delta_result *r);

/* The runner that runs a variant (NULL for crossbind): by runtime and, for
 * PyTorch, version. */
const cb_runner *delta_runner_of(const delta_env *e, const delta_variant *v);

/* Runs the variant's runner's `delta` command on `file` (ONNX runtimes)
 * and `inputs`, writing into `dir`; with `capture`, also the intermediate
 * values of the first input (runners/README.md). With `man`, the runner's
 * name and versions are appended to a manifest. A missing environment is
 * CB_ERR_NOT_FOUND, with the install command in the message. */
cb_status delta_runner_call(const delta_env *e, const delta_variant *v, const char *file, const char *inputs,
                           const char *dir, int reps, int warmup, int capture, cb_buf *man);
/* e->work/sub/<the key as a file name>. */
void delta_variant_dir(const delta_env *e, const delta_variant *v, const char *sub, char *out, size_t cap);

/* The file a variant runs: its own ONNX file, or its source's export (an
 * ONNX or TFLite file; Keras' .h5 for Keras itself); "" for PyTorch. Kept
 * in `buf` (2400 bytes) where it is made. */
const char *delta_variant_file(const delta_env *e, const delta_variant *v, char *buf);
/* The inputs file of a variant's source. */
const char *delta_variant_inputs(const delta_env *e, const delta_variant *v);

#endif
