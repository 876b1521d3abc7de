/* libFuzzer targets for the candidate JSON libraries, each used the way
 * crossbind would use it: parse from a buffer with the strictest settings
 * the library has, print what it accepted and read that again (a round
 * trip, as fuzz/fuzz_json.c checks crossbind's strings), free.
 * Build with -DLIB_JSONC, -DLIB_JANSSON or -DLIB_CJSON (json_zip.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(LIB_JSONC)
#include <json-c/json.h>
/* json-c's tokener answers "incomplete" (json_tokener_continue) for a
 * number that ends at the end of its buffer: the text goes in with its
 * terminating NUL, and a value must reach at least the text's end (an
 * embedded NUL stops the tokener before it). */
static struct json_object *parse(const char *d, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, d, n);
    s[n] = 0;
    struct json_tokener *tok = json_tokener_new_ex(64);
    if (!tok) abort();
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    struct json_object *o = json_tokener_parse_ex(tok, s, (int)n + 1);
    if (o && json_tokener_get_parse_end(tok) < n) { json_object_put(o); o = NULL; }
    json_tokener_free(tok);
    free(s);
    return o;
}
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_object *o = parse((const char *)data, size);
    if (!o) return 0;
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    struct json_object *again = s ? parse(s, strlen(s)) : NULL;
    if (!again) abort();
    json_object_put(again);
    json_object_put(o);
    return 0;
}
#elif defined(LIB_JANSSON)
#include <jansson.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t err;
    json_t *v = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL | JSON_DECODE_ANY, &err);
    if (!v) return 0;
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_t *again = s ? json_loads(s, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL | JSON_DECODE_ANY, &err) : NULL;
    if (!again) abort();
    json_decref(again);
    free(s);
    json_decref(v);
    return 0;
}
#elif defined(LIB_CJSON)
#include <cjson/cJSON.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts((const char *)data, size, &end, 0);
    if (!v) return 0;
    char *s = cJSON_PrintUnformatted(v);
    cJSON *again = s ? cJSON_Parse(s) : NULL;
    if (!again) abort();
    cJSON_Delete(again);
    free(s);
    cJSON_Delete(v);
    return 0;
}
#else
#error "define LIB_JSONC, LIB_JANSSON or LIB_CJSON"
#endif
