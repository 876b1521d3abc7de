/* SHA-256 (FIPS 180-4), for naming files by their content: the study's
 * shared initial weights are stored with their digest, and every binding's
 * training is started from a file that still has it. Internal. */
#ifndef CB_CORE_SHA256_H
#define CB_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t used;
} cb_sha256_ctx;

void cb_sha256_init(cb_sha256_ctx *c);
void cb_sha256_update(cb_sha256_ctx *c, const void *data, size_t len);
void cb_sha256_final(cb_sha256_ctx *c, unsigned char digest[32]);
/* The digest of data as 64 lower-case hex digits and a NUL. */
void cb_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
