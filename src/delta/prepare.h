/* The inputs and the model every variant of an experiment shares
 * (prepare.c). Internal. */
#ifndef CB_DELTA_PREPARE_H
#define CB_DELTA_PREPARE_H

#include "variant.h"

typedef struct delta_inputs {
    int n;
    char **names;        /* the image files, or "inputs[i]" */
    char **sha256;       /* of each input's float32 tensor */
    char file_sha256[65];
    char **keras_sha256; /* the same inputs as Keras' model takes them (NULL without Keras) */
    int *labels;         /* ground truth where the data set has it (the study's models), else NULL */
    char keras_file_sha256[65];
} delta_inputs;
void delta_inputs_free(delta_inputs *in);

/* Writes e->work/inputs.npy and sets e->inputs; `pipeline` says how the
 * inputs were made (recorded with every variant). */
cb_status delta_prepare_inputs(delta_env *e, delta_inputs *in, char *pipeline, size_t cap);
/* Sets e->model_onnx and e->weights, exporting them when they are not
 * already there for this model, seed or weights and opset; the files'
 * SHA-256 into the two buffers (65 bytes each). */
cb_status delta_prepare_model(delta_env *e, char *weights_sha, char *model_sha);
/* A study model (lenet1, lenet5, vgg16): its trained weights (the
 * configuration's file, which the PyTorch runner also reads) exported to
 * e->model_onnx by crossbind, and the first max_images samples of its data
 * set's test split as the inputs, with their labels. */
cb_status delta_prepare_study(delta_env *e, delta_inputs *in, char *weights_sha, char *model_sha, char *pipeline,
                              size_t cap);
/* Keras' side: e->keras_dir (tf.keras.applications' model exported by the
 * tensorflow-python runner: .h5, tf2onnx's ONNX, float and int8 TFLite)
 * and e->keras_inputs (the same images in Keras' preprocessing, NHWC);
 * the .h5's SHA-256 into model_sha. */
cb_status delta_prepare_keras(delta_env *e, delta_inputs *in, char *model_sha);

#endif
