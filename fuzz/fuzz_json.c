/* libFuzzer target: the JSON reader (every header, manifest, configuration
 * and runner answer goes through it). Beyond not crashing, every string it
 * returns must survive the writer: quoted by cb_buf_json_string and read
 * again, it is the same string. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../src/core/json.h"

static void check_strings(const cb_json *v)
{
    if (v->type == CB_JSON_STR && strlen(v->str) <= 1024) { /* longer ones cost time, not coverage */
        cb_buf b = {0};
        cb_buf_json_string(&b, v->str);
        cb_json again;
        if (!cb_buf_ok(&b) || cb_json_parse(b.data, b.len, "round trip", &again) != CB_OK) abort();
        if (again.type != CB_JSON_STR || strcmp(again.str, v->str)) abort();
        cb_json_free(&again);
        cb_buf_free(&b);
    }
    for (int i = 0; i < v->count && (v->type == CB_JSON_ARR || v->type == CB_JSON_OBJ); i++) {
        check_strings(&v->items[i]);
        if (v->type == CB_JSON_OBJ && v->count <= 64 && cb_json_get(v, v->keys[i]) == NULL) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cb_json v;
    if (cb_json_parse((const char *)data, size, "fuzz.json", &v) != CB_OK) return 0;
    check_strings(&v);
    cb_json_free(&v);
    return 0;
}
