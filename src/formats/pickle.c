/* The state-dict pickle subset (see pickle.h). Opcode numbers follow
 * Python's pickletools documentation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pickle.h"
#include "weights_cap.h"

struct pk_pool {
    pk_value **all;
    size_t n, cap;
    uint64_t bytes; /* all the reader allocated, values and working arrays */
};

typedef struct vm {
    const unsigned char *b;
    size_t len, pos;
    const char *what;
    pk_pool *pool;
    pk_value **stack;
    size_t sp, scap;
    size_t *marks;
    size_t nmarks, mcap;
    pk_value **memo;
    size_t memo_cap;
    size_t memo_count; /* MEMOIZE's next index: one past the highest used */
    uint64_t limit;    /* bytes the reader may allocate: each opcode byte can
                          make a value a hundred times its size */
    int over;          /* an allocation was refused for the limit */
} vm;

static const struct { const char *module, *name; pk_global g; pk_storage_type st; } globals[] = {
    {"collections", "OrderedDict", PK_G_ORDERED_DICT, 0},
    {"torch._utils", "_rebuild_tensor_v2", PK_G_REBUILD_TENSOR_V2, 0},
    {"torch._utils", "_rebuild_parameter", PK_G_REBUILD_PARAMETER, 0},
    {"torch", "FloatStorage", PK_G_STORAGE_TYPE, PK_ST_FLOAT},
    {"torch", "DoubleStorage", PK_G_STORAGE_TYPE, PK_ST_DOUBLE},
    {"torch", "HalfStorage", PK_G_STORAGE_TYPE, PK_ST_HALF},
    {"torch", "BFloat16Storage", PK_G_STORAGE_TYPE, PK_ST_BFLOAT16},
    {"torch", "LongStorage", PK_G_STORAGE_TYPE, PK_ST_LONG},
    {"torch", "IntStorage", PK_G_STORAGE_TYPE, PK_ST_INT},
    {"torch", "ShortStorage", PK_G_STORAGE_TYPE, PK_ST_SHORT},
    {"torch", "CharStorage", PK_G_STORAGE_TYPE, PK_ST_CHAR},
    {"torch", "ByteStorage", PK_G_STORAGE_TYPE, PK_ST_BYTE},
    {"torch", "BoolStorage", PK_G_STORAGE_TYPE, PK_ST_BOOL},
};

size_t pk_storage_elem_size(pk_storage_type t)
{
    static const size_t sizes[] = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1};
    return sizes[t];
}

void pk_pool_free(pk_pool *pool)
{
    if (!pool) return;
    for (size_t i = 0; i < pool->n; i++) {
        free(pool->all[i]->s);
        free(pool->all[i]->items);
        free(pool->all[i]);
    }
    free(pool->all);
    free(pool);
}

static cb_status bad(vm *m, const char *msg)
{
    return cb_fail(CB_ERR_FORMAT, "%s: pickle: %s at byte %zu", m->what, msg, m->pos);
}

/* Counts n more bytes against the limit: 0 (and m->over) when beyond it. */
static int charge(vm *m, uint64_t n)
{
    if (n > m->limit - m->pool->bytes) {
        m->over = 1;
        return 0;
    }
    m->pool->bytes += n;
    return 1;
}

/* The failure of an allocation: the memory limit or the system's. */
static cb_status nomem(vm *m)
{
    if (!m->over) return cb_fail(CB_ERR_NOMEM, "%s: out of memory reading a pickle", m->what);
    char lim[32];
    cb_format_bytes(m->limit, lim, sizeof lim);
    return cb_fail(CB_ERR_UNSUPPORTED, "%s: its pickle needs more than %s of memory to read, the limit for one "
                   "weights file (at byte %zu; set %s to raise it)", m->what, lim, m->pos, CB_WEIGHTS_CAP_ENV);
}

static pk_value *new_value(vm *m, pk_type t)
{
    pk_pool *p = m->pool;
    if (!charge(m, sizeof(pk_value))) return NULL;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        if (!charge(m, (cap - p->cap) * sizeof *p->all)) return NULL;
        pk_value **all = realloc(p->all, cap * sizeof *all);
        if (!all) return NULL;
        p->all = all;
        p->cap = cap;
    }
    pk_value *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->type = t;
    p->all[p->n++] = v;
    return v;
}

static int push(vm *m, pk_value *v)
{
    if (!v) return 0;
    if (m->sp == m->scap) {
        size_t cap = m->scap ? 2 * m->scap : 64;
        if (!charge(m, (cap - m->scap) * sizeof *m->stack)) return 0;
        pk_value **s = realloc(m->stack, cap * sizeof *s);
        if (!s) return 0;
        m->stack = s;
        m->scap = cap;
    }
    m->stack[m->sp++] = v;
    return 1;
}

static int add_item(vm *m, pk_value *c, pk_value *v)
{
    if (c->n == c->cap) {
        if (c->cap > INT32_MAX / 2) return 0;
        int cap = c->cap ? 2 * c->cap : 8;
        if (!charge(m, (uint64_t)(cap - c->cap) * sizeof *c->items)) return 0;
        pk_value **items = realloc(c->items, (size_t)cap * sizeof *items);
        if (!items) return 0;
        c->items = items;
        c->cap = cap;
    }
    c->items[c->n++] = v;
    return 1;
}

static int need(vm *m, size_t n) { return n <= m->len - m->pos; }

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Pops everything above the last mark into a new container of type t. */
static cb_status pop_mark(vm *m, pk_type t, pk_value **out)
{
    if (!m->nmarks) return bad(m, "no mark on the stack");
    size_t base = m->marks[--m->nmarks];
    pk_value *c = new_value(m, t);
    if (!c) return nomem(m);
    for (size_t i = base; i < m->sp; i++)
        if (!add_item(m, c, m->stack[i])) return nomem(m);
    m->sp = base;
    *out = c;
    return CB_OK;
}

static cb_status memo_put(vm *m, uint64_t idx)
{
    if (!m->sp) return bad(m, "memo store on an empty stack");
    /* Real pickles number memo entries consecutively; an index beyond the
     * number of bytes read so far cannot come from one. */
    if (idx > m->len) return bad(m, "memo index out of range");
    if (idx >= m->memo_cap) {
        size_t cap = m->memo_cap ? m->memo_cap : 64;
        while (cap <= idx) cap *= 2;
        if (!charge(m, (cap - m->memo_cap) * sizeof *m->memo)) return nomem(m);
        pk_value **memo = realloc(m->memo, cap * sizeof *memo);
        if (!memo) return nomem(m);
        memset(memo + m->memo_cap, 0, (cap - m->memo_cap) * sizeof *memo);
        m->memo = memo;
        m->memo_cap = cap;
    }
    m->memo[idx] = m->stack[m->sp - 1];
    if (idx + 1 > m->memo_count) m->memo_count = idx + 1;
    return CB_OK;
}

static cb_status memo_get(vm *m, uint64_t idx)
{
    if (idx >= m->memo_cap || !m->memo[idx]) return bad(m, "memo lookup of an unknown entry");
    return push(m, m->memo[idx]) ? CB_OK : nomem(m);
}

static cb_status global(vm *m, const char *module, const char *name)
{
    for (size_t i = 0; i < sizeof globals / sizeof globals[0]; i++) {
        if (strcmp(module, globals[i].module) || strcmp(name, globals[i].name)) continue;
        pk_value *v = new_value(m, PK_GLOBAL);
        if (!v) return nomem(m);
        v->i = globals[i].g;
        v->st = globals[i].st;
        return push(m, v) ? CB_OK : nomem(m);
    }
    return cb_fail(CB_ERR_FORMAT, "%s: pickle refers to the global '%s.%s', which is not part of a "
                   "state dict: refused (crossbind never runs code from a file; it reads tensors in "
                   "an OrderedDict only)", m->what, module, name);
}

static int is_int(const pk_value *v) { return v->type == PK_INT || v->type == PK_BOOL; }

/* (storage, offset, size, stride, requires_grad, hooks[, metadata]) */
static cb_status rebuild_tensor(vm *m, const pk_value *args, pk_value **out)
{
    if (args->type != PK_TUPLE || args->n < 4 || args->items[0]->type != PK_STORAGE ||
        !is_int(args->items[1]) || args->items[2]->type != PK_TUPLE || args->items[3]->type != PK_TUPLE ||
        args->items[2]->n != args->items[3]->n || args->items[2]->n > CB_MAX_DIMS)
        return bad(m, "malformed tensor (expected storage, offset, size, stride)");
    pk_value *t = new_value(m, PK_TENSOR);
    if (!t) return nomem(m);
    t->storage = args->items[0];
    t->offset = args->items[1]->i;
    t->ndim = args->items[2]->n;
    for (int d = 0; d < t->ndim; d++) {
        const pk_value *sz = args->items[2]->items[d], *st = args->items[3]->items[d];
        if (!is_int(sz) || !is_int(st) || sz->i < 0 || st->i < 0)
            return bad(m, "tensor size or stride is not a non-negative integer");
        t->size[d] = sz->i;
        t->stride[d] = st->i;
    }
    if (t->offset < 0) return bad(m, "negative storage offset");
    *out = t;
    return CB_OK;
}

static cb_status reduce(vm *m)
{
    if (m->sp < 2) return bad(m, "REDUCE needs a callable and arguments");
    pk_value *args = m->stack[--m->sp], *fn = m->stack[--m->sp], *r = NULL;
    if (fn->type != PK_GLOBAL || args->type != PK_TUPLE) return bad(m, "REDUCE of something not callable");
    cb_status s = CB_OK;
    switch ((pk_global)fn->i) {
    case PK_G_ORDERED_DICT:
        if (args->n != 0) return bad(m, "OrderedDict with arguments");
        if (!(r = new_value(m, PK_DICT))) return nomem(m);
        break;
    case PK_G_REBUILD_TENSOR_V2:
        s = rebuild_tensor(m, args, &r);
        break;
    case PK_G_REBUILD_PARAMETER:
        if (args->n < 1 || args->items[0]->type != PK_TENSOR) return bad(m, "malformed parameter");
        r = args->items[0];
        break;
    case PK_G_STORAGE_TYPE:
        return bad(m, "a storage type called directly");
    }
    if (s != CB_OK) return s;
    return push(m, r) ? CB_OK : nomem(m);
}

/* ('storage', <storage type>, key, location, numel) */
static cb_status persistent_load(vm *m)
{
    if (!m->sp) return bad(m, "persistent id on an empty stack");
    pk_value *pid = m->stack[--m->sp];
    if (pid->type != PK_TUPLE || pid->n != 5 || pid->items[0]->type != PK_STR ||
        strcmp(pid->items[0]->s, "storage") || pid->items[1]->type != PK_GLOBAL ||
        pid->items[1]->i != PK_G_STORAGE_TYPE || pid->items[2]->type != PK_STR || !is_int(pid->items[4]) ||
        pid->items[4]->i < 0)
        return bad(m, "persistent id is not a torch storage reference");
    pk_value *st = new_value(m, PK_STORAGE);
    if (!st || !charge(m, strlen(pid->items[2]->s) + 1) || !(st->s = strdup(pid->items[2]->s))) return nomem(m);
    st->st = pid->items[1]->st;
    st->i = pid->items[4]->i;
    return push(m, st) ? CB_OK : nomem(m);
}

static cb_status string(vm *m, size_t n, pk_type t)
{
    if (!need(m, n)) return bad(m, "string runs past the end (truncated file?)");
    pk_value *v = new_value(m, t);
    if (!v || !charge(m, n + 1) || !(v->s = malloc(n + 1))) return nomem(m);
    memcpy(v->s, m->b + m->pos, n);
    v->s[n] = 0;
    m->pos += n;
    return push(m, v) ? CB_OK : nomem(m);
}

static cb_status integer(vm *m, int64_t x, pk_type t)
{
    pk_value *v = new_value(m, t);
    if (!v) return nomem(m);
    v->i = x;
    return push(m, v) ? CB_OK : nomem(m);
}

static cb_status setitems(vm *m, pk_value *d, size_t base)
{
    if (d->type != PK_DICT || (m->sp - base) % 2) return bad(m, "SETITEM(S) on something not a dict");
    for (size_t i = base; i < m->sp; i++)
        if (!add_item(m, d, m->stack[i])) return nomem(m);
    m->sp = base;
    return CB_OK;
}

static cb_status step(vm *m, int *done)
{
    unsigned op = m->b[m->pos++];
    cb_status s = CB_OK;
    pk_value *v;
    switch (op) {
    case 0x80: /* PROTO */
        if (!need(m, 1) || m->b[m->pos] < 2 || m->b[m->pos] > 5) return bad(m, "unsupported protocol");
        m->pos++;
        return CB_OK;
    case 0x95: /* FRAME: a length hint only */
        if (!need(m, 8)) return bad(m, "truncated frame");
        m->pos += 8;
        return CB_OK;
    case '.': /* STOP */
        *done = 1;
        return CB_OK;
    case '(': /* MARK */
        if (m->nmarks == m->mcap) {
            size_t cap = m->mcap ? 2 * m->mcap : 16;
            if (!charge(m, (cap - m->mcap) * sizeof *m->marks)) return nomem(m);
            size_t *mk = realloc(m->marks, cap * sizeof *mk);
            if (!mk) return nomem(m);
            m->marks = mk;
            m->mcap = cap;
        }
        m->marks[m->nmarks++] = m->sp;
        return CB_OK;
    case ')': return push(m, new_value(m, PK_TUPLE)) ? CB_OK : nomem(m);
    case ']': return push(m, new_value(m, PK_LIST)) ? CB_OK : nomem(m);
    case '}': return push(m, new_value(m, PK_DICT)) ? CB_OK : nomem(m);
    case 'N': return push(m, new_value(m, PK_NONE)) ? CB_OK : nomem(m);
    case 't': /* TUPLE */
        if ((s = pop_mark(m, PK_TUPLE, &v)) != CB_OK) return s;
        return push(m, v) ? CB_OK : nomem(m);
    case 'l': /* LIST */
        if ((s = pop_mark(m, PK_LIST, &v)) != CB_OK) return s;
        return push(m, v) ? CB_OK : nomem(m);
    case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
        size_t k = op - 0x84;
        if (m->sp < k) return bad(m, "tuple of missing items");
        if (!(v = new_value(m, PK_TUPLE))) return nomem(m);
        for (size_t i = m->sp - k; i < m->sp; i++)
            if (!add_item(m, v, m->stack[i])) return nomem(m);
        m->sp -= k;
        return push(m, v) ? CB_OK : nomem(m);
    }
    case 'a': /* APPEND */
        if (m->sp < 2 || m->stack[m->sp - 2]->type != PK_LIST) return bad(m, "APPEND to something not a list");
        if (!add_item(m, m->stack[m->sp - 2], m->stack[m->sp - 1])) return nomem(m);
        m->sp--;
        return CB_OK;
    case 'e': { /* APPENDS */
        if (!m->nmarks) return bad(m, "no mark on the stack");
        size_t base = m->marks[--m->nmarks];
        if (base < 1 || m->stack[base - 1]->type != PK_LIST) return bad(m, "APPENDS to something not a list");
        for (size_t i = base; i < m->sp; i++)
            if (!add_item(m, m->stack[base - 1], m->stack[i])) return nomem(m);
        m->sp = base;
        return CB_OK;
    }
    case 's': /* SETITEM */
        if (m->sp < 3) return bad(m, "SETITEM needs a dict, a key and a value");
        return setitems(m, m->stack[m->sp - 3], m->sp - 2);
    case 'u': { /* SETITEMS */
        if (!m->nmarks) return bad(m, "no mark on the stack");
        size_t base = m->marks[--m->nmarks];
        if (base < 1) return bad(m, "SETITEMS without a dict");
        return setitems(m, m->stack[base - 1], base);
    }
    case 'X': case 0x8d: case 0x8c: { /* BINUNICODE, BINUNICODE8, SHORT_BINUNICODE */
        int w = op == 'X' ? 4 : op == 0x8d ? 8 : 1;
        if (!need(m, (size_t)w)) return bad(m, "truncated string length");
        uint64_t n = le(m->b + m->pos, w);
        m->pos += (size_t)w;
        if (n > m->len) return bad(m, "string longer than the file");
        return string(m, (size_t)n, PK_STR);
    }
    case 'J': /* BININT */
        if (!need(m, 4)) return bad(m, "truncated integer");
        m->pos += 4;
        return integer(m, (int32_t)le(m->b + m->pos - 4, 4), PK_INT);
    case 'K': /* BININT1 */
        if (!need(m, 1)) return bad(m, "truncated integer");
        return integer(m, m->b[m->pos++], PK_INT);
    case 'M': /* BININT2 */
        if (!need(m, 2)) return bad(m, "truncated integer");
        m->pos += 2;
        return integer(m, (int64_t)le(m->b + m->pos - 2, 2), PK_INT);
    case 0x8a: { /* LONG1: little-endian two's complement of n bytes */
        if (!need(m, 1)) return bad(m, "truncated integer");
        size_t n = m->b[m->pos++];
        if (n > 8 || !need(m, n)) return bad(m, "integer too large or truncated");
        uint64_t x = n ? le(m->b + m->pos, (int)n) : 0;
        if (n && n < 8 && (m->b[m->pos + n - 1] & 0x80)) x |= ~(uint64_t)0 << (8 * n);
        m->pos += n;
        return integer(m, (int64_t)x, PK_INT);
    }
    case 0x88: case 0x89: /* NEWTRUE, NEWFALSE */
        return integer(m, op == 0x88, PK_BOOL);
    case 'G': { /* BINFLOAT: big-endian double */
        if (!need(m, 8)) return bad(m, "truncated float");
        uint64_t x = 0;
        for (int i = 0; i < 8; i++) x = (x << 8) | m->b[m->pos + i];
        m->pos += 8;
        if (!(v = new_value(m, PK_FLOAT))) return nomem(m);
        memcpy(&v->f, &x, 8);
        return push(m, v) ? CB_OK : nomem(m);
    }
    case 'c': { /* GLOBAL "module\nname\n" */
        char mod[128], name[128];
        const unsigned char *nl1 = memchr(m->b + m->pos, '\n', m->len - m->pos);
        if (!nl1) return bad(m, "truncated global");
        const unsigned char *nl2 = memchr(nl1 + 1, '\n', m->len - (size_t)(nl1 + 1 - m->b));
        size_t l1 = (size_t)(nl1 - (m->b + m->pos)), l2 = nl2 ? (size_t)(nl2 - nl1 - 1) : 0;
        if (!nl2 || l1 >= sizeof mod || l2 >= sizeof name) return bad(m, "malformed global");
        memcpy(mod, m->b + m->pos, l1);
        mod[l1] = 0;
        memcpy(name, nl1 + 1, l2);
        name[l2] = 0;
        m->pos = (size_t)(nl2 + 1 - m->b);
        return global(m, mod, name);
    }
    case 0x93: { /* STACK_GLOBAL */
        if (m->sp < 2 || m->stack[m->sp - 1]->type != PK_STR || m->stack[m->sp - 2]->type != PK_STR)
            return bad(m, "STACK_GLOBAL needs two strings");
        const char *mod = m->stack[m->sp - 2]->s, *name = m->stack[m->sp - 1]->s;
        m->sp -= 2;
        return global(m, mod, name);
    }
    case 'R': return reduce(m);
    case 'b': /* BUILD: state for an OrderedDict (its _metadata) is ignored */
        if (m->sp < 2 || m->stack[m->sp - 2]->type != PK_DICT) return bad(m, "BUILD of something not a dict");
        m->sp--;
        return CB_OK;
    case 'Q': return persistent_load(m);
    case 'q': /* BINPUT */
        if (!need(m, 1)) return bad(m, "truncated memo index");
        return memo_put(m, m->b[m->pos++]);
    case 'r': /* LONG_BINPUT */
        if (!need(m, 4)) return bad(m, "truncated memo index");
        m->pos += 4;
        return memo_put(m, le(m->b + m->pos - 4, 4));
    case 0x94: /* MEMOIZE */
        return memo_put(m, m->memo_count);
    case 'h': /* BINGET */
        if (!need(m, 1)) return bad(m, "truncated memo index");
        return memo_get(m, m->b[m->pos++]);
    case 'j': /* LONG_BINGET */
        if (!need(m, 4)) return bad(m, "truncated memo index");
        m->pos += 4;
        return memo_get(m, le(m->b + m->pos - 4, 4));
    case '0': /* POP */
        if (!m->sp) return bad(m, "POP on an empty stack");
        m->sp--;
        return CB_OK;
    default: {
        char msg[96];
        m->pos--;
        snprintf(msg, sizeof msg, "opcode 0x%02x is outside the state-dict subset (refused)", op);
        return bad(m, msg);
    }
    }
}

uint64_t pk_pool_bytes(const pk_pool *pool) { return pool ? pool->bytes : 0; }

cb_status pk_load(const unsigned char *buf, size_t len, const char *what, pk_pool **pool, pk_value **out)
{
    return pk_load_within(buf, len, what, UINT64_MAX, pool, out);
}

cb_status pk_load_within(const unsigned char *buf, size_t len, const char *what, uint64_t max_bytes,
                         pk_pool **pool, pk_value **out)
{
    *out = NULL;
    *pool = NULL;
    vm m = {.b = buf, .len = len, .what = what, .limit = max_bytes};
    if (!(m.pool = calloc(1, sizeof *m.pool))) return cb_fail(CB_ERR_NOMEM, "out of memory reading a pickle");
    cb_status s = CB_OK;
    int done = 0;
    while (s == CB_OK && !done) {
        if (m.pos >= m.len) s = bad(&m, "no STOP opcode (truncated file?)");
        else s = step(&m, &done);
    }
    if (s == CB_OK && m.sp != 1) s = bad(&m, "stack does not hold exactly one result at STOP");
    if (s == CB_OK) *out = m.stack[0];
    free(m.stack);
    free(m.marks);
    free(m.memo);
    if (s != CB_OK) {
        pk_pool_free(m.pool);
        m.pool = NULL;
    }
    *pool = m.pool;
    return s;
}
