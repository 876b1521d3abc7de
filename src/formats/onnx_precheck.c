/* A bounded walk over protobuf wire format before protobuf-c decodes it.
 *
 * protobuf-c's unpacker recurses once per nested message and has no depth
 * limit, so a small file of nested subgraphs (an If whose branch holds an If
 * ... thousands deep) overflows the C stack inside it. This walk visits the
 * same messages with an explicit stack of fixed size: every tag, length and
 * fixed-width value is checked against the bytes that enclose it, and the
 * nesting of messages and of subgraphs is bounded, so that protobuf-c only
 * ever sees input whose recursion is shallow. Which fields hold messages is
 * read from protobuf-c's own generated descriptors, so the walk follows
 * exactly the paths the decoder will take. */
#include <stdio.h>
#include <string.h>
#include "onnx_util.h"

/* Messages inside messages, the top one counted: an ordinary model reaches
 * about 8 (model, graph, value info, type, tensor type, shape, dimension);
 * each subgraph level adds 3 (node, attribute, graph). */
#define MAX_DEPTH 64
/* Graphs held by node attributes (If, Loop, Scan bodies) inside each other.
 * crossbind imports no subgraphs: up to this depth the importer refuses the
 * node by its operator, beyond it the file is refused here. */
#define MAX_SUBGRAPHS 8

enum { WT_VARINT = 0, WT_64BIT = 1, WT_LEN = 2, WT_GROUP_START = 3, WT_GROUP_END = 4, WT_32BIT = 5 };

typedef struct frame {
    const ProtobufCMessageDescriptor *d;
    size_t start, end; /* the message's payload */
    int subgraphs;     /* attribute-held graphs from the top to here */
} frame;

/* A base-128 number at *pos within [.., end). Returns a description of what
 * is malformed, or NULL. */
static const char *read_varint(const unsigned char *b, size_t *pos, size_t end, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (*pos >= end) return "a number runs past the end of its message";
        unsigned char c = b[(*pos)++];
        if (i == 9 && c > 1) return "a number longer than 64 bits";
        v |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *out = v;
            return NULL;
        }
    }
    return "a number longer than 10 bytes";
}

/* One field at *pos within [.., end): its number, wire type and, for
 * length-delimited fields, where the payload lies. Returns a description of
 * what is malformed, or NULL. */
static const char *read_field(const unsigned char *b, size_t *pos, size_t end, uint32_t *field, int *wt,
                              size_t *payload, size_t *payload_len)
{
    uint64_t tag, v;
    const char *bad = read_varint(b, pos, end, &tag);
    if (bad) return bad;
    if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff) return "a field number outside 1 .. 2^29-1";
    *field = (uint32_t)(tag >> 3);
    *wt = (int)(tag & 7);
    switch (*wt) {
    case WT_VARINT: return read_varint(b, pos, end, &v);
    case WT_64BIT:
        if (end - *pos < 8) return "a 64-bit value runs past the end of its message";
        *pos += 8;
        return NULL;
    case WT_32BIT:
        if (end - *pos < 4) return "a 32-bit value runs past the end of its message";
        *pos += 4;
        return NULL;
    case WT_LEN:
        if ((bad = read_varint(b, pos, end, &v))) return bad;
        if (v > end - *pos) return "a length that runs past the end of its message";
        *payload = *pos;
        *payload_len = (size_t)v;
        *pos += (size_t)v;
        return NULL;
    case WT_GROUP_START:
    case WT_GROUP_END: return "a group (a proto2 encoding that ONNX never uses)";
    default: return "an unknown wire type";
    }
}

/* The last string field `want` of the message in [start, end), copied
 * printable into out; "" when absent or unreadable. Not recursive. */
static void string_field(const unsigned char *b, size_t start, size_t end, uint32_t want, char *out, size_t size)
{
    out[0] = 0;
    size_t pos = start;
    while (pos < end) {
        uint32_t field;
        int wt;
        size_t p = 0, n = 0;
        if (read_field(b, &pos, end, &field, &wt, &p, &n)) return;
        if (field != want || wt != WT_LEN) continue;
        size_t k = 0;
        for (size_t i = 0; i < n && k + 1 < size; i++)
            out[k++] = b[p + i] >= 0x20 && b[p + i] < 0x7f ? (char)b[p + i] : '?';
        out[k] = 0;
    }
}

/* The refusal of too deep subgraphs names the outermost node on the path
 * (the one a user can find in the file) and its attribute. */
static cb_status too_many_subgraphs(const unsigned char *b, const frame *st, int top, const char *what)
{
    char node[128] = "", op[64] = "?", attr[128] = "";
    int i = 0;
    while (i <= top && st[i].d != &onnx__node_proto__descriptor) i++;
    if (i <= top) {
        string_field(b, st[i].start, st[i].end, 3, node, sizeof node);
        string_field(b, st[i].start, st[i].end, 4, op, sizeof op);
        if (!op[0]) snprintf(op, sizeof op, "?");
        if (i + 1 <= top) string_field(b, st[i + 1].start, st[i + 1].end, 1, attr, sizeof attr);
    }
    return cb_fail(CB_ERR_UNSUPPORTED, "%s: node '%s' (%s), attribute '%s', nests subgraphs more than %d levels "
                   "deep; crossbind imports no subgraphs (If, Loop and Scan are not supported), so the file is "
                   "refused before decoding", what, node, op, attr, MAX_SUBGRAPHS);
}

cb_status cb_pb_precheck(const ProtobufCMessageDescriptor *d, const unsigned char *buf, size_t len, const char *what)
{
    frame st[MAX_DEPTH];
    int top = 0;
    st[0] = (frame){d, 0, len, 0};
    size_t pos = 0;
    for (;;) {
        if (pos == st[top].end) {
            if (top == 0) return CB_OK;
            top--;
            continue;
        }
        size_t at = pos, payload = 0, plen = 0;
        uint32_t field;
        int wt;
        const char *bad = read_field(buf, &pos, st[top].end, &field, &wt, &payload, &plen);
        if (bad)
            return cb_fail(CB_ERR_FORMAT, "%s is not a valid protobuf %s: %s at byte %zu (truncated or corrupt "
                           "file?)", what, d->short_name, bad, at);
        const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(st[top].d, field);
        if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE) continue; /* a scalar, string or unknown field */
        if (wt != WT_LEN)
            return cb_fail(CB_ERR_FORMAT, "%s is not a valid protobuf %s: field %s of %s at byte %zu is not "
                           "encoded as a message", what, d->short_name, fd->name, st[top].d->short_name, at);
        const ProtobufCMessageDescriptor *child = fd->descriptor;
        int subgraphs = st[top].subgraphs +
                        (child == &onnx__graph_proto__descriptor && st[top].d == &onnx__attribute_proto__descriptor);
        if (subgraphs > MAX_SUBGRAPHS) return too_many_subgraphs(buf, st, top, what);
        if (top + 1 >= MAX_DEPTH)
            return cb_fail(CB_ERR_UNSUPPORTED, "%s: messages nest more than %d deep at byte %zu (%s inside %s); no "
                           "model crossbind reads needs that, so the file is refused before decoding", what,
                           MAX_DEPTH, at, child->short_name, st[top].d->short_name);
        st[++top] = (frame){child, payload, payload + plen, subgraphs};
        pos = payload;
    }
}
