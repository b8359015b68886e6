/* The plain canonical line's loop in C (the fast path of plainpath.ingest_canonical).
 *
 * count(pipeline, lines): every line the Python loop would count as plain and ordinary is
 * decoded (msgspec's typed decoder, the same call) and counted here, on the pipeline's own
 * dictionaries, cells and ledger; any other line - undecodable, a rare key, a timestamp of
 * another shape, a route not made yet, a future, expired or implausible record, a tiered
 * route - is handed whole, before anything of it is counted, to
 * the Python loop (``fallback(pipeline, (line,))``), which decides it exactly as before. What is
 * counted here is what the Python loop counts for the same line, step for step and in the
 * same order: tests/engine/test_plainpath.py runs both against the reference parser, and
 * test_plain_c.py compares the two loops' aggregates and ledgers directly.
 *
 * The dedupe ledger is worked on here as DedupeLedger.seen_before works on it (the same shards,
 * hour buckets and count), with the same digests: BLAKE2b of the id for the sidecar's stable
 * ledger, the process's string hash for replay's. Nothing of a line but its counts, labels and id is
 * read, and nothing is logged.
 *
 * Three things make it fast and are easy to get wrong: lines of a list are decoded ahead (pure) so
 * that each id's shard is fetched while the lines before it are counted (fetch_ahead); the routes
 * looked up are kept per pipeline across calls (RouteCache), trusted only while the pipeline's
 * routes are as they were checked; and the sums of a route's records are kept on it and written
 * to the cells and maps when someone reads Pipeline.aggregates (a property that calls
 * RouteCache.flush), never visible half-written to a reader holding the pipeline's lock.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* --- set up once (setup()) --------------------------------------------------------------- */

enum { L_TS, L_REQUEST_ID, L_MODEL, L_PROVIDER, L_TENANT, L_BEFORE, L_AFTER, L_METHOD, L_TEXT_BEFORE,
       L_TEXT_AFTER, L_WOULD_SAVE, L_COMPONENTS, L_USAGE, L_MESSAGES_BEFORE, L_MESSAGES_AFTER, L_OPTIMIZER,
       L_SOURCE_FLAGS, L_RESPONSE_CACHE, L_REQUESTED_MODEL, L_SERVICE_TIER, L_SIZE };
static const char *const LINE_FIELDS[L_SIZE] = {
    "ts", "request_id", "model", "provider", "tenant", "tokens_before", "tokens_after", "count_method",
    "text_before", "text_after", "would_have_saved", "components", "usage", "messages_before", "messages_after",
    "optimizer", "source_flags", "response_cache", "requested_model", "service_tier"};
enum { U_PROMPT, U_COMPLETION, U_PROMPT_DETAILS, U_HIT, U_MISS, U_INPUT, U_CACHE_READ, U_CACHE_CREATION_TOKENS,
       U_OUTPUT, U_CACHE_CREATION, U_INPUT_DETAILS, U_OUTPUT_DETAILS, U_G_PROMPT, U_G_CACHED, U_G_CANDIDATES,
       U_G_THOUGHTS, U_B_INPUT, U_B_OUTPUT, U_B_READ, U_B_WRITE, U_SIZE };
static const char *const USAGE_FIELDS[U_SIZE] = {
    "prompt_tokens", "completion_tokens", "prompt_tokens_details", "prompt_cache_hit_tokens",
    "prompt_cache_miss_tokens", "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
    "output_tokens", "cache_creation", "input_tokens_details", "output_tokens_details", "promptTokenCount",
    "cachedContentTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "inputTokens", "outputTokens",
    "cacheReadInputTokens", "cacheWriteInputTokens"};
enum { D_CACHED, D_WRITE, D_CREATION, D_SIZE };
static const char *const DETAILS_FIELDS[D_SIZE] = {"cached_tokens", "cache_write_tokens", "cache_creation_tokens"};
enum { S_5M, S_1H, S_SIZE };
static const char *const SPLIT_FIELDS[S_SIZE] = {"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"};

static PyTypeObject *line_type, *usage_type, *details_type, *split_type;
static Py_ssize_t line_at[L_SIZE], usage_at[U_SIZE], details_at[D_SIZE], split_at[S_SIZE];
static PyObject *unset, *decode, *decode_errors, *minutes, *new_minute, *fallback, *s_provider;
static double max_epoch_seconds;
/* the cell's columns and the route's width (engine.cells, pipeline.Route) */
enum { REQUESTS, FRESH, CACHE_READ, WRITE_5M, WRITE_1H, OUTPUT, SAVED, WOULD_SAVE, BASE_COMPACTED, BASE_UNTOUCHED,
       SENT_UNTOUCHED, CELL_MIN_WIDTH };
#define ROUTE_WIDTH 7
#define SLOT_SECONDS 900

/* The slots' offsets of ``type``'s fields (each a member descriptor of an object slot). */
static int learn(PyObject *type, const char *const *fields, int n, Py_ssize_t *out, PyTypeObject **keep) {
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "setup: a struct type expected");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *descr = PyObject_GetAttrString(type, fields[i]);
        if (descr == NULL) return -1;
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type)
                 && ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX;
        if (ok) out[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "setup: %s is not a slot", fields[i]);
            return -1;
        }
    }
    Py_XSETREF(*keep, (PyTypeObject *)Py_NewRef(type));
    return 0;
}

/* setup(line, usage, details, split, UNSET, decode, decode_errors, minute_starts, new_minute, fallback,
 *       max_epoch) */
static PyObject *setup(PyObject *module, PyObject *args) {
    PyObject *types[4], *values[6];
    double max_epoch;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOd", &types[0], &types[1], &types[2], &types[3], &values[0], &values[1],
                          &values[2], &values[3], &values[4], &values[5], &max_epoch))
        return NULL;
    if (!PyDict_CheckExact(values[3])) {
        PyErr_SetString(PyExc_TypeError, "setup: the minute cache is a dict");
        return NULL;
    }
    if (learn(types[0], LINE_FIELDS, L_SIZE, line_at, &line_type) < 0
        || learn(types[1], USAGE_FIELDS, U_SIZE, usage_at, &usage_type) < 0
        || learn(types[2], DETAILS_FIELDS, D_SIZE, details_at, &details_type) < 0
        || learn(types[3], SPLIT_FIELDS, S_SIZE, split_at, &split_type) < 0)
        return NULL;
    Py_XSETREF(unset, Py_NewRef(values[0]));
    Py_XSETREF(decode, Py_NewRef(values[1]));
    Py_XSETREF(decode_errors, Py_NewRef(values[2]));
    Py_XSETREF(minutes, Py_NewRef(values[3]));
    Py_XSETREF(new_minute, Py_NewRef(values[4]));
    Py_XSETREF(fallback, Py_NewRef(values[5]));
    if (s_provider == NULL && !(s_provider = PyUnicode_InternFromString("provider"))) return NULL;
    max_epoch_seconds = max_epoch;
    Py_RETURN_NONE;
}

/* --- usage: fastparse.fast_usage over the typed block ------------------------------------ */

/* A count field: 1 and *out when an int (msgspec bounded it to 0..2**53-1), 0 for UNSET or None (``or 0``),
 * -1 for anything else (not a typed decode's: the line goes to the Python loop). */
static int count_of(PyObject *value, long long *out) {
    *out = 0;
    if (value == unset || value == Py_None) return 0;
    if (!PyLong_CheckExact(value)) return -1;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || *out < 0 || (*out == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    return 1;
}

typedef struct {
    long long fresh, read, write_5m, write_1h, output;
} Tiers;

#define FIELD(obj, at, i) SLOT(obj, (at)[i])
#define COUNT(obj, at, i, out) \
    do { if (count_of(FIELD(obj, at, i), (out)) < 0) return -1; } while (0)
#define PRESENT(obj, at, i) (FIELD(obj, at, i) != unset)

/* 1 with the tiers, 0 when fast_usage returns None or raises _Unusual (not plain), -1 for a value no typed
 * decode gives (also not plain). */
static int usage_tiers(PyObject *u, Tiers *t) {
    if (Py_TYPE(u) != usage_type) return -1;
    for (int i = 0; i < U_SIZE; i++)
        if (FIELD(u, usage_at, i) == NULL) return -1;
    long long a, b, c, d;
    memset(t, 0, sizeof *t);
    if (PRESENT(u, usage_at, U_PROMPT) || PRESENT(u, usage_at, U_HIT)) {  /* OpenAI chat (+ DeepSeek) */
        long long prompt, cached = 0, written = 0, hit, miss;
        COUNT(u, usage_at, U_PROMPT, &prompt);
        PyObject *details = FIELD(u, usage_at, U_PROMPT_DETAILS);
        if (details != unset && details != Py_None) {
            if (Py_TYPE(details) != details_type) return -1;
            COUNT(details, details_at, D_CACHED, &cached);
            COUNT(details, details_at, D_WRITE, &written);
            if (!written) COUNT(details, details_at, D_CREATION, &written);
        }
        if (PRESENT(u, usage_at, U_HIT)) {
            COUNT(u, usage_at, U_HIT, &hit);
            if (cached && cached != hit) return 0;
            cached = hit;
            if (PRESENT(u, usage_at, U_MISS)) {
                COUNT(u, usage_at, U_MISS, &miss);
                if (hit + miss != prompt) return 0;
            }
        }
        if (cached + written > prompt) return 0;
        COUNT(u, usage_at, U_COMPLETION, &t->output);
        t->fresh = prompt - cached - written, t->read = cached, t->write_5m = written;
        return 1;
    }
    if (PRESENT(u, usage_at, U_G_PROMPT) || PRESENT(u, usage_at, U_G_CANDIDATES)) {  /* Gemini */
        COUNT(u, usage_at, U_G_PROMPT, &a);
        COUNT(u, usage_at, U_G_CACHED, &b);
        if (b > a) return 0;
        COUNT(u, usage_at, U_G_CANDIDATES, &c);
        COUNT(u, usage_at, U_G_THOUGHTS, &d);
        t->fresh = a - b, t->read = b, t->output = c + d;
        return 1;
    }
    if (PRESENT(u, usage_at, U_B_INPUT) || PRESENT(u, usage_at, U_B_OUTPUT)) {  /* Bedrock Converse */
        COUNT(u, usage_at, U_B_INPUT, &t->fresh);
        COUNT(u, usage_at, U_B_READ, &t->read);
        COUNT(u, usage_at, U_B_WRITE, &t->write_5m);
        COUNT(u, usage_at, U_B_OUTPUT, &t->output);
        return 1;
    }
    if (PRESENT(u, usage_at, U_INPUT_DETAILS) || PRESENT(u, usage_at, U_OUTPUT_DETAILS)) {  /* OpenAI responses */
        long long cached = 0;
        COUNT(u, usage_at, U_INPUT, &a);
        PyObject *details = FIELD(u, usage_at, U_INPUT_DETAILS);
        if (details != unset && details != Py_None) {
            if (Py_TYPE(details) != details_type) return -1;
            COUNT(details, details_at, D_CACHED, &cached);
        }
        if (cached > a) return 0;
        COUNT(u, usage_at, U_OUTPUT, &t->output);
        t->fresh = a - cached, t->read = cached;
        return 1;
    }
    if (PRESENT(u, usage_at, U_CACHE_READ) || PRESENT(u, usage_at, U_CACHE_CREATION_TOKENS)
        || PRESENT(u, usage_at, U_CACHE_CREATION) || PRESENT(u, usage_at, U_INPUT) || PRESENT(u, usage_at, U_OUTPUT)) {
        long long creation, w5, w1h;  /* Anthropic */
        COUNT(u, usage_at, U_CACHE_CREATION_TOKENS, &creation);
        PyObject *split = FIELD(u, usage_at, U_CACHE_CREATION);
        int has_split = 0;
        if (split != unset && split != Py_None) {
            if (Py_TYPE(split) != split_type) return -1;
            has_split = PRESENT(split, split_at, S_5M) || PRESENT(split, split_at, S_1H);
        }
        if (has_split) {
            COUNT(split, split_at, S_5M, &w5);
            COUNT(split, split_at, S_1H, &w1h);
            PyObject *given = FIELD(u, usage_at, U_CACHE_CREATION_TOKENS);
            if (given != Py_None && given != unset && w5 + w1h != creation) return 0;
        } else {
            w5 = creation, w1h = 0;
        }
        COUNT(u, usage_at, U_INPUT, &t->fresh);
        COUNT(u, usage_at, U_CACHE_READ, &t->read);
        COUNT(u, usage_at, U_OUTPUT, &t->output);
        t->write_5m = w5, t->write_1h = w1h;
        return 1;
    }
    return 0;
}

/* An id's digest as the ledger holds it, and the shard it belongs to. */
typedef struct {
    unsigned char bytes[8];
    Py_ssize_t shard;
} Digest;

/* --- the batch's bindings: the pipeline's maps, read again after any Python code ran ------- */

/* A route looked up, with what its records added since, not yet written to its cell and the aggregates'
 * maps: a Python int is made once per flush instead of once per addition. The Python loop only adds to
 * them, so it needs nothing written first; a reader gets everything written (Pipeline.aggregates flushes
 * the cache). A map's key not yet in it is added at once, so the maps' order is the order the Python loop
 * would give them. */
typedef struct {
    PyObject *key, *route;
    long long cell[CELL_MIN_WIDTH];
    long long unpriced, component, compacted[2], untouched[2];  /* divergence pairs: (after, prompt) */
    unsigned char has_unpriced, has_component, has_compacted, has_untouched, dirty;
    unsigned epoch;
} Entry;
#define ROUTE_CACHE 4096  /* a power of two: 1024 sets of WAYS */
#define WAYS 4

/* The routes looked up, kept across calls by the pipeline that owns them (plainpath keeps one per
 * pipeline), so a batch of a few hundred lines does not look up every route again. An entry is checked
 * against the pipeline's routes once per epoch; the epoch moves on whenever the routes may have changed
 * since the entries were checked (routes_unchanged), so an entry is never trusted past a change. */
typedef struct RouteCache {
    PyObject_HEAD
    Entry *entries;
    int *used, n_used;  /* the entries that hold a route, in the order they were first filled */
    unsigned epoch;
    int pending;  /* an entry holds sums not yet written */
    /* the pipeline's routes as the entries were last checked against them (see routes_unchanged) */
    PyObject *routes_seen;
    unsigned long long routes_version;
    /* the aggregates' maps the entries' has_* flags speak of: the aggregates only ever add keys to a map
     * (dropping months makes new maps), so the flags hold while the maps are the same objects */
    PyObject *maps[3];
} RouteCache;

typedef struct {
    PyObject *pipeline, *agg, *routes, *slots, *oldest_month;
    PyObject *duplicates, *unpriced, *by_component, *divergence;
    double ts_limit, newest;
    long long cap;
    /* the ledger's own parts (stable: digests by blake2b, else by the process's string hash) */
    PyObject *ledger, *shards, *current;
    int stable;
    unsigned long long mask;
    long long count, max_ids;
    int count_dirty;
    double current_start, current_end;
    /* caches (any value they hold is what a lookup would give while no Python code runs) */
    char minute[17];
    int have_minute;
    long long minute_start;
    double slot_start, slot_end;
    PyObject *slot_month, *slot_version;  /* borrowed from the slot tuple, held by slot_tuple */
    PyObject *slot_tuple;
    int slot_current;  /* its month is not older than oldest_month */
    PyObject *make_slot;  /* the pipeline's _slot */
    struct RouteCache *rc;  /* the routes looked up (kept by the pipeline across calls) */
    int newest_dirty;
    long long fetches;  /* lines whose shard was fetched ahead (see fetch_ahead) */
} Batch;

static PyObject *get_attr(PyObject *obj, const char *name) { return PyObject_GetAttrString(obj, name); }

static int get_double(PyObject *obj, const char *name, double *out) {
    PyObject *value = get_attr(obj, name);
    if (value == NULL) return -1;
    *out = PyFloat_AsDouble(value);
    Py_DECREF(value);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static int get_long(PyObject *obj, const char *name, long long *out) {
    PyObject *value = get_attr(obj, name);
    if (value == NULL) return -1;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(value, &overflow);
    Py_DECREF(value);
    if (*out == -1 && PyErr_Occurred()) return -1;
    if (overflow) *out = overflow > 0 ? LLONG_MAX : LLONG_MIN;
    return 0;
}

static int flush_entry(RouteCache *cache, Entry *e);

/* What the cache's routes hold written to the cells and maps (see Pipeline.aggregates, which calls this
 * through RouteCache.flush before anyone reads them). */
static int flush_routes(RouteCache *cache) {
    int rc = 0;
    for (int i = 0; i < cache->n_used; i++)
        if (cache->entries[cache->used[i]].dirty && flush_entry(cache, &cache->entries[cache->used[i]]) < 0) rc = -1;
    cache->pending = 0;
    return rc;
}

static int flush_newest(Batch *b) {
    int rc = 0;
    if (b->newest_dirty) {
        PyObject *value = PyFloat_FromDouble(b->newest);
        if (value == NULL || PyObject_SetAttrString(b->agg, "newest_ts", value) < 0) rc = -1;
        Py_XDECREF(value);
        b->newest_dirty = 0;
    }
    return rc;
}

static void release(Batch *b) {
    Py_CLEAR(b->agg); Py_CLEAR(b->routes); Py_CLEAR(b->slots); Py_CLEAR(b->oldest_month);
    Py_CLEAR(b->duplicates); Py_CLEAR(b->unpriced); Py_CLEAR(b->by_component); Py_CLEAR(b->divergence);
    Py_CLEAR(b->ledger); Py_CLEAR(b->shards); Py_CLEAR(b->current);
    Py_CLEAR(b->slot_tuple);
    Py_CLEAR(b->make_slot);
    b->have_minute = 0;
    b->slot_start = b->slot_end = 0.0;
}

/* The ledger's count, written back before any Python code reads it. */
static int write_back(Batch *b) {
    if (!b->count_dirty) return 0;
    PyObject *count = PyLong_FromLongLong(b->count);
    if (count == NULL) return -1;
    int rc = PyObject_SetAttrString(b->ledger, "_count", count);
    Py_DECREF(count);
    b->count_dirty = 0;
    return rc;
}

static int read_ledger(Batch *b) {
    Py_CLEAR(b->shards); Py_CLEAR(b->current);
    if (!(b->shards = get_attr(b->ledger, "_shards")) || !(b->current = get_attr(b->ledger, "_current"))) return -1;
    long long mask;
    if (!PyList_CheckExact(b->shards) || !PyByteArray_CheckExact(b->current)
        || get_long(b->ledger, "_mask", &mask) < 0 || get_long(b->ledger, "_count", &b->count) < 0
        || get_long(b->ledger, "max_ids", &b->max_ids) < 0
        || get_double(b->ledger, "_current_start", &b->current_start) < 0
        || get_double(b->ledger, "_current_end", &b->current_end) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the ledger's shards or bucket changed type");
        return -1;
    }
    if (mask < 0 || mask >= PyList_GET_SIZE(b->shards)) {
        PyErr_SetString(PyExc_ValueError, "the ledger's mask does not fit its shards");
        return -1;
    }
    b->mask = (unsigned long long)mask;
    return 0;
}

static int bind(Batch *b) {
    release(b);
    PyObject *pipeline = b->pipeline, *stable = NULL;
    double future;
    if (!(b->agg = get_attr(pipeline, "_aggregates")) || !(b->routes = get_attr(pipeline, "_routes"))
        || !(b->slots = get_attr(pipeline, "_slots")) || !(b->make_slot = get_attr(pipeline, "_slot"))
        || !(b->oldest_month = get_attr(pipeline, "oldest_month"))
        || !(b->duplicates = get_attr(b->agg, "duplicates")) || !(b->unpriced = get_attr(b->agg, "unpriced"))
        || !(b->by_component = get_attr(b->agg, "components")) || !(b->divergence = get_attr(b->agg, "divergence"))
        || !(b->ledger = get_attr(pipeline, "ledger")) || !(stable = get_attr(b->ledger, "stable")))
        goto fail;
    if (!PyDict_CheckExact(b->routes) || !PyDict_CheckExact(b->slots) || !PyDict_CheckExact(b->duplicates)
        || !PyDict_CheckExact(b->unpriced) || !PyDict_CheckExact(b->by_component)
        || !PyDict_CheckExact(b->divergence)) {
        PyErr_SetString(PyExc_TypeError, "the pipeline's maps are dicts");
        goto fail;
    }
    if (get_double(pipeline, "_future_limit", &future) < 0 || get_long(pipeline, "max_request_tokens", &b->cap) < 0
        || get_double(b->agg, "newest_ts", &b->newest) < 0)
        goto fail;
    b->ts_limit = future < max_epoch_seconds ? future : max_epoch_seconds;
    int is_stable = PyObject_IsTrue(stable);
    Py_CLEAR(stable);
    if (is_stable < 0) goto fail;
    b->count_dirty = 0;
    b->stable = is_stable;
    if (read_ledger(b) < 0) goto fail;
    return 0;
fail:
    Py_XDECREF(stable);
    return -1;
}

/* Whether ``routes`` is the dict the entries were checked against and has not changed since (CPython
 * 3.11's dict version tag moves on every change; later versions: never assumed, every route is checked
 * again). Then the entries need no new check. */
static unsigned long long routes_version(PyObject *routes) {
#if PY_VERSION_HEX < 0x030C0000
    _Py_COMP_DIAG_PUSH
    _Py_COMP_DIAG_IGNORE_DEPR_DECLS
    return ((PyDictObject *)routes)->ma_version_tag;
    _Py_COMP_DIAG_POP
#else
    (void)routes;
    return 0;
#endif
}

static int routes_unchanged(RouteCache *rc, PyObject *routes) {
#if PY_VERSION_HEX < 0x030C0000
    return rc->routes_seen == routes && rc->routes_version == routes_version(routes);
#else
    (void)rc, (void)routes;
    return 0;
#endif
}

static void routes_checked(RouteCache *rc, PyObject *routes) {
    Py_XSETREF(rc->routes_seen, Py_NewRef(routes));
    rc->routes_version = routes_version(routes);
}

/* The maps the cache's has_* flags speak of made the batch's: when they are new objects, what the entries
 * hold goes to the old ones (where it was counted) and no key is known. */
static int keep_maps(Batch *b) {
    PyObject *now[3] = {b->unpriced, b->by_component, b->divergence};
    RouteCache *rc = b->rc;
    if (rc->maps[0] == now[0] && rc->maps[1] == now[1] && rc->maps[2] == now[2]) return 0;
    if (rc->pending && flush_routes(rc) < 0) return -1;
    for (int i = 0; i < rc->n_used; i++) {
        Entry *e = &rc->entries[rc->used[i]];
        e->has_unpriced = e->has_component = e->has_compacted = e->has_untouched = 0;
    }
    for (int i = 0; i < 3; i++) Py_XSETREF(rc->maps[i], Py_NewRef(now[i]));
    return 0;
}

/* Everything read again after Python code ran. The routes looked up stay, with what they hold: each is
 * checked again at its next use when the routes changed (a new epoch), and new maps get what was counted
 * for the old ones (keep_maps). */
static int rebind(Batch *b) {
    if (bind(b) < 0) return -1;
    if (!routes_unchanged(b->rc, b->routes)) b->rc->epoch++;
    return keep_maps(b);
}

/* --- the stable ledger's digest: BLAKE2b with an 8-byte output (RFC 7693), as hashlib.blake2b(data,
 * digest_size=8) computes it (no key, salt or personalisation). test_plain_c.py holds the two equal. ----- */

static const unsigned long long B2_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
static const unsigned char B2_SIGMA[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0}};

static inline unsigned long long rotr64(unsigned long long x, int n) { return (x >> n) | (x << (64 - n)); }

/* The compression function F over one 128-byte block; ``counted``: bytes hashed so far, this block included. */
static void b2_compress(unsigned long long h[8], const unsigned char block[128], unsigned long long counted,
                        int last) {
    unsigned long long v[16], m[16];
    for (int i = 0; i < 16; i++) {
        m[i] = 0;
        for (int j = 7; j >= 0; j--) m[i] = (m[i] << 8) | block[8 * i + j];  /* little-endian words */
    }
    for (int i = 0; i < 8; i++) v[i] = h[i], v[i + 8] = B2_IV[i];
    v[12] ^= counted;  /* the counter's high word stays 0: ids are far below 2**64 bytes */
    if (last) v[14] = ~v[14];
#define B2_G(a, b, c, d, x, y)                        \
    do {                                              \
        v[a] = v[a] + v[b] + (x);                     \
        v[d] = rotr64(v[d] ^ v[a], 32);               \
        v[c] = v[c] + v[d];                           \
        v[b] = rotr64(v[b] ^ v[c], 24);               \
        v[a] = v[a] + v[b] + (y);                     \
        v[d] = rotr64(v[d] ^ v[a], 16);               \
        v[c] = v[c] + v[d];                           \
        v[b] = rotr64(v[b] ^ v[c], 63);               \
    } while (0)
    for (int round = 0; round < 12; round++) {
        const unsigned char *s = B2_SIGMA[round % 10];
        B2_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        B2_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        B2_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        B2_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        B2_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        B2_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        B2_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        B2_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
#undef B2_G
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* The 8-byte BLAKE2b digest of ``data``. */
static void blake2b_8(const unsigned char *data, size_t n, unsigned char out[8]) {
    unsigned long long h[8];
    unsigned char block[128];
    for (int i = 0; i < 8; i++) h[i] = B2_IV[i];
    h[0] ^= 0x01010000ULL ^ 8;  /* depth 1, fanout 1, no key, an 8-byte digest */
    size_t done = 0;
    while (n - done > 128) {  /* every block but the last */
        done += 128;
        b2_compress(h, data + done - 128, done, 0);
    }
    memset(block, 0, sizeof block);
    memcpy(block, data + done, n - done);
    b2_compress(h, block, n, 1);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(h[0] >> (8 * i));
}

/* blake2b_8 over bytes, for the tests. */
static PyObject *digest8(PyObject *module, PyObject *arg) {
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    unsigned char out[8];
    blake2b_8((const unsigned char *)view.buf, (size_t)view.len, out);
    PyBuffer_Release(&view);
    return PyBytes_FromStringAndSize((const char *)out, 8);
}

/* --- the ledger: DedupeLedger.seen_before ------------------------------------------------- */

/* The id's 8-byte digest and its shard, as seen_before makes them: stable, blake2b of its UTF-8 bytes
 * (surrogates passed through); else the process's own hash of the str, packed signed little-endian. */
static int id_digest(Batch *b, PyObject *request_id, unsigned char digest[8], Py_ssize_t *index) {
    unsigned long long bits = 0;
    if (b->stable) {
        if (PyUnicode_IS_ASCII(request_id)) {
            blake2b_8((const unsigned char *)PyUnicode_DATA(request_id), (size_t)PyUnicode_GET_LENGTH(request_id),
                      digest);
        } else {
            PyObject *encoded = PyUnicode_AsEncodedString(request_id, "utf-8", "surrogatepass");
            if (encoded == NULL) return -1;
            blake2b_8((const unsigned char *)PyBytes_AS_STRING(encoded), (size_t)PyBytes_GET_SIZE(encoded), digest);
            Py_DECREF(encoded);
        }
        for (int i = 7; i >= 0; i--) bits = (bits << 8) | digest[i];
    } else {
        Py_hash_t key = PyObject_Hash(request_id);
        if (key == -1 && PyErr_Occurred()) return -1;
        bits = (unsigned long long)(long long)key;
        for (int i = 0; i < 8; i++) digest[i] = (unsigned char)(bits >> (8 * i));
    }
    *index = (Py_ssize_t)(bits & b->mask);
    return 0;
}


static int append(PyObject *bytearray, const char *digest) {
    Py_ssize_t size = PyByteArray_GET_SIZE(bytearray);
    if (PyByteArray_Resize(bytearray, size + 8) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(bytearray) + size, digest, 8);
    return 0;
}

/* Call ledger.<name>(args...) with the count written back before and everything read again after. */
static int ledger_call(Batch *b, const char *name, PyObject *digest, double ts) {
    if (write_back(b) < 0) return -1;
    PyObject *result = digest ? PyObject_CallMethod(b->ledger, name, "Od", digest, ts)
                              : PyObject_CallMethod(b->ledger, name, NULL);
    if (result == NULL) return -1;
    Py_DECREF(result);
    return read_ledger(b);
}

/* 1 when ``request_id`` was seen before, 0 when it is new (and is recorded), -1 on error. ``known``: its
 * digest and shard when read_ahead worked them out, else NULL. */
static int seen_before(Batch *b, PyObject *request_id, double ts, const Digest *known) {
    Digest mine;
    if (known == NULL) {
        if (id_digest(b, request_id, mine.bytes, &mine.shard) < 0) return -1;
        known = &mine;
    }
    const unsigned char *digest = known->bytes;
    Py_ssize_t index = known->shard;
    if (index >= PyList_GET_SIZE(b->shards)) {
        PyErr_SetString(PyExc_ValueError, "the ledger's shards changed size");
        return -1;
    }
    PyObject *shard = PyList_GET_ITEM(b->shards, index);
    if (shard == Py_None) {
        PyObject *made = PyByteArray_FromStringAndSize((const char *)digest, 8);
        if (made == NULL) return -1;
        PyList_SetItem(b->shards, index, made);  /* steals; drops the None */
    } else {
        if (!PyByteArray_CheckExact(shard)) {
            PyErr_SetString(PyExc_TypeError, "a ledger shard is a bytearray");
            return -1;
        }
        const char *at = PyByteArray_AS_STRING(shard);
        Py_ssize_t size = PyByteArray_GET_SIZE(shard);
        /* held at an 8-byte-aligned offset (what shard.find and _aligned_find decide together) */
        for (Py_ssize_t pos = 0; pos + 8 <= size; pos += 8)
            if (memcmp(at + pos, digest, 8) == 0) return 1;
        if (append(shard, (const char *)digest) < 0) return -1;
    }
    b->count++, b->count_dirty = 1;
    if (b->current_start <= ts && ts < b->current_end) {
        if (append(b->current, (const char *)digest) < 0) return -1;
    } else {
        PyObject *packed = PyBytes_FromStringAndSize((const char *)digest, 8);
        if (packed == NULL) return -1;
        int rc = ledger_call(b, "_file", packed, ts);
        Py_DECREF(packed);
        if (rc < 0) return -1;
    }
    if (b->count > b->max_ids && ledger_call(b, "_evict", NULL, 0.0) < 0) return -1;
    return 0;
}

/* --- counting ------------------------------------------------------------------------------ */

/* d[key] = d.get(key, 0) + n */
static int dict_add(PyObject *d, PyObject *key, long long n) {
    PyObject *old = PyDict_GetItemWithError(d, key), *sum;
    if (old == NULL && PyErr_Occurred()) return -1;
    PyObject *add = PyLong_FromLongLong(n);
    if (add == NULL) return -1;
    sum = old ? PyNumber_Add(old, add) : Py_NewRef(add);
    Py_DECREF(add);
    if (sum == NULL) return -1;
    int rc = PyDict_SetItem(d, key, sum);
    Py_DECREF(sum);
    return rc;
}

/* list[i] += n */
static int list_add(PyObject *list, Py_ssize_t i, long long n) {
    PyObject *old = PyList_GET_ITEM(list, i), *sum;
    long long value, total;
    int overflow;
    if (PyLong_CheckExact(old) && (value = PyLong_AsLongLongAndOverflow(old, &overflow), !overflow)
        && !__builtin_add_overflow(value, n, &total)) {
        sum = PyLong_FromLongLong(total);
    } else {
        PyObject *add = PyLong_FromLongLong(n);
        if (add == NULL) return -1;
        sum = PyNumber_Add(old, add);
        Py_DECREF(add);
    }
    if (sum == NULL) return -1;
    PyList_SET_ITEM(list, i, sum);
    Py_DECREF(old);
    return 0;
}

static int ascii_only(const char *p, Py_ssize_t n) {
    unsigned long long any = 0, word;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&word, p + i, 8);
        any |= word;
    }
    for (; i < n; i++) any |= (unsigned char)p[i];
    return !(any & 0x8080808080808080ULL);
}

static int labels_equal(PyObject *a, PyObject *b) {  /* str or None, as a dict key compares them */
    if (a == b) return 1;
    if (!PyUnicode_CheckExact(a) || !PyUnicode_CheckExact(b)) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    return n == PyUnicode_GET_LENGTH(b) && PyUnicode_KIND(a) == PyUnicode_KIND(b)
           && memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * PyUnicode_KIND(a)) == 0;
}

/* A label's characters mixed into h, eight bytes at a time (the route cache's index: a collision only
 * costs a lookup). */
static unsigned long long mix(unsigned long long h, PyObject *label) {
    const unsigned long long k = 0x9E3779B97F4A7C15ULL;
    if (label == Py_None) return (h ^ 0xff) * k;
    const unsigned char *p = (const unsigned char *)PyUnicode_DATA(label);
    size_t n = (size_t)(PyUnicode_GET_LENGTH(label) * PyUnicode_KIND(label));
    unsigned long long word;
    h = (h ^ n) * k;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&word, p, 8);
        h = (h ^ word) * k;
        h ^= h >> 32;
    }
    if (n) {
        word = 0;
        memcpy(&word, p, n);
        h = (h ^ word) * k;
        h ^= h >> 32;
    }
    return h;
}

/* d[key] = d.get(key, 0) + n, or only *pending += n when *known says the key is in d already. */
static int dict_add_known(PyObject *d, PyObject *key, long long n, long long *pending, unsigned char *known) {
    if (*known) {
        *pending += n;
        return 0;
    }
    *known = 1;
    return dict_add(d, key, n);
}

static int flush_pair(PyObject *divergence, PyObject *key, long long *pending) {
    PyObject *pair = PyDict_GetItemWithError(divergence, key);
    if (pair == NULL || !PyList_CheckExact(pair) || PyList_GET_SIZE(pair) < 2) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a divergence pair is a list of two");
        return -1;
    }
    int rc = (pending[0] && list_add(pair, 0, pending[0]) < 0) || (pending[1] && list_add(pair, 1, pending[1]) < 0);
    pending[0] = pending[1] = 0;
    return rc ? -1 : 0;
}

static int flush_entry(RouteCache *cache, Entry *e) {
    PyObject *route = e->route, *cell = PyTuple_GET_ITEM(route, 0);
    PyObject *unpriced = cache->maps[0], *by_component = cache->maps[1], *divergence = cache->maps[2];
    int rc = 0;
    e->dirty = 0;
    for (int i = 0; i < CELL_MIN_WIDTH; i++)
        if (e->cell[i]) {
            if (list_add(cell, i, e->cell[i]) < 0) rc = -1;
            e->cell[i] = 0;
        }
    if (e->unpriced && dict_add(unpriced, PyTuple_GET_ITEM(route, 2), e->unpriced) < 0) rc = -1;
    if (e->component && dict_add(by_component, PyTuple_GET_ITEM(route, 3), e->component) < 0) rc = -1;
    e->unpriced = e->component = 0;
    if ((e->compacted[0] || e->compacted[1]) && flush_pair(divergence, PyTuple_GET_ITEM(route, 4), e->compacted) < 0)
        rc = -1;
    if ((e->untouched[0] || e->untouched[1]) && flush_pair(divergence, PyTuple_GET_ITEM(route, 5), e->untouched) < 0)
        rc = -1;
    return rc;
}

/* The cache entry of the route of (month, version, model, provider, tenant, method, priced savings, None)
 * when the routes hold it, else NULL (the line goes to the Python loop, which makes it); NULL with an
 * error set on error. */
static Entry *find_route(Batch *b, PyObject *month, PyObject *version, PyObject *model, PyObject *provider,
                         PyObject *tenant, PyObject *method, int savings) {
    PyObject *flag = savings ? Py_True : Py_False;
    if (!PyUnicode_CheckExact(month)) return NULL;  /* every slot's month is a str */
    unsigned long long h = mix(mix(mix(mix(mix(0xcbf29ce484222325ULL, month), model), provider), tenant), method);
    h ^= (unsigned long long)(size_t)version * 17 + (unsigned long long)savings;
    h ^= h >> 29;
    int set = (int)(h & (ROUTE_CACHE / WAYS - 1)) * WAYS, index = set + (int)((h >> 40) & (WAYS - 1));
    Entry *e = NULL;
    for (int way = 0; way < WAYS; way++) {
        Entry *at = &b->rc->entries[set + way];
        PyObject *key = at->key;
        if (key == NULL) {  /* the set's first empty way: where a new route goes */
            index = set + way;
            break;
        }
        if (PyTuple_GET_ITEM(key, 1) == version && PyTuple_GET_ITEM(key, 6) == flag
            && labels_equal(PyTuple_GET_ITEM(key, 2), model) && labels_equal(PyTuple_GET_ITEM(key, 0), month)
            && labels_equal(PyTuple_GET_ITEM(key, 3), provider) && labels_equal(PyTuple_GET_ITEM(key, 4), tenant)
            && labels_equal(PyTuple_GET_ITEM(key, 5), method)) {
            if (at->epoch == b->rc->epoch) return at;
            PyObject *now = PyDict_GetItemWithError(b->routes, key);  /* its own key: no hashing of new labels */
            if (now == at->route) {
                at->epoch = b->rc->epoch;
                return at;
            }
            if (now == NULL && PyErr_Occurred()) return NULL;
            index = set + way;
            break;
        }
    }
    e = &b->rc->entries[index];
    PyObject *key;
    if (!(key = PyTuple_Pack(8, month, version, model, provider, tenant, method, flag, Py_None))) return NULL;
    PyObject *route = PyDict_GetItemWithError(b->routes, key);
    if (route == NULL || !PyTuple_CheckExact(route) || PyTuple_GET_SIZE(route) != ROUTE_WIDTH
        || !PyList_CheckExact(PyTuple_GET_ITEM(route, 0)) || PyList_GET_SIZE(PyTuple_GET_ITEM(route, 0)) < CELL_MIN_WIDTH
        || !PyLong_CheckExact(PyTuple_GET_ITEM(route, 6))) {
        Py_DECREF(key);
        return NULL;
    }
    if (e->dirty && flush_entry(b->rc, e) < 0) {
        Py_DECREF(key);
        return NULL;
    }
    if (e->key == NULL) b->rc->used[b->rc->n_used++] = index;
    Py_XSETREF(e->key, key);
    Py_XSETREF(e->route, Py_NewRef(route));
    e->has_unpriced = e->has_component = e->has_compacted = e->has_untouched = 0;
    e->epoch = b->rc->epoch;
    return e;
}

/* Epoch seconds of the minute ``YYYY-MM-DDTHH:MM:`` when it is a real one from 1970 on, -1 otherwise (then
 * the reference decides): what datetime.fromisoformat(prefix + "00Z").timestamp() gives for such a minute. */
static long long minute_epoch(const char *t) {
    int digit[12], at[12] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15};
    for (int i = 0; i < 12; i++) {
        if (t[at[i]] < '0' || t[at[i]] > '9') return -1;
        digit[i] = t[at[i]] - '0';
    }
    if (t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':') return -1;
    long long year = digit[0] * 1000 + digit[1] * 100 + digit[2] * 10 + digit[3];
    int month = digit[4] * 10 + digit[5], day = digit[6] * 10 + digit[7];
    int hour = digit[8] * 10 + digit[9], minute = digit[10] * 10 + digit[11];
    static const int days_in[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (year < 1970 || month < 1 || month > 12 || day < 1 || day > days_in[month - 1] + (month == 2 && leap)
        || hour > 23 || minute > 59)
        return -1;
    /* days from 1970-01-01 (the civil-from-days inverse, proleptic Gregorian, as datetime counts) */
    long long y = year - (month <= 2), era = y / 400, yoe = y - era * 400;
    long long doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    long long days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    return days * 86400 + hour * 3600 + minute * 60;
}

/* fastparse._minute_start for a minute minute_epoch knows (a bounded cache: cleared at 100,000 entries). */
static PyObject *remember_minute(PyObject *prefix, long long start) {
    if (PyDict_GET_SIZE(minutes) >= 100000) PyDict_Clear(minutes);
    PyObject *value = PyLong_FromLongLong(start);
    if (value == NULL || PyDict_SetItem(minutes, prefix, value) < 0) {
        Py_XDECREF(value);
        return NULL;
    }
    return value;
}

/* The line's epoch seconds as the Python loop finds them from a plain timestamp: the minute from the cache,
 * else worked out here (minute_epoch) or by new_minute(prefix) (fastparse._minute_start), either filling
 * the cache; 0 when it is no minute or the second is not 00-59 (the Python loop decides those), -1 on error. */
static int seconds_of(Batch *b, PyObject *text, double *ts) {
    const char *t = (const char *)PyUnicode_DATA(text);
    if (!(b->have_minute && memcmp(t, b->minute, 17) == 0)) {
        PyObject *prefix = PyUnicode_FromStringAndSize(t, 17);
        if (prefix == NULL) return -1;
        PyObject *start = PyDict_GetItemWithError(minutes, prefix);
        if (start != NULL) {
            Py_INCREF(start);
        } else if (!PyErr_Occurred()) {
            long long epoch = minute_epoch(t);
            start = epoch >= 0 && epoch <= max_epoch_seconds ? remember_minute(prefix, epoch)
                                                             : PyObject_Vectorcall(new_minute, &prefix, 1, NULL);
        }
        Py_DECREF(prefix);
        if (start == NULL) return -1;
        int overflow = 0;
        long long value = PyLong_CheckExact(start) ? PyLong_AsLongLongAndOverflow(start, &overflow) : -1;
        int is_int = PyLong_CheckExact(start);
        Py_DECREF(start);
        if (!is_int || overflow || (value == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        memcpy(b->minute, t, 17);
        b->have_minute = 1, b->minute_start = value;
    }
    if (t[17] < '0' || t[17] > '5' || t[18] < '0' || t[18] > '9') return 0;
    *ts = (double)(b->minute_start + (t[17] - '0') * 10 + (t[18] - '0'));
    return 1;
}

/* (month, version) of ``ts`` into b, as the Python loop finds them: the slot remembered, else the pipeline's
 * slots, else its _slot(ts) (which remembers it unless a price version starts inside); whether the month
 * is not older than oldest_month with it. 1, or -1 on error. */
static int slot_of(Batch *b, double ts) {
    if (b->slot_tuple && b->slot_start <= ts && ts < b->slot_end) return 1;
    PyObject *ts_obj = PyFloat_FromDouble(ts), *divisor = PyLong_FromLong(SLOT_SECONDS), *index = NULL, *slot = NULL;
    int rc = -1;
    if (!ts_obj || !divisor || !(index = PyNumber_FloorDivide(ts_obj, divisor))) goto done;
    if ((slot = PyDict_GetItemWithError(b->slots, index)) != NULL) {
        Py_INCREF(slot);
    } else if (PyErr_Occurred() || !(slot = PyObject_Vectorcall(b->make_slot, &ts_obj, 1, NULL))) {
        goto done;
    }
    if (!PyTuple_CheckExact(slot) || PyTuple_GET_SIZE(slot) != 2) {
        PyErr_SetString(PyExc_TypeError, "a slot is a (month, version) tuple");
        goto done;
    }
    int remembered = PyDict_Contains(b->slots, index);
    if (remembered < 0) goto done;
    Py_XSETREF(b->slot_tuple, Py_NewRef(slot));
    b->slot_month = PyTuple_GET_ITEM(slot, 0), b->slot_version = PyTuple_GET_ITEM(slot, 1);
    double at = PyFloat_AsDouble(index);
    if (at == -1.0 && PyErr_Occurred()) goto done;
    /* not remembered (a price version starts inside): good for this line only */
    b->slot_start = remembered ? at * SLOT_SECONDS : 0.0, b->slot_end = remembered ? (at + 1) * SLOT_SECONDS : 0.0;
    b->slot_current = 1;
    if (b->oldest_month != Py_None) {
        int newer = PyObject_RichCompareBool(b->slot_month, b->oldest_month, Py_GE);
        if (newer < 0) goto done;
        b->slot_current = newer;
    }
    rc = 1;
done:
    Py_XDECREF(ts_obj);
    Py_XDECREF(divisor);
    Py_XDECREF(index);
    Py_XDECREF(slot);
    return rc;
}

/* Count one decoded line when it is plain and ordinary: 1 counted (or a duplicate), 0 for the Python
 * loop (nothing of it counted), -1 on error. */
static int count_line(Batch *b, PyObject *line, PyObject *raw, const Digest *known) {
    if (Py_TYPE(raw) != line_type) return 0;
    PyObject *f[L_SIZE];
    for (int i = 0; i < L_SIZE; i++)
        if ((f[i] = SLOT(raw, line_at[i])) == NULL) return 0;
    if (f[L_TEXT_BEFORE] != unset || f[L_TEXT_AFTER] != unset || f[L_MESSAGES_BEFORE] != unset
        || f[L_MESSAGES_AFTER] != unset || f[L_SOURCE_FLAGS] != unset || f[L_RESPONSE_CACHE] != Py_None
        || f[L_OPTIMIZER] != Py_None || f[L_REQUESTED_MODEL] != Py_None || f[L_SERVICE_TIER] != Py_None
        || f[L_COMPONENTS] != Py_None)
        return 0;
    PyObject *text = f[L_TS];
    if (!PyUnicode_CheckExact(text) || PyUnicode_GET_LENGTH(text) != 20 || !PyUnicode_IS_ASCII(text)
        || ((const char *)PyUnicode_DATA(text))[19] != 'Z'
        || !ascii_only(PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line)))
        return 0;
    double ts;
    int rc = seconds_of(b, text, &ts);
    if (rc <= 0) return rc;
    PyObject *request_id = f[L_REQUEST_ID], *provider = f[L_PROVIDER], *tenant = f[L_TENANT];
    PyObject *before_obj = f[L_BEFORE], *after_obj = f[L_AFTER], *would_obj = f[L_WOULD_SAVE];
    if (!PyUnicode_CheckExact(request_id) || PyUnicode_GET_LENGTH(request_id) == 0
        || !(provider == Py_None || (PyUnicode_CheckExact(provider) && PyUnicode_GET_LENGTH(provider)))
        || !(tenant == Py_None || (PyUnicode_CheckExact(tenant) && PyUnicode_GET_LENGTH(tenant)))
        || (before_obj == Py_None) != (after_obj == Py_None))
        return 0;
    long long before = 0, after = 0, would_save = 0;
    if (count_of(before_obj, &before) < 0 || count_of(after_obj, &after) < 0 || count_of(would_obj, &would_save) < 0
        || before_obj == unset || after_obj == unset || would_obj == unset)
        return 0;
    int has_savings = before_obj != Py_None, has_would = would_obj != Py_None;
    Tiers t = {0, 0, 0, 0, 0};
    PyObject *u = f[L_USAGE];
    if (u != Py_None && usage_tiers(u, &t) != 1) return 0;
    long long prompt = t.fresh + t.read + t.write_5m + t.write_1h;
    if (!(ts <= b->ts_limit)) return 0;
    if (slot_of(b, ts) < 0) return -1;
    PyObject *month = b->slot_month, *version = b->slot_version;
    if (!b->slot_current) return 0;  /* an expired month: the Python loop refuses it */
    if (t.output > b->cap || prompt > b->cap || (has_savings && (before > b->cap || after > b->cap))
        || (has_would && would_save > b->cap))
        return 0;  /* an implausible count: the Python loop refuses it */
    /* the route before the ledger: a line the Python loop must route goes there with nothing recorded */
    PyObject *model = f[L_MODEL], *method = f[L_METHOD];
    if (!PyUnicode_CheckExact(model) || !(method == Py_None || PyUnicode_CheckExact(method))) return 0;
    Entry *e = find_route(b, month, version, model, provider, tenant, method, has_savings || has_would);
    if (e == NULL) return PyErr_Occurred() ? -1 : 0;
    PyObject *route = e->route;
    long long flags = PyLong_AsLongLong(PyTuple_GET_ITEM(route, 6));
    if (flags == -1 && PyErr_Occurred()) return -1;
    if (flags) return 0;  /* an unknown service tier or a tiered model: the Python loop */
    Py_INCREF(route);  /* held across the ledger (which may run Python code) */
    Py_INCREF(month);
    rc = seen_before(b, request_id, ts, known);
    if (rc != 0) {
        if (rc == 1) rc = dict_add(b->duplicates, month, 1) < 0 ? -1 : 1;
        goto done;
    }
    rc = -1;
    if (ts > b->newest) b->newest = ts, b->newest_dirty = 1;
    if (e->route != route) {  /* the ledger's Python code looked up nothing here; a change is a bug */
        PyErr_SetString(PyExc_RuntimeError, "the route cache changed under the ledger");
        goto done;
    }
    e->dirty = 1, b->rc->pending = 1;
    if (PyTuple_GET_ITEM(route, 2) != Py_None
        && dict_add_known(b->unpriced, PyTuple_GET_ITEM(route, 2), 1, &e->unpriced, &e->has_unpriced) < 0)
        goto done;
    e->cell[REQUESTS] += 1;
    if (u != Py_None) {
        e->cell[FRESH] += t.fresh, e->cell[CACHE_READ] += t.read, e->cell[WRITE_5M] += t.write_5m;
        e->cell[WRITE_1H] += t.write_1h, e->cell[OUTPUT] += t.output;
    }
    if (has_would) e->cell[WOULD_SAVE] += would_save;
    if (has_savings) {
        long long saved = 0;
        if (before > after) {
            saved = before - after;
            e->cell[SAVED] += saved, e->cell[BASE_COMPACTED] += before;
        } else {
            e->cell[BASE_UNTOUCHED] += before, e->cell[SENT_UNTOUCHED] += after;
        }
        if (dict_add_known(b->by_component, PyTuple_GET_ITEM(route, 3), saved, &e->component, &e->has_component) < 0)
            goto done;
        int by_provider = method != Py_None && labels_equal(method, s_provider);
        if (u != Py_None && !by_provider) {
            PyObject *div_key = PyTuple_GET_ITEM(route, saved ? 4 : 5);
            long long *pending = saved ? e->compacted : e->untouched;
            unsigned char *known = saved ? &e->has_compacted : &e->has_untouched;
            if (!*known) {  /* divergence.setdefault(key, [0, 0]), in the order the Python loop adds keys */
                PyObject *pair = PyDict_GetItemWithError(b->divergence, div_key);
                if (pair == NULL) {
                    if (PyErr_Occurred() || !(pair = Py_BuildValue("[ii]", 0, 0))) goto done;
                    int set = PyDict_SetItem(b->divergence, div_key, pair);
                    Py_DECREF(pair);
                    if (set < 0) goto done;
                }
                *known = 1;
            }
            pending[0] += after, pending[1] += prompt;
        }
    }
    rc = 1;
done:
    Py_DECREF(route);
    Py_DECREF(month);
    return rc;
}

/* --- the route cache object --------------------------------------------------------------------- */

static void route_cache_dealloc(PyObject *self) {
    RouteCache *rc = (RouteCache *)self;
    if (rc->pending && rc->entries) {  /* the aggregates may outlive their pipeline: nothing counted is lost */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (flush_routes(rc) < 0) PyErr_Clear();  /* only when the collector cleared the maps with it */
        PyErr_Restore(type, value, traceback);
    }
    for (int i = 0; rc->entries && i < rc->n_used; i++) {
        Py_CLEAR(rc->entries[rc->used[i]].key);
        Py_CLEAR(rc->entries[rc->used[i]].route);
    }
    PyMem_Free(rc->entries);
    PyMem_Free(rc->used);
    for (int i = 0; i < 3; i++) Py_CLEAR(rc->maps[i]);
    Py_CLEAR(rc->routes_seen);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *route_cache_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if ((args != NULL && PyTuple_GET_SIZE(args)) || (kwargs != NULL && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "RouteCache() takes no arguments");
        return NULL;
    }
    RouteCache *rc = (RouteCache *)type->tp_alloc(type, 0);
    if (rc == NULL) return NULL;
    rc->entries = PyMem_Calloc(ROUTE_CACHE, sizeof(Entry));
    rc->used = PyMem_Malloc(ROUTE_CACHE * sizeof(int));
    if (rc->entries == NULL || rc->used == NULL) {
        Py_DECREF(rc);
        return PyErr_NoMemory();
    }
    return (PyObject *)rc;
}

static PyObject *route_cache_flush(PyObject *self, PyObject *unused) {
    (void)unused;
    if (((RouteCache *)self)->pending && flush_routes((RouteCache *)self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *route_cache_pending(PyObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(((RouteCache *)self)->pending);
}

static PyMethodDef route_cache_methods[] = {
    {"flush", route_cache_flush, METH_NOARGS, "Write the sums the routes hold to the cells and maps."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef route_cache_getset[] = {
    {"pending", route_cache_pending, NULL, "Whether a route holds sums not yet written.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RouteCacheType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "exporter.engine._plain.RouteCache",
    .tp_basicsize = sizeof(RouteCache),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The C loop's routes looked up, kept by a pipeline across calls (see _plain.c).",
    .tp_new = route_cache_new,
    .tp_dealloc = route_cache_dealloc,
    .tp_methods = route_cache_methods,
    .tp_getset = route_cache_getset,
};

/* --- the loop ------------------------------------------------------------------------------ */

/* A line read ahead: decoded (or what decoding it raised, raised again when its turn comes), and where its
 * id sits in the ledger's shards (-1: not known), so the memory it will touch is fetched while the lines
 * before it are counted. Decoding has no side effect; nothing else of a line is done before its turn. */
typedef struct {
    PyObject *line, *raw, *error[3];
    PyObject *ledger;  /* the ledger ``id`` was worked out for (NULL: not worked out) */
    Digest id;
    Py_ssize_t index;  /* its place in the lines */
} Ahead;

#define AHEAD 4  /* the line counted now and three read ahead (a list or tuple only: see count()) */

static void clear_ahead(Ahead *a) {
    Py_CLEAR(a->line);
    Py_CLEAR(a->raw);
    Py_CLEAR(a->ledger);
    for (int i = 0; i < 3; i++) Py_CLEAR(a->error[i]);
}

/* Decode ``line`` (a new reference, kept) into ``a``; what decoding raises waits for the line's turn. */
static void read_ahead(Batch *b, PyObject *line, Ahead *a) {
    a->line = line, a->raw = NULL, a->ledger = NULL;
    a->error[0] = a->error[1] = a->error[2] = NULL;
    if (!PyBytes_CheckExact(line)) return;
    a->raw = PyObject_Vectorcall(decode, &line, 1, NULL);
    if (a->raw == NULL) {
        if (PyErr_ExceptionMatches(decode_errors)) PyErr_Clear();  /* the Python loop decodes it again */
        else PyErr_Fetch(&a->error[0], &a->error[1], &a->error[2]);
        return;
    }
    PyObject *id = Py_TYPE(a->raw) == line_type ? SLOT(a->raw, line_at[L_REQUEST_ID]) : NULL;
    if (b->shards != NULL && id != NULL && PyUnicode_CheckExact(id)) {  /* where the id goes in the ledger */
        if (id_digest(b, id, a->id.bytes, &a->id.shard) < 0) {
            PyErr_Clear();  /* worked out again in its turn, which raises */
            return;
        }
        a->ledger = Py_NewRef(b->ledger);
        __builtin_prefetch(&((PyListObject *)b->shards)->ob_item[a->id.shard]);
    }
}

/* The next steps of a line's fetch, each reading only what the step before fetched: the shard object
 * (1: its pointer, fetched when the line was read), then the shard's digests (2: its header, fetched by 1).
 * Counted in b->fetches: a function with no other effect than prefetches is dropped whole by gcc's
 * pure-function analysis (with NDEBUG, as setuptools builds it). */
static void fetch_ahead(Batch *b, Ahead *a, int step) {
    if (a->ledger != b->ledger || b->shards == NULL || a->id.shard >= PyList_GET_SIZE(b->shards)) return;
    PyObject *shard = PyList_GET_ITEM(b->shards, a->id.shard);
    if (shard == Py_None) return;
    b->fetches++;
    if (step == 1) {
        __builtin_prefetch(shard);
        __builtin_prefetch((char *)shard + sizeof(PyByteArrayObject) - 1);
    } else if (PyByteArray_CheckExact(shard)) {
        const char *at = PyByteArray_AS_STRING(shard);
        Py_ssize_t size = PyByteArray_GET_SIZE(shard);
        for (Py_ssize_t offset = 0; offset < size; offset += 64) __builtin_prefetch(at + offset);
        if (size) __builtin_prefetch(at + size - 1);
    }
}

/* ``pipeline.rejections`` as a C integer (-1 with an error set on error). */
static long long rejections_of(PyObject *pipeline) {
    long long n;
    return get_long(pipeline, "rejections", &n) < 0 ? -1 : n;
}

/* Count one line read ahead: in C when it is plain and ordinary, else by the Python loop. With a watch
 * (the sidecar's), a line the Python loop rejects is noted in watch.rejected as (index, reason); lines
 * counted here are never rejections. */
static int count_one(Batch *b, Ahead *a, PyObject *watch) {
    if (a->error[0] != NULL) {
        PyErr_Restore(a->error[0], a->error[1], a->error[2]);
        a->error[0] = a->error[1] = a->error[2] = NULL;
        return -1;
    }
    /* the digest worked out ahead holds while the ledger is the same (its mask and kind are fixed) */
    int counted = a->raw != NULL ? count_line(b, a->line, a->raw, a->ledger == b->ledger ? &a->id : NULL) : 0;
    if (counted) return counted < 0 ? -1 : 0;
    /* the Python loop, with the ledger's count and the newest time written back, everything read again after */
    long long seen = watch != Py_None ? rejections_of(b->pipeline) : 0;
    PyObject *one = seen < 0 ? NULL : PyTuple_Pack(1, a->line);
    if (one == NULL || flush_newest(b) < 0 || write_back(b) < 0) {
        Py_XDECREF(one);
        return -1;
    }
    PyObject *call_args[2] = {b->pipeline, one};
    PyObject *done = PyObject_Vectorcall(fallback, call_args, 2, NULL);
    Py_DECREF(one);
    if (done == NULL) return -1;
    Py_DECREF(done);
    if (watch != Py_None) {
        long long now = rejections_of(b->pipeline);
        if (now < 0) return -1;
        if (now != seen) {
            PyObject *rejected = get_attr(watch, "rejected"), *reason = get_attr(b->pipeline, "last_rejection");
            PyObject *note = rejected && reason ? Py_BuildValue("(nO)", a->index, reason) : NULL;
            int rc = note ? PyList_Append(rejected, note) : -1;
            Py_XDECREF(note);
            Py_XDECREF(reason);
            Py_XDECREF(rejected);
            if (rc < 0) return -1;
        }
    }
    return rebind(b);
}

/* count(pipeline, lines, first=0, watch=None): see the top of this file. A list or tuple of lines is read
 * ahead (decoding is pure); any other iterable one line at a time, since producing a line may itself count
 * something. ``first``: where to start in a list or tuple. ``watch`` (the sidecar's _Watch, with a list or
 * tuple): the lines the Python loop rejects go to watch.rejected, and watch.at is the line that raised. */
static PyObject *count(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *pipeline, *lines, *iterator = NULL, *result = NULL, *watch = Py_None, *cache = Py_None;
    Py_ssize_t first = 0;
    if (!PyArg_ParseTuple(args, "OO|nOO", &pipeline, &lines, &first, &watch, &cache)) return NULL;
    if (cache != Py_None && !Py_IS_TYPE(cache, &RouteCacheType)) {
        PyErr_SetString(PyExc_TypeError, "count: cache is a RouteCache or None");
        return NULL;
    }
    if (line_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "count before setup");
        return NULL;
    }
    Batch b;
    Ahead ahead[AHEAD];
    memset(&b, 0, sizeof b);
    memset(ahead, 0, sizeof ahead);
    b.pipeline = pipeline;
    b.rc = (RouteCache *)(cache != Py_None ? Py_NewRef(cache) : route_cache_new(&RouteCacheType, NULL, NULL));
    if (b.rc == NULL) return NULL;
    /* (the epoch moves on below unless the pipeline's routes are as the entries were last checked) */
    int sequence = PyList_CheckExact(lines) || PyTuple_CheckExact(lines), depth = sequence ? AHEAD : 1;
    Py_ssize_t next = first, head = 0, held = 0;  /* next: the next line to read; ahead[head..] the lines held */
    if ((first != 0 || watch != Py_None) && (!sequence || first < 0)) {
        PyErr_SetString(PyExc_TypeError, "count: first and watch need a list or tuple of lines (first >= 0)");
        goto done;
    }
    if (bind(&b) < 0 || (!sequence && !(iterator = PyObject_GetIter(lines)))) goto done;
    if (!routes_unchanged(b.rc, b.routes)) b.rc->epoch++;  /* every route is looked at again once */
    if (keep_maps(&b) < 0) goto done;
    for (;;) {
        while (held < depth) {  /* read ahead */
            PyObject *line;
            if (sequence) {
                if (next >= PySequence_Fast_GET_SIZE(lines)) break;
                line = Py_NewRef(PySequence_Fast_GET_ITEM(lines, next));
                next++;
            } else if ((line = PyIter_Next(iterator)) == NULL) {
                if (PyErr_Occurred()) goto done;
                break;
            }
            if (!sequence) next++;
            read_ahead(&b, line, &ahead[(head + held) % AHEAD]);
            ahead[(head + held) % AHEAD].index = next - 1;
            held++;
        }
        if (held == 0) break;
        if (held > 2) fetch_ahead(&b, &ahead[(head + 2) % AHEAD], 1);
        if (held > 1) fetch_ahead(&b, &ahead[(head + 1) % AHEAD], 2);
        Ahead *now = &ahead[head];
        int rc = count_one(&b, now, watch);
        if (rc < 0 && watch != Py_None) {  /* where it failed, for the log (the error stays the one raised) */
            PyObject *type, *value, *traceback, *at = PyLong_FromSsize_t(now->index);
            PyErr_Fetch(&type, &value, &traceback);
            if (at == NULL || PyObject_SetAttrString(watch, "at", at) < 0) PyErr_Clear();
            Py_XDECREF(at);
            PyErr_Restore(type, value, traceback);
        }
        clear_ahead(now);
        head = (head + 1) % AHEAD, held--;
        if (rc < 0) goto done;
    }
    if (!PyErr_Occurred()) result = Py_NewRef(Py_None);
done:
    for (int i = 0; i < AHEAD; i++) clear_ahead(&ahead[i]);
    Py_XDECREF(iterator);
    {  /* what was counted is written back whatever stopped the loop; its error, if any, is the one raised */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        int failed = b.agg != NULL && flush_newest(&b) < 0;  /* the routes' sums wait for a reader */
        if (b.ledger != NULL && write_back(&b) < 0) failed = 1;
        if (type != NULL) PyErr_Restore(type, value, traceback);
        if (type != NULL || failed) Py_CLEAR(result);
    }
    if (b.routes != NULL) {  /* the entries hold for these routes as they are now, if checked this epoch */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        routes_checked(b.rc, b.routes);
        PyErr_Restore(type, value, traceback);
    }
    release(&b);
    Py_DECREF(b.rc);
    return result;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "The record's typed structs and the loop's Python pieces, given once."},
    {"digest8", digest8, METH_O, "BLAKE2b of a bytes-like object, 8 bytes (the stable ledger's digest)."},
    {"count", count, METH_VARARGS, "Count canonical lines into a pipeline (plainpath.ingest_canonical)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_plain", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__plain(void) {
    if (PyType_Ready(&RouteCacheType) < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (PyModule_AddObjectRef(module, "RouteCache", (PyObject *)&RouteCacheType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
