/* The mapping's reads of a span's values in C: attributes.first_string, dialects.base.read_counts
 * and blocks.usage_block, called once or more for every model-call span.
 *
 * Each decides as its Python twin, which stays the reference and the fallback: anything
 * unusual (a malformed value, a str subclass, a count that is not a plain int, flags the
 * dialect gave) is handed to the Python code bound by bind(), so every error is raised there,
 * with its message. tests/sources/otlp/test_reads_c.py holds each to its twin on random
 * input, malformed values included. Nothing here keeps a value between calls.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Bound once by the Python modules (bind): the twins and the names they use. */
static PyObject *py_read_string, *py_read_count, *py_read_counts, *py_usage_block, *usage_counts_type, *max_count_obj;
static long long max_count = -1;
static PyObject *flag_inclusive, *flag_ttl;  /* MISSING_INCLUSIVE, MISSING_CACHE_TTL */
static PyObject *s_empty, *s_input_includes_cache, *k_prompt, *k_completion, *k_details, *k_cached, *k_write,
    *k_input, *k_read_input, *k_creation_input, *k_creation, *k_5m, *k_1h, *k_output;

static PyObject *unbound(const char *what) {
    PyErr_Format(PyExc_RuntimeError, "_reads: %s is not bound", what);
    return NULL;
}

/* first_string(attrs, keys, limit=256): the first non-empty string among keys. */
static PyObject *first_string(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "first_string(attrs, keys, limit=256)");
        return NULL;
    }
    if (py_read_string == NULL) return unbound("read_string");
    PyObject *attrs = args[0], *keys = args[1];
    if (!PyTuple_CheckExact(keys)) {  /* any other sequence of names: as a tuple */
        PyObject *as_tuple = PySequence_Tuple(keys);
        if (as_tuple == NULL) return NULL;
        PyObject *call[3] = {attrs, as_tuple, nargs == 3 ? args[2] : NULL};
        PyObject *out = first_string(module, call, nargs);
        Py_DECREF(as_tuple);
        return out;
    }
    PyObject *limit_obj = nargs == 3 ? args[2] : NULL;
    Py_ssize_t limit = 256;
    if (limit_obj != NULL) {
        limit = PyLong_AsSsize_t(limit_obj);
        if (limit == -1 && PyErr_Occurred()) return NULL;
    }
    int plain = PyDict_CheckExact(attrs);
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyTuple_GET_ITEM(keys, i);
        PyObject *value;
        if (plain) {
            value = PyDict_GetItemWithError(attrs, key);
            if (value == NULL && PyErr_Occurred()) return NULL;
            Py_XINCREF(value);
        } else {  /* any Mapping: attrs.get(key) */
            value = PyObject_CallMethod(attrs, "get", "O", key);
            if (value == NULL) return NULL;
        }
        if (value == NULL || value == Py_None) {
            Py_XDECREF(value);
            continue;
        }
        if (PyUnicode_CheckExact(value)) {
            Py_ssize_t size = PyUnicode_GET_LENGTH(value);
            if (size == 0) {
                Py_DECREF(value);
                continue;
            }
            if (size <= limit) return value;
        } else {
            int empty = PyObject_RichCompareBool(value, s_empty, Py_EQ);
            if (empty != 0) {
                Py_DECREF(value);
                if (empty < 0) return NULL;
                continue;
            }
        }
        Py_DECREF(value);
        /* raises, naming the key (a str subclass it returns: skipped, as the Python loop does) */
        PyObject *out = limit_obj ? PyObject_CallFunctionObjArgs(py_read_string, attrs, key, limit_obj, NULL)
                                  : PyObject_CallFunctionObjArgs(py_read_string, attrs, key, NULL);
        if (out == NULL) return NULL;
        Py_DECREF(out);
    }
    Py_RETURN_NONE;
}

/* read_counts(attrs, pairs, includes_cache=None, flags=()): the five counts, as UsageCounts. */
static PyObject *read_counts(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "read_counts(attrs, pairs, includes_cache=None, flags=())");
        return NULL;
    }
    if (py_read_count == NULL || py_read_counts == NULL || usage_counts_type == NULL || max_count < 0) {
        return unbound("read_counts");
    }
    PyObject *attrs = args[0], *pairs = args[1];
    if (!PyTuple_CheckExact(pairs)) {  /* any other iterable of pairs: as a tuple */
        PyObject *as_tuple = PySequence_Tuple(pairs);
        if (as_tuple == NULL) return NULL;
        PyObject *call[4] = {attrs, as_tuple, nargs > 2 ? args[2] : NULL, nargs > 3 ? args[3] : NULL};
        PyObject *out = read_counts(module, call, nargs);
        Py_DECREF(as_tuple);
        return out;
    }
    PyObject *includes_cache = nargs > 2 ? args[2] : Py_None;
    PyObject *flags = nargs > 3 ? args[3] : NULL;
    PyObject *values[5] = {NULL, NULL, NULL, NULL, NULL};
    PyObject *out = NULL;
    int plain = PyDict_CheckExact(attrs);
    Py_ssize_t n = PyTuple_GET_SIZE(pairs);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(pairs, i);
        Py_ssize_t index = -1;
        if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2 && PyLong_CheckExact(PyTuple_GET_ITEM(pair, 0))) {
            index = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
            if (index == -1 && PyErr_Occurred()) PyErr_Clear();
        }
        if (index < 0 || index > 4) {  /* not a plain (0..4, name): the Python twin reads it all */
            for (int j = 0; j < 5; j++) Py_CLEAR(values[j]);
            out = PyObject_Vectorcall(py_read_counts, args, nargs, NULL);
            goto done;
        }
        if (values[index] != NULL) continue;
        PyObject *name = PyTuple_GET_ITEM(pair, 1), *raw;
        if (plain) {
            raw = PyDict_GetItemWithError(attrs, name);
            if (raw == NULL && PyErr_Occurred()) goto done;
            Py_XINCREF(raw);
        } else {
            raw = PyObject_CallMethod(attrs, "get", "O", name);
            if (raw == NULL) goto done;
        }
        if (raw == NULL || raw == Py_None) {
            Py_XDECREF(raw);
            continue;
        }
        if (PyLong_CheckExact(raw)) {
            int overflow;
            long long count = PyLong_AsLongLongAndOverflow(raw, &overflow);
            if (!overflow && count >= 0 && count <= max_count) {
                values[index] = raw;
                continue;
            }
        }
        Py_DECREF(raw);
        PyObject *read = PyObject_CallFunctionObjArgs(py_read_count, attrs, name, NULL);  /* checks or raises */
        if (read == NULL) goto done;
        if (read == Py_None) Py_DECREF(read);
        else values[index] = read;
    }
    PyObject *fields = PyTuple_New(9);
    if (fields == NULL) goto done;
    for (int i = 0; i < 5; i++) {
        PyTuple_SET_ITEM(fields, i, values[i] ? values[i] : Py_NewRef(Py_None));
        values[i] = NULL;
    }
    PyTuple_SET_ITEM(fields, 5, Py_NewRef(Py_None));
    PyTuple_SET_ITEM(fields, 6, Py_NewRef(Py_None));
    PyTuple_SET_ITEM(fields, 7, Py_NewRef(includes_cache));
    PyObject *no_flags = flags ? Py_NewRef(flags) : PyTuple_New(0);
    if (no_flags == NULL) {
        Py_DECREF(fields);
        goto done;
    }
    PyTuple_SET_ITEM(fields, 8, no_flags);
    PyObject *packed = PyTuple_Pack(1, fields);  /* tuple.__new__(UsageCounts, fields) */
    Py_DECREF(fields);
    if (packed == NULL) goto done;
    out = PyTuple_Type.tp_new((PyTypeObject *)usage_counts_type, packed, NULL);
    Py_DECREF(packed);
done:
    for (int i = 0; i < 5; i++) Py_XDECREF(values[i]);
    return out;
}

/* A count of usage_block's fast path: None (absent, *set = 0) or a plain int within +-2**60. */
static int plain_count(PyObject *value, long long *out, int *set) {
    if (value == Py_None) {
        *set = 0;
        *out = 0;
        return 1;
    }
    if (!PyLong_CheckExact(value)) return 0;
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || number > (1LL << 60) || number < -(1LL << 60)) return 0;
    *set = 1;
    *out = number;
    return 1;
}

static int put(PyObject *dict, PyObject *key, long long number) {
    PyObject *value = PyLong_FromLongLong(number);
    if (value == NULL) return -1;
    int rc = PyDict_SetItem(dict, key, value);
    Py_DECREF(value);
    return rc;
}

/* usage_block(counts, dialect, forced) -> (usage, flags). */
static PyObject *usage_block(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "usage_block(counts, dialect, forced)");
        return NULL;
    }
    if (py_usage_block == NULL || flag_inclusive == NULL) return unbound("usage_block");
    PyObject *counts = args[0], *dialect = args[1], *forced = args[2];
    if (!PyTuple_Check(counts) || PyTuple_GET_SIZE(counts) != 9) goto python;
    PyObject *given = PyTuple_GET_ITEM(counts, 8);
    if (!PyTuple_CheckExact(given) || PyTuple_GET_SIZE(given) != 0) goto python;  /* the dialect's flags */
    long long v[7];
    int set[7];
    for (int i = 0; i < 7; i++) {
        if (!plain_count(PyTuple_GET_ITEM(counts, i), &v[i], &set[i])) goto python;
    }
    enum { INP, OUT, READ, WRITE, TOTAL, W5, W1H };
    PyObject *stated = PyTuple_GET_ITEM(counts, 7);
    int split = set[W5] && set[W1H];
    if (split && !set[WRITE]) {
        v[WRITE] = v[W5] + v[W1H];
        set[WRITE] = 1;
    }
    PyObject *added[2];
    int nadded = 0;
    long long cached = v[READ] + v[WRITE];  /* absent ones are 0 */
    if (set[INP] && cached) {
        int includes;
        PyObject *decided = forced != Py_None ? forced : stated;
        if (decided != Py_None) {
            includes = PyObject_IsTrue(decided);
        } else if (set[TOTAL] && set[OUT] && v[INP] + v[OUT] == v[TOTAL]) {
            includes = 1;
        } else if (set[TOTAL] && set[OUT] && v[INP] + cached + v[OUT] == v[TOTAL]) {
            includes = 0;
        } else {
            PyObject *convention = PyObject_GetAttr(dialect, s_input_includes_cache);
            if (convention == NULL) return NULL;
            includes = PyObject_IsTrue(convention);
            Py_DECREF(convention);
            added[nadded++] = flag_inclusive;
        }
        if (includes < 0) return NULL;
        if (!includes) v[INP] += cached;
    }
    if (set[WRITE] && v[WRITE] && !(split && v[W5] + v[W1H] == v[WRITE])) {
        added[nadded++] = flag_ttl;
        split = 0;
    }
    /* two flags: in SOURCE_FLAGS' order, which puts the cache TTL before the inclusive one */
    PyObject *ordered = PyList_New(nadded);
    if (ordered == NULL) return NULL;
    if (nadded == 2) {
        PyObject *swap = added[0];
        added[0] = added[1];
        added[1] = swap;
    }
    for (int i = 0; i < nadded; i++) PyList_SET_ITEM(ordered, i, Py_NewRef(added[i]));
    PyObject *usage = PyDict_New();
    if (usage == NULL) {
        Py_DECREF(ordered);
        return NULL;
    }
    int rc = 0;
    if (split && set[INP] && v[INP] >= cached) {
        PyObject *creation = PyDict_New();
        rc = creation == NULL ? -1 : 0;
        rc = rc || put(usage, k_input, v[INP] - cached) || put(usage, k_read_input, v[READ])
             || put(usage, k_creation_input, v[WRITE])
             || PyDict_SetItem(creation, k_5m, PyTuple_GET_ITEM(counts, W5))
             || PyDict_SetItem(creation, k_1h, PyTuple_GET_ITEM(counts, W1H))
             || PyDict_SetItem(usage, k_creation, creation) || put(usage, k_output, v[OUT]);
        Py_XDECREF(creation);
    } else {
        if (set[INP]) rc = put(usage, k_prompt, v[INP]);
        if (!rc && set[OUT]) rc = PyDict_SetItem(usage, k_completion, PyTuple_GET_ITEM(counts, OUT));
        if (!rc && (set[READ] || set[WRITE])) {
            PyObject *details = PyDict_New();
            rc = details == NULL ? -1 : 0;
            if (!rc && set[READ]) rc = PyDict_SetItem(details, k_cached, PyTuple_GET_ITEM(counts, READ));
            if (!rc && set[WRITE]) rc = put(details, k_write, v[WRITE]);
            if (!rc) rc = PyDict_SetItem(usage, k_details, details);
            Py_XDECREF(details);
        }
    }
    if (rc) {
        Py_DECREF(usage);
        Py_DECREF(ordered);
        return NULL;
    }
    PyObject *out = PyTuple_Pack(2, usage, ordered);
    Py_DECREF(usage);
    Py_DECREF(ordered);
    return out;
python:
    return PyObject_Vectorcall(py_usage_block, args, 3, NULL);
}

/* bind(name, value): the Python twins and the constants they use, bound once at import. */
static PyObject *bind(PyObject *module, PyObject *args) {
    const char *name;
    PyObject *value;
    if (!PyArg_ParseTuple(args, "sO", &name, &value)) return NULL;
    PyObject **slot = NULL;
    if (strcmp(name, "read_string") == 0) slot = &py_read_string;
    else if (strcmp(name, "read_count") == 0) slot = &py_read_count;
    else if (strcmp(name, "read_counts") == 0) slot = &py_read_counts;
    else if (strcmp(name, "usage_block") == 0) slot = &py_usage_block;
    else if (strcmp(name, "UsageCounts") == 0) slot = &usage_counts_type;
    else if (strcmp(name, "MISSING_INCLUSIVE") == 0) slot = &flag_inclusive;
    else if (strcmp(name, "MISSING_CACHE_TTL") == 0) slot = &flag_ttl;
    else if (strcmp(name, "MAX_COUNT") == 0) {
        long long number = PyLong_AsLongLong(value);
        if (number == -1 && PyErr_Occurred()) return NULL;
        max_count = number;
        slot = &max_count_obj;
    }
    if (slot == NULL) {
        PyErr_Format(PyExc_KeyError, "_reads.bind: no %s", name);
        return NULL;
    }
    Py_XSETREF(*slot, Py_NewRef(value));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"first_string", (PyCFunction)(void (*)(void))first_string, METH_FASTCALL,
     "first_string(attrs, keys, limit=256): attributes.first_string"},
    {"read_counts", (PyCFunction)(void (*)(void))read_counts, METH_FASTCALL,
     "read_counts(attrs, pairs, includes_cache=None, flags=()): dialects.base.read_counts"},
    {"usage_block", (PyCFunction)(void (*)(void))usage_block, METH_FASTCALL,
     "usage_block(counts, dialect, forced): blocks.usage_block"},
    {"bind", bind, METH_VARARGS, "bind(name, value): a Python twin or constant the reads use"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_reads", NULL, -1, methods};

PyMODINIT_FUNC PyInit__reads(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_empty, ""}, {&s_input_includes_cache, "input_includes_cache"}, {&k_prompt, "prompt_tokens"},
        {&k_completion, "completion_tokens"}, {&k_details, "prompt_tokens_details"}, {&k_cached, "cached_tokens"},
        {&k_write, "cache_write_tokens"}, {&k_input, "input_tokens"}, {&k_read_input, "cache_read_input_tokens"},
        {&k_creation_input, "cache_creation_input_tokens"}, {&k_creation, "cache_creation"},
        {&k_5m, "ephemeral_5m_input_tokens"}, {&k_1h, "ephemeral_1h_input_tokens"}, {&k_output, "output_tokens"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *names[i].slot = PyUnicode_InternFromString(names[i].text);
        if (*names[i].slot == NULL) return NULL;
    }
    return PyModule_Create(&module_def);
}
