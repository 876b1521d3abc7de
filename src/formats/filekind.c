/* Recognising weights and model files by content, never by extension. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "crossbind/formats.h"

cb_file_kind cb_file_kind_of(const unsigned char *h, size_t n)
{
    if (n >= 4 && memcmp(h, "PK\x03\x04", 4) == 0) return CB_FILE_TORCH_ZIP;
    if (n >= 6 && memcmp(h, "\x93NUMPY", 6) == 0) return CB_FILE_NPY;
    /* Legacy torch.save: a protocol-2 pickle starting with a LONG1 magic number. */
    if (n >= 3 && h[0] == 0x80 && h[1] == 0x02 && h[2] == 0x8a) return CB_FILE_TORCH_LEGACY;
    /* safetensors: a little-endian u64 header size (small), then '{' */
    if (n >= 9 && h[8] == '{' && h[7] == 0 && h[6] == 0 && h[5] == 0) return CB_FILE_SAFETENSORS;
    /* ONNX ModelProto: its first field is ir_version (field 1, varint: tag
     * 0x08), written first by every serializer we know; a small version. */
    if (n >= 2 && h[0] == 0x08 && h[1] >= 1 && h[1] < 64) return CB_FILE_ONNX;
    return CB_FILE_UNKNOWN;
}

cb_status cb_file_kind_read(const char *path, cb_file_kind *out)
{
    unsigned char head[16] = {0};
    *out = CB_FILE_UNKNOWN;
    FILE *f = fopen(path, "rb");
    if (!f) return cb_fail(CB_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    *out = cb_file_kind_of(head, got);
    return CB_OK;
}

const char *cb_file_kind_name(cb_file_kind k)
{
    static const char *names[] = {"unknown", "safetensors", "PyTorch state dict", "legacy PyTorch file",
                                  "ONNX", "NumPy .npy"};
    return names[k];
}
