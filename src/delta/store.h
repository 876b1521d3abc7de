/* The store of crossbind delta: one SQLite file (application id "CBDL")
 * per experiment, holding the files' and inputs' SHA-256, each variant's
 * outputs, times and manifest, and each localisation. One variant (or one
 * localisation) is written in one transaction, so a run killed at any point
 * keeps every whole measurement and a rerun continues after them. The
 * store records the experiment's fingerprint (model, weights, inputs,
 * repetitions): a store of another experiment is refused, while variants
 * may be added to one. Internal. */
#ifndef CB_DELTA_STORE_H
#define CB_DELTA_STORE_H

#include "crossbind/status.h"

typedef struct delta_store delta_store;

cb_status delta_store_open(const char *path, const char *fingerprint, delta_store **out);
void delta_store_close(delta_store *s);

/* A file (model, weights, inputs) by role: "model.onnx", "weights.pt", "inputs.npy". */
cb_status delta_store_put_file(delta_store *s, const char *role, const char *path, const char *sha256);
/* The inputs: name (the image file, "inputs[i]" or "test[i]") and the
 * SHA-256 of its tensor (and of Keras' tensor of it, `keras` may be NULL),
 * and its label where the data set has one (`labels` may be NULL). */
cb_status delta_store_put_inputs(delta_store *s, int n, const char *const *names, const char *const *sha256,
                                 const char *const *keras, const int *labels);

typedef struct delta_result {
    char key[200];
    char status[16];       /* "ok", "failed", "unavailable" */
    char *manifest;        /* JSON object (owned) */
    char *error;           /* what went wrong (owned), NULL when ok */
    int n_inputs, classes, reps;
    float *outputs;        /* [n_inputs, classes] logits (owned) */
    double *times;         /* [n_inputs, reps] seconds (owned) */
    double first_call_s;
    char outputs_sha256[65];
    char (*input_sha256)[65]; /* per input: its output row's SHA-256 (owned) */
} delta_result;
void delta_result_free(delta_result *r);

/* Writes a variant's result in one transaction (replacing a failed one). */
cb_status delta_store_put_result(delta_store *s, const delta_result *r);
/* *found = 0 when the variant has no stored result. */
cb_status delta_store_get_result(delta_store *s, const char *key, delta_result *r, int *found);

/* A localisation's result (JSON, owned by the caller when read). */
cb_status delta_store_put_localisation(delta_store *s, const char *a, const char *b, const char *json);
cb_status delta_store_get_localisation(delta_store *s, const char *a, const char *b, char **json, int *found);

#endif
