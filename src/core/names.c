/* Open-addressing hash index of names with SipHash-1-3 under a random key. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include "names.h"

static uint64_t key0, key1;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void draw_key(void)
{
    uint64_t k[2];
    if (getentropy(k, sizeof k) != 0) { /* no entropy source: still varies per process */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        k[0] = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)&ts;
        k[1] = (uint64_t)ts.tv_sec * 0xC2B2AE3D27D4EB4FULL ^ (uint64_t)(uintptr_t)&key0;
    }
    key0 = k[0];
    key1 = k[1];
}

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                              \
    do {                                                                      \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);             \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);             \
    } while (0)

static uint64_t siphash13(const unsigned char *m, size_t len)
{
    uint64_t v0 = key0 ^ 0x736f6d6570736575ULL, v1 = key1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = key0 ^ 0x6c7967656e657261ULL, v3 = key1 ^ 0x7465646279746573ULL;
    size_t end = len - len % 8;
    for (size_t i = 0; i < end; i += 8) {
        uint64_t w = 0;
        for (int b = 7; b >= 0; b--) w = (w << 8) | m[i + (size_t)b];
        v3 ^= w;
        SIPROUND;
        v0 ^= w;
    }
    uint64_t w = (uint64_t)len << 56;
    for (size_t i = end; i < len; i++) w |= (uint64_t)m[i] << (8 * (i - end));
    v3 ^= w;
    SIPROUND;
    v0 ^= w;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t hash_name(const char *s)
{
    pthread_once(&key_once, draw_key);
    return siphash13((const unsigned char *)s, strlen(s));
}

cb_status cb_name_index_init(cb_name_index *ix, size_t expected)
{
    size_t cap = 16;
    while (cap < 2 * expected) cap *= 2;
    ix->slots = calloc(cap, sizeof *ix->slots);
    ix->mask = cap - 1;
    ix->count = 0;
    if (!ix->slots) return cb_fail(CB_ERR_NOMEM, "out of memory indexing %zu names", expected);
    return CB_OK;
}

static cb_name_slot *probe(const cb_name_index *ix, const char *name, uint64_t h)
{
    for (size_t i = h & ix->mask;; i = (i + 1) & ix->mask) {
        cb_name_slot *s = &ix->slots[i];
        if (!s->name || (s->hash == h && strcmp(s->name, name) == 0)) return s;
    }
}

static int grow(cb_name_index *ix)
{
    size_t cap = 2 * (ix->mask + 1);
    cb_name_slot *old = ix->slots, *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    size_t old_cap = ix->mask + 1;
    ix->slots = slots;
    ix->mask = cap - 1;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].name) *probe(ix, old[i].name, old[i].hash) = old[i];
    free(old);
    return 0;
}

int cb_name_index_add(cb_name_index *ix, const char *name, int id)
{
    uint64_t h = hash_name(name);
    cb_name_slot *s = probe(ix, name, h);
    if (s->name) return s->id;
    if (2 * (ix->count + 1) > ix->mask + 1) { /* keep the load under one half */
        if (grow(ix)) {
            cb_fail(CB_ERR_NOMEM, "out of memory indexing %zu names", ix->count + 1);
            return -2;
        }
        s = probe(ix, name, h);
    }
    *s = (cb_name_slot){name, h, id};
    ix->count++;
    return -1;
}

int cb_name_index_find(const cb_name_index *ix, const char *name)
{
    if (!ix->slots) return -1;
    const cb_name_slot *s = probe(ix, name, hash_name(name));
    return s->name ? s->id : -1;
}

void cb_name_index_free(cb_name_index *ix)
{
    free(ix->slots);
    memset(ix, 0, sizeof *ix);
}
