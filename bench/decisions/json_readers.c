/* The JSON readers compared, each set up the way crossbind would need it.
 * json-c and jansson share symbol and type names (json_object, json_type),
 * so each library is built into a binary of its own: compile this file with
 * -DLIB_CROSSBIND, -DLIB_JSONC, -DLIB_JANSSON or -DLIB_CJSON. A reader
 * parses len bytes and returns the number of values in the tree, or -1
 * with a message giving whatever position the library reports. */
#include <stdio.h>
#include <string.h>
#include "readers.h"

char reader_msg[512];

#if defined(LIB_CROSSBIND)
#include "crossbind/status.h"
#include "../../src/core/json.h"
static long count(const cb_json *v)
{
    long n = 1;
    if (v->type == CB_JSON_ARR || v->type == CB_JSON_OBJ)
        for (int i = 0; i < v->count; i++) n += count(&v->items[i]);
    return n;
}
static long parse(const char *s, size_t len)
{
    cb_json v;
    if (cb_json_parse(s, len, "input", &v) != CB_OK) { snprintf(reader_msg, sizeof reader_msg, "%s", cb_last_error()); return -1; }
    long n = count(&v);
    cb_json_free(&v);
    return n;
}
const reader readers[] = {{"crossbind", parse}};

#elif defined(LIB_JSONC)
#include <json-c/json.h>
static long count(struct json_object *o)
{
    long n = 1;
    if (json_object_is_type(o, json_type_array))
        for (size_t i = 0; i < json_object_array_length(o); i++) n += count(json_object_array_get_idx(o, i));
    else if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, k, val) { (void)k; n += count(val); }
    }
    return n;
}
/* Nesting limited as crossbind's (64 levels below the top). The tokener
 * reports a number that ends at the end of its buffer as incomplete, so the
 * text goes in with the NUL that follows it (every caller here has one):
 * a value must reach the text's end, and an embedded NUL stops it short. */
static long parse_flags(const char *s, size_t len, int flags)
{
    struct json_tokener *tok = json_tokener_new_ex(65);
    json_tokener_set_flags(tok, flags);
    struct json_object *o = json_tokener_parse_ex(tok, s, (int)len + 1);
    long n = -1;
    if (!o) {
        enum json_tokener_error e = json_tokener_get_error(tok);
        snprintf(reader_msg, sizeof reader_msg, "%s (parse stopped at byte %zu)",
                 e == json_tokener_continue ? "[incomplete input: no error from the tokener]" : json_tokener_error_desc(e),
                 json_tokener_get_parse_end(tok));
    } else if (json_tokener_get_parse_end(tok) < len) {
        snprintf(reader_msg, sizeof reader_msg, "[caller's check] value ends at byte %zu, before the input", json_tokener_get_parse_end(tok));
    } else n = count(o);
    if (o) json_object_put(o);
    json_tokener_free(tok);
    return n;
}
static long strict(const char *s, size_t len) { return parse_flags(s, len, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8); }
static long deflt(const char *s, size_t len) { return parse_flags(s, len, 0); }
const reader readers[] = {{"json-c strict+utf8", strict}, {"json-c default", deflt}};

#elif defined(LIB_JANSSON)
#include <jansson.h>
static long count(json_t *o)
{
    long n = 1;
    size_t i;
    json_t *val;
    const char *k;
    if (json_is_array(o)) { json_array_foreach(o, i, val) n += count(val); }
    else if (json_is_object(o)) { json_object_foreach(o, k, val) n += count(val); }
    return n;
}
/* Duplicate keys refused and every number a double, as crossbind. */
static long parse(const char *s, size_t len)
{
    json_error_t err;
    json_t *v = json_loadb(s, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL | JSON_DECODE_ANY, &err);
    if (!v) {
        snprintf(reader_msg, sizeof reader_msg, "%s (line %d, column %d, byte %d)", err.text, err.line, err.column, err.position);
        return -1;
    }
    long n = count(v);
    json_decref(v);
    return n;
}
const reader readers[] = {{"jansson", parse}};

#elif defined(LIB_CJSON)
#include <cjson/cJSON.h>
static long count(const cJSON *o)
{
    long n = 1;
    for (const cJSON *c = o->child; c; c = c->next) n += count(c);
    return n;
}
static long parse(const char *s, size_t len)
{
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(s, len, &end, 0);
    if (!v) {
        const char *at = cJSON_GetErrorPtr();
        snprintf(reader_msg, sizeof reader_msg, "[no message] error pointer at byte %ld", at ? (long)(at - s) : -1L);
        return -1;
    }
    long n = count(v);
    /* The parse stops after the first value; crossbind refuses more. */
    while (end < s + len && (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r')) end++;
    if (end != s + len) { snprintf(reader_msg, sizeof reader_msg, "[caller's check] value ends at byte %ld, before the input", (long)(end - s)); n = -1; }
    cJSON_Delete(v);
    return n;
}
const reader readers[] = {{"cJSON", parse}};
#else
#error "define LIB_CROSSBIND, LIB_JSONC, LIB_JANSSON or LIB_CJSON"
#endif
const int n_readers = (int)(sizeof readers / sizeof readers[0]);
