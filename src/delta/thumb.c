/* A small picture of an input for the report: the image file read again,
 * its shorter side resized to `side`, centre-cropped (the framing every
 * variant saw), encoded as PNG with libpng and then as base64, so that the
 * page shows it inline (data: images are the only ones its policy allows). */
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/image.h"
#include "thumb.h"

typedef struct { unsigned char *data; size_t len, cap; int failed; } membuf;

static void put(png_structp png, png_bytep bytes, png_size_t n)
{
    membuf *m = png_get_io_ptr(png);
    if (m->failed) return;
    if (m->len + n > m->cap) {
        size_t cap = (m->cap ? 2 * m->cap : 1 << 16) + n;
        unsigned char *d = realloc(m->data, cap);
        if (!d) { m->failed = 1; return; }
        m->data = d, m->cap = cap;
    }
    memcpy(m->data + m->len, bytes, n);
    m->len += n;
}

static void flush(png_structp png) { (void)png; }

/* PNG bytes of an RGB image, or NULL. */
static unsigned char *encode_png(const cb_image *im, size_t *len)
{
    membuf m = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return NULL;
    }
    if (setjmp(png_jmpbuf(png))) { /* libpng's errors land here */
        png_destroy_write_struct(&png, &info);
        free(m.data);
        return NULL;
    }
    png_set_write_fn(png, &m, put, flush);
    png_set_IHDR(png, info, (png_uint_32)im->width, (png_uint_32)im->height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < im->height; y++) png_write_row(png, im->rgb + (size_t)y * (size_t)im->width * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (m.failed) {
        free(m.data);
        return NULL;
    }
    *len = m.len;
    return m.data;
}

static char *base64(const unsigned char *in, size_t n)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        *o++ = digits[v >> 18 & 63];
        *o++ = digits[v >> 12 & 63];
        *o++ = i + 1 < n ? digits[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? digits[v & 63] : '=';
    }
    *o = 0;
    return out;
}

char *delta_thumbnail(const char *path, int side)
{
    cb_image im = {0}, small = {0}, crop = {0};
    char *b64 = NULL;
    if (cb_image_read(path, &im, NULL) == CB_OK && cb_image_resize_shorter(&im, side, &small) == CB_OK &&
        cb_image_center_crop(&small, side, &crop) == CB_OK) {
        size_t len;
        unsigned char *png = encode_png(&crop, &len);
        if (png) b64 = base64(png, len);
        free(png);
    }
    cb_image_free(&im);
    cb_image_free(&small);
    cb_image_free(&crop);
    return b64;
}
