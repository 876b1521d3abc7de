/* crossbind delta: differential testing of environments (protocol section
 * 6). One model runs as many variants (a runtime, its version, its
 * optimisation level, its thread count, or a model file of the user's) on
 * the same preprocessed images; every pair of variants is compared input by
 * input (top-1, top-K Jaccard, Kendall tau-b, RBO, logit distances, times),
 * and a pair that disagrees is localised to its first diverging layer.
 *
 * The pieces, one file each: config.c (the configuration and the variants
 * it names), store.c (the results store), variant.c (running one variant),
 * onnx_edit.c (ONNX files with added outputs, cut at a value), compare.c
 * (the measures of a pair), localise.c (capture and bisection), summary.c
 * (--json), page.c (the HTML report). Internal to the command. */
#ifndef CB_DELTA_H
#define CB_DELTA_H

#include <stdint.h>
#include "crossbind/status.h"

#define DELTA_MAX_VARIANTS 64
#define DELTA_MAX_AXES 16 /* more than a configuration can name */

typedef enum {
    DELTA_CROSSBIND, DELTA_ONNXRUNTIME, DELTA_PYTORCH, DELTA_KERAS, DELTA_TFLITE,
    DELTA_TVM,        /* Apache TVM (Relax), an ONNX file compiled at one opt_level */
    DELTA_ONNX2TORCH, /* an ONNX file turned back into PyTorch by onnx2torch */
    DELTA_ONNX2TF,    /* an ONNX file turned into TensorFlow by onnx2tf */
    DELTA_N_RUNTIMES
} delta_runtime;
/* The framework the model comes from: torchvision's (exported to ONNX by
 * torch.onnx) or tf.keras.applications' (to ONNX by tf2onnx, to TFLite by
 * TFLiteConverter). Their weights differ: variants of two sources are
 * never compared with each other. */
typedef enum { DELTA_SRC_PYTORCH, DELTA_SRC_KERAS } delta_source;

/* One variant: what it changes is exactly these fields. */
typedef struct delta_variant {
    char key[200];        /* stable id, e.g. "crossbind@fused/t2", "pytorch-1.13.1/t2" */
    delta_runtime runtime;
    delta_source source;
    /* crossbind: reference|fast|fused|fastmath; onnxruntime: disabled|basic|extended|all;
     * pytorch, onnx2torch: eager; keras, onnx2tf: default; tflite: float|int8 (Optimize.DEFAULT's
     * dynamic-range weights); tvm: O0..O4 (PassContext opt_level) */
    char level[32];
    char version[32];     /* pytorch: "2.7.1" (the runner's environment) or "1.13.1" (Debian's); others "" */
    int threads;
    char device[8];       /* "" (the CPU) or "cuda": a variant on a device its runtime lacks is unavailable */
    char file[4096];      /* a user's ONNX file (crossbind, onnxruntime), "" for the model's own */
    char label[64];       /* the file variant's name in the config, "keras" for Keras' variants, "" otherwise */
    int repeat;           /* 1: the determinism check, a second run of the base */
} delta_variant;

/* A set of variants compared among themselves (one N x N matrix). */
typedef struct delta_axis {
    char name[48];
    int members[DELTA_MAX_VARIANTS]; /* indices into delta_config.variants */
    int n;
} delta_axis;

typedef struct delta_config {
    char profile[32];      /* "quick" or "" (a config file) */
    char model[32];        /* torchvision name (mobilenet_v2, resnet18/50/101, inception_v3, mobilenet_v3_small/large, efficientnet_b0) or the study's (lenet1, lenet5, vgg16, lstm, gru, gru-rb) */
    long seed;             /* random weights' seed when no weights are given */
    char weights[4096];    /* the user's torchvision .pth ("" = seeded random weights) */
    char images[4096];     /* an image folder; "" = the Debian-shipped stand-in photographs */
    char inputs_npy[4096]; /* or the inputs as a float32 .npy [N, ...] (a model file's own shape) */
    int study;             /* model is one of the study's: trained weights, its data set (IMDb: token ids) */
    char data[4096];       /* the study model's data set directory ("" = its default, cb_dataset_default_dir) */
    int max_images;
    int resize, crop;
    char norm[16];         /* torchvision (the only normalisation of torchvision's models) */
    int reps, warmup, k;
    double p;              /* RBO persistence */
    double tolerance;      /* a layer diverges when max |a - b| > tolerance * max |a| */
    int opset;
    char mode[16];         /* "vary-one" or "product" */
    delta_variant variants[DELTA_MAX_VARIANTS];
    int n_variants;
    int base;              /* index of the base variant */
    delta_axis axes[DELTA_MAX_AXES];
    int n_axes;
    int keras;             /* 1: also the Keras group (tf.keras.applications' model, its conversions) */
    char keras_weights[4096]; /* the user's Keras .h5 of that model ("" = seeded random weights) */
} delta_config;

/* Reads a configuration file or a named profile ("quick") into *c (which owns nothing). */
cb_status delta_config_load(const char *path, const char *profile, delta_config *c);
const char *delta_runtime_name(delta_runtime r);
/* Whether a variant runs an ONNX file (which bisection can cut). */
static inline int delta_runs_onnx(const delta_variant *v)
{
    return v->runtime == DELTA_CROSSBIND || v->runtime == DELTA_ONNXRUNTIME || v->runtime == DELTA_TVM ||
           v->runtime == DELTA_ONNX2TORCH || v->runtime == DELTA_ONNX2TF;
}
/* Keras applications' preprocessing mode for a model ("tf" or "caffe"). */
const char *delta_keras_norm(const char *model);
/* The key of a variant from its fields. */
void delta_variant_key(delta_variant *v);

#endif
