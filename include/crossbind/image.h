/* crossbind: the ImageNet-style image input pipeline (protocol section 6).
 *
 * DeltaNN's ImageNet CNNs read images decoded, converted to RGB, resized so
 * that the shorter side is `resize` (256), centre-cropped to `crop` x `crop`
 * (224; 299 for Inception-v3), scaled to [0, 1] and normalised by ImageNet's
 * mean and standard deviation, as torchvision's
 *   Resize(256), CenterCrop(224), ToTensor(), Normalize(mean, std)
 * does on a PIL image opened with Image.open(f).convert("RGB"). Every step
 * here follows that pipeline so that the uint8 image before normalisation is
 * the one Pillow makes, byte for byte:
 *   - decoding: JPEG through libjpeg(-turbo) (integer IDCT, fancy
 *     upsampling: libjpeg's defaults, which Pillow keeps), PNG through
 *     libpng; the format is told by the file's first bytes, never its name.
 *   - conversion to RGB as Pillow's convert("RGB"): gray replicated, alpha
 *     dropped (not composited), palettes looked up; 16-bit colour and
 *     gray+alpha samples keep their high byte, as Pillow's PNG reader does,
 *     and 16-bit gray values are clipped to 255 (Pillow opens them as mode
 *     "I;16", whose conversion to RGB clips: a Pillow quirk kept on purpose,
 *     so that both sides see the same pixels). EXIF orientation is ignored
 *     (Image.open does not apply it either).
 *   - resize: the shorter side becomes `resize`, the longer one
 *     int(resize * long / short) (torchvision's Resize(int)), resampled with
 *     Pillow's antialiased bilinear filter (the triangle filter widened by
 *     the reduction factor when shrinking; separable, horizontal pass first;
 *     coefficients normalised then rounded to 22-bit fixed point; each pass
 *     rounds and clips to uint8).
 *   - centre crop as torchvision's CenterCrop: top = round((h - crop) / 2)
 *     with Python's round (half to even), left likewise; a crop larger than
 *     the image pads it with black first, split as torchvision splits it.
 *   - normalisation into float32 (cb_image_norm), CHW or HWC.
 * CMYK/YCCK JPEGs, other formats and images of more than
 * CB_IMAGE_MAX_PIXELS pixels (before or after resizing) are refused with a
 * message; a truncated or corrupt file is an error (CB_ERR_FORMAT), never a
 * crash or an exit. Images are uint8 RGB, row-major, 3 bytes a pixel. */
#ifndef CROSSBIND_IMAGE_H
#define CROSSBIND_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include "crossbind/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most pixels an image may have, decoded or resized: 2^26 (67 million,
 * e.g. 8192 x 8192), 192 MiB as RGB. */
#define CB_IMAGE_MAX_PIXELS ((int64_t)1 << 26)
/* The largest image file read (bytes). */
#define CB_IMAGE_MAX_FILE_BYTES ((size_t)1 << 28)

typedef enum { CB_IMAGE_UNKNOWN = 0, CB_IMAGE_JPEG, CB_IMAGE_PNG } cb_image_format;

typedef struct cb_image {
    int width, height;
    unsigned char *rgb;  /* height * width * 3 bytes, owned; free with cb_image_free */
} cb_image;

void cb_image_free(cb_image *im);
/* The format told by the first bytes (JPEG: FF D8 FF; PNG: its 8-byte
 * signature); CB_IMAGE_UNKNOWN for anything else. */
cb_image_format cb_image_sniff(const unsigned char *buf, size_t len);
const char *cb_image_format_name(cb_image_format f); /* "jpeg", "png", "unknown" */
/* The decoders this build uses, for records: e.g. "libjpeg-turbo 2.1.5
 * (libjpeg API 62), libpng 1.6.39". */
const char *cb_image_decoders(void);

/* Decodes a JPEG or PNG held in memory into RGB. `what` names the source in
 * messages. On failure *out is left empty. */
cb_status cb_image_decode(const unsigned char *buf, size_t len, const char *what, cb_image *out);

/* What a file was: its format, its size as decoded, its length and SHA-256. */
typedef struct cb_image_file_info {
    cb_image_format format;
    int width, height;
    int64_t bytes;
    char sha256[65];  /* lower-case hex */
} cb_image_file_info;
/* Reads and decodes `path` (info may be NULL). */
cb_status cb_image_read(const char *path, cb_image *out, cb_image_file_info *info);

/* Resamples to exactly w x h with Pillow's antialiased bilinear filter. */
cb_status cb_image_resize(const cb_image *in, int w, int h, cb_image *out);
/* torchvision's Resize(size) of an image: the size it gives (shorter side
 * `size`, longer int(size * long / short)), then cb_image_resize; an image
 * already of that size is copied. */
void cb_image_resized_size(int w, int h, int size, int *new_w, int *new_h);
cb_status cb_image_resize_shorter(const cb_image *in, int size, cb_image *out);
/* torchvision's CenterCrop((crop, crop)). */
cb_status cb_image_center_crop(const cb_image *in, int crop, cb_image *out);

/* Normalisations. With v the uint8 value, in float32:
 *   TORCHVISION  (v / 255 - mean) / std, mean (0.485, 0.456, 0.406),
 *                std (0.229, 0.224, 0.225), RGB: torchvision's ToTensor and
 *                Normalize;
 *   TF           v / 127.5 - 1, RGB: Keras applications' 'tf' mode;
 *   CAFFE        v - mean, mean (103.939, 116.779, 123.68) in channel order
 *                BGR (the channels reversed): Keras' 'caffe' mode;
 *   NONE         v / 255, RGB: ToTensor alone;
 *   PIXELS       v itself, RGB: Keras models that scale the pixels inside
 *                (MobileNetV3, EfficientNet: their preprocess_input passes
 *                the image through). */
typedef enum { CB_NORM_TORCHVISION = 0, CB_NORM_TF, CB_NORM_CAFFE, CB_NORM_NONE, CB_NORM_PIXELS } cb_image_norm;
typedef enum { CB_LAYOUT_CHW = 0, CB_LAYOUT_HWC } cb_image_layout;
const char *cb_image_norm_name(cb_image_norm n);        /* "torchvision", "tf", "caffe", "none", "pixels" */
cb_status cb_image_norm_parse(const char *name, cb_image_norm *out);
/* The parameters of a normalisation: out = (v / divisor - mean[c]) / std[c]
 * for output channel c, in float32 (divisor 255, 127.5 or 1; mean 0 and std
 * 1 where there is none), and the channel order, "RGB" or "BGR". Recorded
 * with every output. */
void cb_image_norm_params(cb_image_norm n, double *divisor, double mean[3], double std[3], const char **order);

/* The whole pipeline's parameters. */
typedef struct cb_image_prep {
    int resize;             /* shorter side after resizing (256) */
    int crop;               /* centre crop side (224) */
    cb_image_norm norm;
    cb_image_layout layout;
} cb_image_prep;
void cb_image_prep_default(cb_image_prep *p);  /* 256, 224, torchvision, CHW */
/* Writes 3 * crop * crop floats of a crop x crop image to out. */
cb_status cb_image_normalize(const cb_image *in, cb_image_norm norm, cb_image_layout layout, float *out);
/* Resize, crop and normalise one decoded image into out (3 * crop * crop floats, caller's). */
cb_status cb_image_prepare(const cb_image *in, const cb_image_prep *p, float *out);
/* Reads, decodes and prepares one file into out (info may be NULL). */
cb_status cb_image_process_file(const char *path, const cb_image_prep *p, float *out, cb_image_file_info *info);

/* A list of image files (paths owned by the list). */
typedef struct cb_image_list {
    int n;
    char **paths;
    int skipped;  /* directory entries that were not JPEG or PNG files */
} cb_image_list;
void cb_image_list_free(cb_image_list *l);
/* Appends the JPEG and PNG files of `dir` (told by their first bytes),
 * sorted by name (byte order), not descending into subdirectories; other
 * entries are skipped and counted in l->skipped. */
cb_status cb_image_list_dir(const char *dir, cb_image_list *l);
/* Appends one path (not checked). */
cb_status cb_image_list_add(cb_image_list *l, const char *path);

/* The stand-in image set: photographs shipped by Debian's python3-skimage
 * (astronaut, chelsea, coffee, rocket, motorcycle_left, hubble_deep_field,
 * retina, camera (gray)) and python3-sklearn (china, flower), in this
 * order; NULL-terminated. Not ImageNet images: they stand in for
 * inputs, without labels. */
extern const char *const cb_image_stand_in_paths[];
/* Appends the stand-in set, failing (CB_ERR_NOT_FOUND, naming the package)
 * when a file is missing. */
cb_status cb_image_stand_in(cb_image_list *l);

#ifdef __cplusplus
}
#endif
#endif
