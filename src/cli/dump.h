/* crossbind run --dump: every intermediate value as .npy plus index.json
 * (dump.c says how). */
#ifndef CB_CLI_DUMP_H
#define CB_CLI_DUMP_H

#include "crossbind/crossbind.h"

typedef struct cli_dump cli_dump;

/* Creates DIR and one .part file per materialised node for `batch`
 * samples. On failure *out may still be set: close it with the status. */
cb_status cli_dump_open(const char *dir, const cb_model *m, cb_exec *ex, int64_t batch, cli_dump **out);
/* Appends the values of the forward pass just run over samples
 * [start, start + n). */
cb_status cli_dump_chunk(cli_dump *d, cb_exec *ex, int64_t start, int n);
/* Finishes the files and writes index.json where s is CB_OK (else removes
 * the partial files); frees d. Returns s or the first failure here. */
cb_status cli_dump_close(cli_dump *d, const cb_exec *ex, cb_status s);

#endif
