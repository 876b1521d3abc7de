/* The ImageNet-style image input pipeline (crossbind/image.h): JPEG and PNG
 * decoding, Pillow's antialiased bilinear resize, torchvision's centre crop,
 * and the normalisations of torchvision and Keras applications. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#include "crossbind/image.h"
#include "../core/file.h"
#include "../core/sha256.h"

void cb_image_free(cb_image *im)
{
    if (!im) return;
    free(im->rgb);
    memset(im, 0, sizeof *im);
}

static const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

cb_image_format cb_image_sniff(const unsigned char *buf, size_t len)
{
    if (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff) return CB_IMAGE_JPEG;
    if (len >= 8 && memcmp(buf, png_signature, 8) == 0) return CB_IMAGE_PNG;
    return CB_IMAGE_UNKNOWN;
}

const char *cb_image_format_name(cb_image_format f)
{
    return f == CB_IMAGE_JPEG ? "jpeg" : f == CB_IMAGE_PNG ? "png" : "unknown";
}

#define CB_STR2(x) #x
#define CB_STR(x) CB_STR2(x)

const char *cb_image_decoders(void)
{
    static char text[160];
    if (!text[0])
        snprintf(text, sizeof text, "%s (libjpeg API %d), libpng %s",
#ifdef LIBJPEG_TURBO_VERSION
                 "libjpeg-turbo " CB_STR(LIBJPEG_TURBO_VERSION),
#else
                 "libjpeg",
#endif
                 JPEG_LIB_VERSION, png_get_libpng_ver(NULL));
    return text;
}

/* Refuses sizes that are empty or above the pixel limit; `what` and
 * `stage` name the image and where the size came from in the message. */
static cb_status check_size(const char *what, const char *stage, int64_t w, int64_t h)
{
    if (w <= 0 || h <= 0)
        return cb_fail(CB_ERR_FORMAT, "%s: %s size %lldx%lld is empty", what, stage, (long long)w, (long long)h);
    if (w > CB_IMAGE_MAX_PIXELS || h > CB_IMAGE_MAX_PIXELS || w * h > CB_IMAGE_MAX_PIXELS)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: %s size %lldx%lld is more than the %lld pixels crossbind accepts",
                       what, stage, (long long)w, (long long)h, (long long)CB_IMAGE_MAX_PIXELS);
    return CB_OK;
}

static cb_status alloc_image(cb_image *im, int w, int h, const char *what)
{
    im->rgb = malloc((size_t)w * (size_t)h * 3);
    if (!im->rgb) return cb_fail(CB_ERR_NOMEM, "%s: out of memory for a %dx%d image", what, w, h);
    im->width = w, im->height = h;
    return CB_OK;
}

/* ---- JPEG (libjpeg): errors leave through longjmp, never exit() ---- */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void jpeg_error_exit(j_common_ptr cinfo)
{
    jpeg_err *e = (jpeg_err *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, e->msg);
    longjmp(e->jump, 1);
}

/* Warnings: libjpeg reads past the end of a truncated file by inventing an
 * end marker and decodes the rest as gray; Pillow refuses such a file
 * ("image file is truncated"), and so does this. Other warnings (corrupt
 * data that libjpeg recovers from, as in files with extraneous bytes before
 * a marker) are accepted silently, as Pillow accepts them. */
static void jpeg_emit_message(j_common_ptr cinfo, int level)
{
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
        jpeg_err *e = (jpeg_err *)cinfo->err;
        snprintf(e->msg, sizeof e->msg, "the file is truncated (it ends inside the image data)");
        longjmp(e->jump, 1);
    }
}

static void jpeg_output_message(j_common_ptr cinfo) { (void)cinfo; }

static cb_status decode_jpeg(const unsigned char *buf, size_t len, const char *what, cb_image *out)
{
    struct jpeg_decompress_struct cinfo;
    jpeg_err err;
    /* Set before setjmp and read after a longjmp: volatile, so that the
     * values seen there are the latest ones. */
    unsigned char *volatile row = NULL;
    unsigned char *volatile pix = NULL;
    volatile cb_status refuse = CB_OK;
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = jpeg_error_exit;
    err.pub.emit_message = jpeg_emit_message;
    err.pub.output_message = jpeg_output_message;
    err.msg[0] = 0;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        free(row);
        free(pix);
        return refuse != CB_OK ? refuse : cb_fail(CB_ERR_FORMAT, "%s: not a readable JPEG: %s", what, err.msg);
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, buf, (unsigned long)len);
    jpeg_read_header(&cinfo, TRUE);
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK || cinfo.num_components == 4) {
        refuse = cb_fail(CB_ERR_UNSUPPORTED, "%s: a CMYK JPEG (convert it to RGB first: its colours depend on a "
                         "colour profile that this pipeline does not apply)", what);
        longjmp(err.jump, 1);
    }
    if (cinfo.num_components != 1 && cinfo.num_components != 3) {
        refuse = cb_fail(CB_ERR_UNSUPPORTED, "%s: a JPEG with %d colour components (1 or 3 are read)", what,
                         cinfo.num_components);
        longjmp(err.jump, 1);
    }
    if ((refuse = check_size(what, "the JPEG's", cinfo.image_width, cinfo.image_height)) != CB_OK)
        longjmp(err.jump, 1);
    cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    int w = (int)cinfo.output_width, h = (int)cinfo.output_height, nc = cinfo.output_components;
    if (nc != 1 && nc != 3) {
        refuse = cb_fail(CB_ERR_FORMAT, "%s: libjpeg gave %d components", what, nc);
        longjmp(err.jump, 1);
    }
    pix = malloc((size_t)w * (size_t)h * 3);
    row = malloc((size_t)w * (size_t)nc);
    if (!pix || !row) {
        refuse = cb_fail(CB_ERR_NOMEM, "%s: out of memory for a %dx%d image", what, w, h);
        longjmp(err.jump, 1);
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        int y = (int)cinfo.output_scanline;
        JSAMPROW r = row;
        if (jpeg_read_scanlines(&cinfo, &r, 1) != 1) {
            refuse = cb_fail(CB_ERR_FORMAT, "%s: libjpeg returned no scanline at row %d", what, y);
            longjmp(err.jump, 1);
        }
        unsigned char *o = pix + (size_t)y * w * 3;
        if (nc == 3) memcpy(o, row, (size_t)w * 3);
        else
            for (int x = 0; x < w; x++) o[3 * x] = o[3 * x + 1] = o[3 * x + 2] = row[x];
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    free(row);
    out->width = w, out->height = h, out->rgb = pix;
    return CB_OK;
}

/* ---- PNG (libpng): errors leave through longjmp; warnings are dropped ---- */

typedef struct {
    const unsigned char *buf;
    size_t len, pos;
    char msg[256];
} png_src;

static void png_read_mem(png_structp png, png_bytep data, size_t n)
{
    png_src *s = png_get_io_ptr(png);
    if (n > s->len - s->pos) png_error(png, "the file is truncated (it ends inside the image data)");
    memcpy(data, s->buf + s->pos, n);
    s->pos += n;
}

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_src *s = png_get_error_ptr(png);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(png, 1);
}

/* libpng warns about harmless things (an incorrect sRGB profile, a bad
 * ancillary chunk it skips); Pillow ignores them too. */
static void png_on_warning(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

/* One decoded row (after libpng's expansion of palettes and low bit depths)
 * to RGB as Pillow's PNG reader and convert("RGB") make it. */
static void png_row_to_rgb(const unsigned char *in, int w, int channels, int depth, unsigned char *o)
{
    int step = depth == 16 ? 2 : 1;
    for (int x = 0; x < w; x++, o += 3) {
        const unsigned char *p = in + (size_t)x * channels * step;
        if (channels >= 3) {
            /* RGB or RGBA: 16-bit samples keep their high byte, alpha is dropped. */
            o[0] = p[0], o[1] = p[step], o[2] = p[2 * step];
        } else if (channels == 2 || depth != 16) {
            o[0] = o[1] = o[2] = p[0];  /* gray(+alpha): the (high) byte of gray */
        } else {
            unsigned v = (unsigned)p[0] << 8 | p[1];  /* 16-bit gray: Pillow's "I;16" clips */
            o[0] = o[1] = o[2] = (unsigned char)(v > 255 ? 255 : v);
        }
    }
}

static cb_status decode_png(const unsigned char *buf, size_t len, const char *what, cb_image *out)
{
    png_src src = {buf, len, 0, ""};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return cb_fail(CB_ERR_NOMEM, "%s: out of memory starting libpng", what);
    }
    unsigned char *volatile rows = NULL;
    unsigned char *volatile pix = NULL;
    volatile cb_status refuse = CB_OK;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(rows);
        free(pix);
        return refuse != CB_OK ? refuse : cb_fail(CB_ERR_FORMAT, "%s: not a readable PNG: %s", what, src.msg);
    }
    png_set_read_fn(png, &src, png_read_mem);
    /* The pixel limit is checked here, with its own message; libpng's
     * per-side limits (a million by default) would refuse first. */
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    png_read_info(png, info);
    png_uint_32 w32 = png_get_image_width(png, info), h32 = png_get_image_height(png, info);
    if ((refuse = check_size(what, "the PNG's", (int64_t)w32, (int64_t)h32)) != CB_OK) png_longjmp(png, 1);
    int w = (int)w32, h = (int)h32;
    int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int channels = png_get_channels(png, info), odepth = png_get_bit_depth(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (channels < 1 || channels > 4 || (odepth != 8 && odepth != 16) ||
        rowbytes != (size_t)w * channels * (odepth / 8)) {
        refuse = cb_fail(CB_ERR_FORMAT, "%s: unexpected PNG layout after expansion (%d channels of %d bits)", what,
                         channels, odepth);
        png_longjmp(png, 1);
    }
    pix = malloc((size_t)w * h * 3);
    /* Interlaced images are assembled over several passes: all rows at once;
     * others one row at a time. */
    rows = malloc(passes > 1 ? rowbytes * h : rowbytes);
    if (!pix || !rows) {
        refuse = cb_fail(CB_ERR_NOMEM, "%s: out of memory for a %dx%d image", what, w, h);
        png_longjmp(png, 1);
    }
    if (passes > 1) {
        for (int p = 0; p < passes; p++)
            for (int y = 0; y < h; y++) png_read_row(png, rows + rowbytes * y, NULL);
        for (int y = 0; y < h; y++) png_row_to_rgb(rows + rowbytes * y, w, channels, odepth, pix + (size_t)y * w * 3);
    } else {
        for (int y = 0; y < h; y++) {
            png_read_row(png, rows, NULL);
            png_row_to_rgb(rows, w, channels, odepth, pix + (size_t)y * w * 3);
        }
    }
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    out->width = w, out->height = h, out->rgb = pix;
    return CB_OK;
}

cb_status cb_image_decode(const unsigned char *buf, size_t len, const char *what, cb_image *out)
{
    memset(out, 0, sizeof *out);
    switch (cb_image_sniff(buf, len)) {
    case CB_IMAGE_JPEG: return decode_jpeg(buf, len, what, out);
    case CB_IMAGE_PNG: return decode_png(buf, len, what, out);
    default:
        if (len == 0) return cb_fail(CB_ERR_FORMAT, "%s: an empty file, not an image", what);
        return cb_fail(CB_ERR_FORMAT, "%s: not a JPEG or PNG file (told by its first bytes, whatever its name)",
                       what);
    }
}

cb_status cb_image_read(const char *path, cb_image *out, cb_image_file_info *info)
{
    memset(out, 0, sizeof *out);
    unsigned char *buf;
    size_t len;
    cb_status s = cb_read_file(path, CB_IMAGE_MAX_FILE_BYTES, &buf, &len);
    if (s != CB_OK) return s;
    s = cb_image_decode(buf, len, path, out);
    if (s == CB_OK && info) {
        info->format = cb_image_sniff(buf, len);
        info->width = out->width, info->height = out->height;
        info->bytes = (int64_t)len;
        cb_sha256_hex(buf, len, info->sha256);
    }
    free(buf);
    return s;
}

/* ---- Resampling: Pillow's antialiased bilinear filter ----
 *
 * Output pixel i of a pass from n_in to n_out samples has its centre at
 * (i + 0.5) * scale in input coordinates, scale = n_in / n_out. When
 * shrinking, the triangle filter (support 1) is stretched by the scale, so
 * that every input sample contributes (antialiasing); when enlarging it
 * stays of support 1 (plain bilinear interpolation). Input samples from
 * (int)(centre - support + 0.5) to (int)(centre + support + 0.5), clipped to
 * the image, get weight triangle((j - centre + 0.5) / stretch); the weights
 * are divided by their sum, then rounded to fixed point with 22 fraction
 * bits (half away from zero). A pass sums weight * sample from a start of
 * one half (2^21), shifts right by 22 and clips to [0, 255]. */

#define RESAMPLE_BITS 22

typedef struct {
    int taps;         /* weights per output sample */
    int *first, *n;   /* per output sample: first input sample and how many */
    int32_t *w;       /* out_size * taps fixed-point weights */
} resample_plan;

static void plan_free(resample_plan *p)
{
    free(p->first), free(p->n), free(p->w);
    memset(p, 0, sizeof *p);
}

static double triangle(double x)
{
    if (x < 0.0) x = -x;
    return x < 1.0 ? 1.0 - x : 0.0;
}

static cb_status plan_make(int in_size, int out_size, resample_plan *p)
{
    memset(p, 0, sizeof *p);
    double scale = (double)in_size / out_size;
    double stretch = scale < 1.0 ? 1.0 : scale;
    double support = 1.0 * stretch, inv = 1.0 / stretch;
    p->taps = (int)ceil(support) * 2 + 1;
    p->first = malloc(sizeof *p->first * (size_t)out_size);
    p->n = malloc(sizeof *p->n * (size_t)out_size);
    p->w = calloc((size_t)out_size * p->taps, sizeof *p->w);
    double *wd = malloc(sizeof *wd * (size_t)p->taps);
    if (!p->first || !p->n || !p->w || !wd) {
        free(wd);
        plan_free(p);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning a resize from %d to %d samples", in_size, out_size);
    }
    for (int i = 0; i < out_size; i++) {
        double centre = (i + 0.5) * scale;
        int lo = (int)(centre - support + 0.5), hi = (int)(centre + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in_size) hi = in_size;
        int n = hi - lo;
        if (n > p->taps) n = p->taps; /* cannot happen: the support spans at most `taps` samples */
        double sum = 0.0;
        for (int j = 0; j < n; j++) {
            wd[j] = triangle((j + lo - centre + 0.5) * inv);
            sum += wd[j];
        }
        int32_t *k = p->w + (size_t)i * p->taps;
        for (int j = 0; j < n; j++) {
            double v = sum != 0.0 ? wd[j] / sum : wd[j];
            k[j] = (int32_t)(v < 0 ? v * (1 << RESAMPLE_BITS) - 0.5 : v * (1 << RESAMPLE_BITS) + 0.5);
        }
        p->first[i] = lo, p->n[i] = n;
    }
    free(wd);
    return CB_OK;
}

static unsigned char clip8(int64_t acc)
{
    if (acc <= 0) return 0;
    acc >>= RESAMPLE_BITS;
    return (unsigned char)(acc > 255 ? 255 : acc);
}

/* Horizontal pass over rows [0, h): in is w_in wide, out w_out wide. */
static void pass_horizontal(const unsigned char *in, int w_in, int h, unsigned char *out, int w_out,
                            const resample_plan *p)
{
    for (int y = 0; y < h; y++) {
        const unsigned char *row = in + (size_t)y * w_in * 3;
        unsigned char *o = out + (size_t)y * w_out * 3;
        for (int x = 0; x < w_out; x++) {
            const int32_t *k = p->w + (size_t)x * p->taps;
            const unsigned char *s = row + (size_t)p->first[x] * 3;
            int64_t a0 = 1 << (RESAMPLE_BITS - 1), a1 = a0, a2 = a0;
            for (int j = 0; j < p->n[x]; j++) {
                a0 += (int64_t)s[3 * j] * k[j];
                a1 += (int64_t)s[3 * j + 1] * k[j];
                a2 += (int64_t)s[3 * j + 2] * k[j];
            }
            o[3 * x] = clip8(a0), o[3 * x + 1] = clip8(a1), o[3 * x + 2] = clip8(a2);
        }
    }
}

/* Vertical pass: in has h_in rows of w pixels, out h_out rows. */
static void pass_vertical(const unsigned char *in, int w, unsigned char *out, int h_out, const resample_plan *p)
{
    size_t stride = (size_t)w * 3;
    for (int y = 0; y < h_out; y++) {
        const int32_t *k = p->w + (size_t)y * p->taps;
        const unsigned char *base = in + (size_t)p->first[y] * stride;
        unsigned char *o = out + (size_t)y * stride;
        for (size_t x = 0; x < stride; x++) {
            int64_t a = 1 << (RESAMPLE_BITS - 1);
            for (int j = 0; j < p->n[y]; j++) a += (int64_t)base[(size_t)j * stride + x] * k[j];
            o[x] = clip8(a);
        }
    }
}

cb_status cb_image_resize(const cb_image *in, int w, int h, cb_image *out)
{
    memset(out, 0, sizeof *out);
    if (!in || !in->rgb || in->width <= 0 || in->height <= 0)
        return cb_fail(CB_ERR_INVALID_ARG, "resize: an empty image");
    cb_status s = check_size("resize", "the target", w, h);
    if (s != CB_OK) return s;
    resample_plan ph = {0}, pv = {0};
    unsigned char *tmp = NULL;
    const unsigned char *src = in->rgb;
    int cur_w = in->width;
    if ((s = alloc_image(out, w, h, "resize")) != CB_OK) return s;
    /* Each pass runs only when its size changes (as Pillow does; a pass at
     * scale 1 would copy anyway). */
    if (w != in->width) {
        if ((s = plan_make(in->width, w, &ph)) != CB_OK) goto done;
        if (h == in->height) {
            pass_horizontal(src, in->width, h, out->rgb, w, &ph);
            goto done;
        }
        tmp = malloc((size_t)w * in->height * 3);
        if (!tmp) {
            s = cb_fail(CB_ERR_NOMEM, "resize: out of memory for a %dx%d image", w, in->height);
            goto done;
        }
        pass_horizontal(src, in->width, in->height, tmp, w, &ph);
        src = tmp, cur_w = w;
    }
    if (h != in->height) {
        if ((s = plan_make(in->height, h, &pv)) != CB_OK) goto done;
        pass_vertical(src, cur_w, out->rgb, h, &pv);
    } else if (w == in->width) {
        memcpy(out->rgb, in->rgb, (size_t)w * h * 3);
    }
done:
    free(tmp);
    plan_free(&ph);
    plan_free(&pv);
    if (s != CB_OK) cb_image_free(out);
    return s;
}

void cb_image_resized_size(int w, int h, int size, int *new_w, int *new_h)
{
    int shorter = w <= h ? w : h, longer = w <= h ? h : w;
    /* Python's int(size * long / short): the exact product, one correctly
     * rounded division, truncation. */
    int64_t nl = (int64_t)((double)((int64_t)size * longer) / shorter);
    if (nl > 0x7fffffff) nl = 0x7fffffff;
    if (w <= h) *new_w = size, *new_h = (int)nl;
    else *new_w = (int)nl, *new_h = size;
}

cb_status cb_image_resize_shorter(const cb_image *in, int size, cb_image *out)
{
    memset(out, 0, sizeof *out);
    if (size <= 0) return cb_fail(CB_ERR_INVALID_ARG, "resize: the shorter side must be positive, got %d", size);
    if (!in || !in->rgb || in->width <= 0 || in->height <= 0)
        return cb_fail(CB_ERR_INVALID_ARG, "resize: an empty image");
    int w, h;
    cb_image_resized_size(in->width, in->height, size, &w, &h);
    if ((int64_t)w * h > CB_IMAGE_MAX_PIXELS || w >= 0x7fffffff || h >= 0x7fffffff)
        return cb_fail(CB_ERR_UNSUPPORTED, "resizing a %dx%d image to a shorter side of %d gives %dx%d, more than the "
                       "%lld pixels crossbind accepts", in->width, in->height, size, w, h,
                       (long long)CB_IMAGE_MAX_PIXELS);
    return cb_image_resize(in, w, h, out);
}

/* Python's round() of k / 2 for an integer k: half to even. */
static int half_round_even(int k)
{
    int q = k / 2;  /* k >= 0 here */
    return (k % 2 == 1 && q % 2 == 1) ? q + 1 : q;
}

cb_status cb_image_center_crop(const cb_image *in, int crop, cb_image *out)
{
    memset(out, 0, sizeof *out);
    if (crop <= 0) return cb_fail(CB_ERR_INVALID_ARG, "centre crop: the side must be positive, got %d", crop);
    if (!in || !in->rgb || in->width <= 0 || in->height <= 0)
        return cb_fail(CB_ERR_INVALID_ARG, "centre crop: an empty image");
    cb_status s = check_size("centre crop", "the crop", crop, crop);
    if (s != CB_OK || (s = alloc_image(out, crop, crop, "centre crop")) != CB_OK) return s;
    /* torchvision pads a smaller image with zeros first, (d // 2) on the
     * left/top and (d + 1) // 2 on the right/bottom, then crops the padded
     * image (exactly, if it now fits). */
    int pad_l = crop > in->width ? (crop - in->width) / 2 : 0;
    int pad_t = crop > in->height ? (crop - in->height) / 2 : 0;
    int pw = in->width + (crop > in->width ? crop - in->width : 0);
    int ph = in->height + (crop > in->height ? crop - in->height : 0);
    int top = half_round_even(ph - crop), left = half_round_even(pw - crop);
    memset(out->rgb, 0, (size_t)crop * crop * 3);
    for (int y = 0; y < crop; y++) {
        int sy = y + top - pad_t;  /* row in the unpadded image */
        if (sy < 0 || sy >= in->height) continue;
        for (int x = 0; x < crop; x++) {
            int sx = x + left - pad_l;
            if (sx < 0 || sx >= in->width) continue;
            memcpy(out->rgb + ((size_t)y * crop + x) * 3, in->rgb + ((size_t)sy * in->width + sx) * 3, 3);
        }
    }
    return CB_OK;
}

/* ---- Normalisation ---- */

static const char *const norm_names[] = {"torchvision", "tf", "caffe", "none", "pixels"};
#define N_NORMS (sizeof norm_names / sizeof norm_names[0])

const char *cb_image_norm_name(cb_image_norm n)
{
    return (unsigned)n < N_NORMS ? norm_names[n] : "?";
}

cb_status cb_image_norm_parse(const char *name, cb_image_norm *out)
{
    for (size_t i = 0; i < N_NORMS; i++)
        if (strcmp(name, norm_names[i]) == 0) {
            *out = (cb_image_norm)i;
            return CB_OK;
        }
    return cb_fail(CB_ERR_INVALID_ARG, "unknown normalisation '%s' (known: torchvision, tf, caffe, none, pixels)", name);
}

void cb_image_norm_params(cb_image_norm n, double *divisor, double mean[3], double std[3], const char **order)
{
    static const double tv_mean[3] = {0.485, 0.456, 0.406}, tv_std[3] = {0.229, 0.224, 0.225};
    static const double caffe_mean[3] = {103.939, 116.779, 123.68};  /* B, G, R */
    *order = n == CB_NORM_CAFFE ? "BGR" : "RGB";
    *divisor = n == CB_NORM_TORCHVISION || n == CB_NORM_NONE ? 255.0 : n == CB_NORM_TF ? 127.5 : 1.0; /* PIXELS: 1 */
    for (int c = 0; c < 3; c++) {
        mean[c] = n == CB_NORM_TORCHVISION ? tv_mean[c] : n == CB_NORM_TF ? 1.0 : n == CB_NORM_CAFFE ? caffe_mean[c] : 0;
        std[c] = n == CB_NORM_TORCHVISION ? tv_std[c] : 1.0;
    }
}

void cb_image_prep_default(cb_image_prep *p)
{
    p->resize = 256, p->crop = 224, p->norm = CB_NORM_TORCHVISION, p->layout = CB_LAYOUT_CHW;
}

cb_status cb_image_normalize(const cb_image *in, cb_image_norm norm, cb_image_layout layout, float *out)
{
    if (!in || !in->rgb || (unsigned)norm > CB_NORM_PIXELS || (layout != CB_LAYOUT_CHW && layout != CB_LAYOUT_HWC))
        return cb_fail(CB_ERR_INVALID_ARG, "normalise: an empty image or an unknown mode");
    /* Each mode in float32 operations in its reference's order, so that the
     * results are the reference's bit for bit:
     * torchvision: ToTensor divides by 255, Normalize subtracts the float32
     * mean and divides by the float32 std; Keras divides by 127.5 and
     * subtracts 1, or subtracts the float32 means from the BGR values. */
    static const float tv_mean[3] = {0.485f, 0.456f, 0.406f}, tv_std[3] = {0.229f, 0.224f, 0.225f};
    static const float caffe_mean[3] = {103.939f, 116.779f, 123.68f};
    size_t plane = (size_t)in->width * in->height;
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < 3; c++) {
            /* Output channel c reads input channel c (RGB), or 2 - c (BGR). */
            float v = (float)in->rgb[i * 3 + (norm == CB_NORM_CAFFE ? 2 - c : c)], r;
            switch (norm) {
            case CB_NORM_TORCHVISION: r = (v / 255.0f - tv_mean[c]) / tv_std[c]; break;
            case CB_NORM_TF: r = v / 127.5f - 1.0f; break;
            case CB_NORM_CAFFE: r = v - caffe_mean[c]; break;
            case CB_NORM_PIXELS: r = v; break;
            default: r = v / 255.0f; break;
            }
            out[layout == CB_LAYOUT_CHW ? (size_t)c * plane + i : i * 3 + c] = r;
        }
    return CB_OK;
}

cb_status cb_image_prepare(const cb_image *in, const cb_image_prep *p, float *out)
{
    cb_image resized, cropped;
    cb_status s = cb_image_resize_shorter(in, p->resize, &resized);
    if (s != CB_OK) return s;
    s = cb_image_center_crop(&resized, p->crop, &cropped);
    cb_image_free(&resized);
    if (s != CB_OK) return s;
    s = cb_image_normalize(&cropped, p->norm, p->layout, out);
    cb_image_free(&cropped);
    return s;
}

cb_status cb_image_process_file(const char *path, const cb_image_prep *p, float *out, cb_image_file_info *info)
{
    cb_image im;
    cb_status s = cb_image_read(path, &im, info);
    if (s != CB_OK) return s;
    s = cb_image_prepare(&im, p, out);
    cb_image_free(&im);
    if (s != CB_OK) {
        /* The step's message names no file: add it. */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", cb_last_error());
        return cb_fail(s, "%s: %s", path, msg);
    }
    return CB_OK;
}

/* ---- Lists of files ---- */

void cb_image_list_free(cb_image_list *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    memset(l, 0, sizeof *l);
}

cb_status cb_image_list_add(cb_image_list *l, const char *path)
{
    if ((l->n & (l->n - 1)) == 0) {  /* at 0, 1, 2, 4, ...: double */
        char **p = realloc(l->paths, sizeof *p * (size_t)(l->n ? 2 * l->n : 1));
        if (!p) return cb_fail(CB_ERR_NOMEM, "out of memory listing images");
        l->paths = p;
    }
    if (!(l->paths[l->n] = strdup(path))) return cb_fail(CB_ERR_NOMEM, "out of memory listing images");
    l->n++;
    return CB_OK;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The first bytes of a regular file: JPEG, PNG or neither. */
static cb_image_format sniff_file(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return CB_IMAGE_UNKNOWN;
    FILE *f = fopen(path, "rb");
    if (!f) return CB_IMAGE_UNKNOWN;
    unsigned char head[8];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return cb_image_sniff(head, n);
}

cb_status cb_image_list_dir(const char *dir, cb_image_list *l)
{
    DIR *d = opendir(dir);
    if (!d) return cb_fail(errno == ENOENT ? CB_ERR_NOT_FOUND : CB_ERR_IO, "cannot read the directory %s: %s", dir,
                           strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    cb_status s = CB_OK;
    struct dirent *e;
    while (s == CB_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n == cap) {
            char **p = realloc(names, sizeof *p * (cap = cap ? 2 * cap : 64));
            if (!p) { s = cb_fail(CB_ERR_NOMEM, "out of memory listing %s", dir); break; }
            names = p;
        }
        if (!(names[n] = strdup(e->d_name))) s = cb_fail(CB_ERR_NOMEM, "out of memory listing %s", dir);
        else n++;
    }
    closedir(d);
    if (s == CB_OK && n) qsort(names, n, sizeof *names, by_name);
    size_t dlen = strlen(dir);
    int slash = dlen > 0 && dir[dlen - 1] == '/';
    for (size_t i = 0; i < n && s == CB_OK; i++) {
        size_t need = dlen + 2 + strlen(names[i]);
        char *path = malloc(need);
        if (!path) { s = cb_fail(CB_ERR_NOMEM, "out of memory listing %s", dir); break; }
        snprintf(path, need, "%s%s%s", dir, slash ? "" : "/", names[i]);
        if (sniff_file(path) != CB_IMAGE_UNKNOWN) s = cb_image_list_add(l, path);
        else l->skipped++;
        free(path);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return s;
}

/* ---- The stand-in set ---- */

#define SKIMAGE_DATA "/usr/lib/python3/dist-packages/skimage/data/"
#define SKLEARN_IMAGES "/usr/lib/python3/dist-packages/sklearn/datasets/images/"

const char *const cb_image_stand_in_paths[] = {
    SKIMAGE_DATA "astronaut.png",       SKIMAGE_DATA "chelsea.png",  SKIMAGE_DATA "coffee.png",
    SKIMAGE_DATA "rocket.jpg",          SKIMAGE_DATA "motorcycle_left.png",
    SKIMAGE_DATA "hubble_deep_field.jpg", SKIMAGE_DATA "retina.jpg", SKIMAGE_DATA "camera.png",
    SKLEARN_IMAGES "china.jpg",         SKLEARN_IMAGES "flower.jpg", NULL};

cb_status cb_image_stand_in(cb_image_list *l)
{
    for (int i = 0; cb_image_stand_in_paths[i]; i++) {
        const char *p = cb_image_stand_in_paths[i];
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
            return cb_fail(CB_ERR_NOT_FOUND, "the stand-in image %s is missing: it comes with Debian's %s package "
                           "(scripts/setup.sh installs it)", p,
                           strncmp(p, SKIMAGE_DATA, strlen(SKIMAGE_DATA)) == 0 ? "python3-skimage" : "python3-sklearn");
    }
    for (int i = 0; cb_image_stand_in_paths[i]; i++) {
        cb_status s = cb_image_list_add(l, cb_image_stand_in_paths[i]);
        if (s != CB_OK) return s;
    }
    return CB_OK;
}
