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
#include <structmember.h>

/* Bound once by the Python modules (bind): the twins and the names they use. */
static PyObject *py_read_string, *py_first_string, *py_read_count, *py_read_counts, *py_usage_block, *usage_counts_type, *max_count_obj;
static long long max_count = -1;
static PyObject *flag_inclusive, *flag_ttl;  /* MISSING_INCLUSIVE, MISSING_CACHE_TTL */
static PyObject *s_empty, *s_get, *s_input_includes_cache, *k_prompt, *k_completion, *k_details, *k_cached, *k_write,
    *k_input, *k_read_input, *k_creation_input, *k_creation, *k_5m, *k_1h, *k_output;

static PyObject *unbound(const char *what) {
    PyErr_Format(PyExc_RuntimeError, "_reads: %s is not bound", what);
    return NULL;
}

/* attrs.get(key) into *value (a new reference; NULL when a dict lacks the key), ``plain`` when attrs
 * is an exact dict. -1: error. */
static int attr_get(PyObject *attrs, int plain, PyObject *key, PyObject **value) {
    if (plain) {
        *value = PyDict_GetItemWithError(attrs, key);
        if (*value == NULL) return PyErr_Occurred() ? -1 : 0;
        Py_INCREF(*value);
        return 0;
    }
    *value = PyObject_CallMethodOneArg(attrs, s_get, key);  /* any Mapping */
    return *value == NULL ? -1 : 0;
}

/* first_string(attrs, keys, limit=256): the first non-empty string among keys. */
static PyObject *first_string(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "first_string(attrs, keys, limit=256)");
        return NULL;
    }
    if (py_read_string == NULL || py_first_string == NULL) return unbound("first_string");
    PyObject *attrs = args[0], *keys = args[1];
    PyObject *limit_obj = nargs == 3 ? args[2] : NULL;
    Py_ssize_t limit = 256;
    if (limit_obj != NULL && PyLong_CheckExact(limit_obj)) {
        limit = PyLong_AsSsize_t(limit_obj);
        if (limit == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            limit_obj = NULL;  /* too large for the loop below: the twin's */
        }
    } else if (limit_obj != NULL) {
        limit_obj = NULL;
    }
    if ((nargs == 3 && limit_obj == NULL) || !(PyTuple_CheckExact(keys) || PyList_CheckExact(keys))) {
        return PyObject_Vectorcall(py_first_string, args, nargs, NULL);  /* anything else: the twin */
    }
    if (PyList_CheckExact(keys)) {  /* a snapshot: the loop below calls Python code */
        PyObject *as_tuple = PyList_AsTuple(keys);
        if (as_tuple == NULL) return NULL;
        PyObject *call[3] = {attrs, as_tuple, limit_obj};
        PyObject *out = first_string(module, call, nargs);
        Py_DECREF(as_tuple);
        return out;
    }
    int plain = PyDict_CheckExact(attrs);
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyTuple_GET_ITEM(keys, i);
        PyObject *value;
        if (attr_get(attrs, plain, key, &value) < 0) return NULL;
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
    if (!PyTuple_CheckExact(pairs) && !PyList_CheckExact(pairs)) {  /* any other iterable: the twin's */
        return PyObject_Vectorcall(py_read_counts, args, nargs, NULL);
    }
    if (PyList_CheckExact(pairs)) {  /* a snapshot: the loop below calls Python code */
        PyObject *as_tuple = PyList_AsTuple(pairs);
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
        if (attr_get(attrs, plain, name, &raw) < 0) goto done;
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
    else if (strcmp(name, "first_string") == 0) slot = &py_first_string;
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

/* --- mapping._map_into's loop: a request's views -> outcomes, with their shape plans ---------------- */

/* setup_mapping(kit): the mapping's classes, helpers and names, once (mapping.py gives them). */
enum {
    K_PLAN_FOR, K_DETECT, K_NORMALISE, K_FOLDED, K_SAVINGS, K_OPTIMIZER, K_GATEWAY, K_COMPLETENESS,
    K_UNDECIDED, K_FALLBACK, K_IGNORED_NOT_CALL, K_MAPPED, K_REJECTED, K_BAD_VALUE, K_PLAN,
    K_VIEW, K_S_REQUEST_ID, K_A_RESPONSE_ID, K_MAX_ID_CHARS, K_A_OPERATION, K_A_OI_KIND, K_A_AGENT_NAME,
    K_A_PAI_AGENT_NAME, K_AGGREGATE_OPERATIONS, K_OI_MODEL_KINDS, K_OI_ROLLUP_KINDS, K_IGNORED_ROLLUP,
    K_COMPLETENESS_ORDER, K_KNOWN_FLAGS, K_CACHE_HIT, K_SIZE
};
static PyObject *kit[K_SIZE];
static const char *const PLAN_FIELDS[] = {"rollup", "model_keys", "provider_keys", "tenant_keys", "dialect",
                                          "has_savings", "savings_or_method", "request_id_key", "response_id_key",
                                          "optimizer", "gateway", "own", "counts"};
enum { P_ROLLUP, P_MODEL, P_PROVIDER, P_TENANT, P_DIALECT, P_HAS_SAVINGS, P_SAVINGS_OR_METHOD, P_REQUEST_ID_KEY,
       P_RESPONSE_ID_KEY, P_OPTIMIZER, P_GATEWAY, P_OWN, P_COUNTS, P_SIZE };
static const char *const VIEW_FIELDS[] = {"attrs", "resource", "scope_name", "trace_id", "span_id", "start_ns",
                                          "end_ns", "parent_span_id"};
enum { V_ATTRS, V_RESOURCE, V_SCOPE, V_TRACE, V_SPAN, V_START, V_END, V_PARENT, V_SIZE };
static Py_ssize_t plan_offsets[P_SIZE], view_offsets[V_SIZE], mapped_offset;
static PyObject *s_request_id_attr, *s_usage_attr, *s_counts_include_cache, *s_name, *s_reason, *s_detail,
    *k_ts, *k_request_id, *k_model, *k_provider, *k_tenant, *k_usage, *k_source_flags, *k_source_dialect,
    *k_optimizer, *billion, *zero;

/* A slots class's fields' offsets (what _views.c does for the span view): read without a lookup. */
static int learn_slots(PyObject *type, const char *const *fields, int n, Py_ssize_t *offsets) {
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "setup_mapping: not a class");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *descr = PyObject_GetAttrString(type, fields[i]);
        if (descr == NULL) return -1;
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type)
                 && ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX
                 && PyType_IsSubtype((PyTypeObject *)type, PyDescr_TYPE(descr));
        if (ok) offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "setup_mapping: %s is not a slot", fields[i]);
            return -1;
        }
    }
    return 0;
}

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

static PyObject *setup_mapping(PyObject *module, PyObject *arg) {
    if (!PyTuple_CheckExact(arg) || PyTuple_GET_SIZE(arg) != K_SIZE) {
        PyErr_Format(PyExc_TypeError, "setup_mapping: a tuple of %d", K_SIZE);
        return NULL;
    }
    Py_ssize_t offsets[P_SIZE];
    const char *const record_field[] = {"record"};
    if (learn_slots(PyTuple_GET_ITEM(arg, K_PLAN), PLAN_FIELDS, P_SIZE, offsets) < 0
        || learn_slots(PyTuple_GET_ITEM(arg, K_VIEW), VIEW_FIELDS, V_SIZE, view_offsets) < 0
        || learn_slots(PyTuple_GET_ITEM(arg, K_MAPPED), record_field, 1, &mapped_offset) < 0) return NULL;
    memcpy(plan_offsets, offsets, sizeof offsets);
    for (int i = 0; i < K_SIZE; i++) Py_XSETREF(kit[i], Py_NewRef(PyTuple_GET_ITEM(arg, i)));
    Py_RETURN_NONE;
}

/* The span's end time (start time when end is 0), a new reference. */
static PyObject *end_of(PyObject **view) {
    PyObject *end = view[V_END];
    int truth = PyObject_IsTrue(end);
    if (truth < 0) return NULL;
    return Py_NewRef(truth ? end : view[V_START]);
}

/* end / 1e9 when end > 0, else NULL with no error (as the record's ts, or a rejection's). */
static PyObject *seconds(PyObject *end) {
    int after = PyObject_RichCompareBool(end, zero, Py_GT);
    if (after <= 0) return NULL;
    return PyNumber_TrueDivide(end, billion);
}

static PyObject *call1(PyObject *fn, PyObject *a) { return PyObject_CallOneArg(fn, a); }
static PyObject *call2(PyObject *fn, PyObject *a, PyObject *b) {
    PyObject *args[2] = {a, b};
    return PyObject_Vectorcall(fn, args, 2, NULL);
}

/* first_string(attrs, keys) for a plan's tuple of keys (new reference, Py_None when none). */
static PyObject *first_of(PyObject *attrs, PyObject *keys) {
    PyObject *args[2] = {attrs, keys};
    return first_string(NULL, args, 2);
}

static int set_item(PyObject *record, PyObject *key, PyObject *value) {
    if (value == NULL) return -1;
    int rc = PyDict_SetItem(record, key, value);
    Py_DECREF(value);
    return rc;
}

/* mapping._rollup_or_not_call: the shared Ignored of a roll-up or a non-model kind, Py_None when
 * the span is neither (new references). */
static PyObject *rollup_or_not_call(PyObject *attrs) {
    PyObject *out = NULL, *kind = NULL;
    PyObject *operation = PyDict_GetItemWithError(attrs, kit[K_A_OPERATION]);
    if (operation == NULL && PyErr_Occurred()) return NULL;
    Py_XINCREF(operation);  /* held: a str subclass's hash or eq is Python code */
    if (operation != NULL && operation != Py_None && PyUnicode_Check(operation)) {
        int aggregate = PySet_Contains(kit[K_AGGREGATE_OPERATIONS], operation);
        if (aggregate < 0) goto done;
        if (aggregate) {
            out = Py_NewRef(kit[K_IGNORED_ROLLUP]);
            goto done;
        }
    }
    kind = PyDict_GetItemWithError(attrs, kit[K_A_OI_KIND]);
    if (kind == NULL && PyErr_Occurred()) goto done;
    Py_XINCREF(kind);
    if (kind != NULL && PyUnicode_Check(kind) && PyUnicode_GET_LENGTH(kind) > 0) {
        PyObject *upper = PyObject_CallMethod(kind, "upper", NULL);
        if (upper == NULL) goto done;
        int model = PySet_Contains(kit[K_OI_MODEL_KINDS], upper);
        int rollup = model == 0 ? PySet_Contains(kit[K_OI_ROLLUP_KINDS], upper) : 0;
        Py_DECREF(upper);
        if (model < 0 || rollup < 0) goto done;
        if (!model) {
            out = Py_NewRef(rollup ? kit[K_IGNORED_ROLLUP] : kit[K_IGNORED_NOT_CALL]);
            goto done;
        }
    }
    if (operation == NULL || operation == Py_None) {
        int agent = PyDict_Contains(attrs, kit[K_A_AGENT_NAME]);
        if (agent == 0) agent = PyDict_Contains(attrs, kit[K_A_PAI_AGENT_NAME]);
        if (agent < 0) goto done;
        if (agent) {
            out = Py_NewRef(kit[K_IGNORED_ROLLUP]);
            goto done;
        }
    }
    out = Py_NewRef(Py_None);
done:
    Py_XDECREF(operation);
    Py_XDECREF(kind);
    return out;
}

/* blocks.completeness of usage_block's flags (a list of str): at most one completeness flag, in
 * COMPLETENESS_ORDER, and the cache hit. */
static PyObject *completeness_of(PyObject *flags) {
    if (!PyList_CheckExact(flags)) return call1(kit[K_COMPLETENESS], flags);
    Py_ssize_t n = PyList_GET_SIZE(flags);
    if (n == 1) {
        int known = PySet_Contains(kit[K_KNOWN_FLAGS], PyList_GET_ITEM(flags, 0));
        if (known < 0) return NULL;
        if (known) return PyList_GetSlice(flags, 0, 1);
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    PyObject *order = kit[K_COMPLETENESS_ORDER];
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(order); i++) {
        int in = PySequence_Contains(flags, PyTuple_GET_ITEM(order, i));
        if (in < 0 || (in && PyList_Append(out, PyTuple_GET_ITEM(order, i)) < 0)) goto fail;
        if (in) break;
    }
    int hit = PySequence_Contains(flags, kit[K_CACHE_HIT]);
    if (hit < 0 || (hit && PyList_Append(out, kit[K_CACHE_HIT]) < 0)) goto fail;
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* mapping._map of one span given its plan: Mapped, Ignored, or Rejected for a BadValue. */
static PyObject *map_view(PyObject **view, PyObject *plan, PyObject *forced, PyObject *tenant_attributes);

static PyObject *map_one(PyObject *span, PyObject *plan, PyObject *forced, PyObject *tenant_attributes) {
    PyObject *view[V_SIZE];  /* the view's values, held for the call: Python code it calls may change the view */
    for (int f = 0; f < V_SIZE; f++) view[f] = Py_NewRef(SLOT(span, view_offsets[f]));
    PyObject *out = map_view(view, plan, forced, tenant_attributes);
    for (int f = 0; f < V_SIZE; f++) Py_DECREF(view[f]);
    return out;
}

static PyObject *map_view(PyObject **view, PyObject *plan, PyObject *forced, PyObject *tenant_attributes) {
    PyObject *attrs = view[V_ATTRS];
    PyObject *record = NULL, *model = NULL, *dialect = NULL, *counts = NULL, *end = NULL, *out = NULL;
    if (SLOT(plan, plan_offsets[P_ROLLUP]) == Py_True) {
        PyObject *skip = rollup_or_not_call(attrs);
        if (skip == NULL) goto error;
        if (skip != Py_None) return skip;
        Py_DECREF(skip);
    }
    PyObject *keys = SLOT(plan, plan_offsets[P_MODEL]);
    model = PyTuple_GET_SIZE(keys) ? first_of(attrs, keys) : Py_NewRef(Py_None);
    if (model == NULL) goto error;
    dialect = Py_NewRef(SLOT(plan, plan_offsets[P_DIALECT]));
    if (dialect == kit[K_UNDECIDED]) {
        Py_SETREF(dialect, call2(kit[K_DETECT], attrs, view[V_SCOPE]));
        if (dialect == NULL) goto error;
    }
    if (model == Py_None && dialect == Py_None && SLOT(plan, plan_offsets[P_HAS_SAVINGS]) != Py_True) {
        out = Py_NewRef(kit[K_IGNORED_NOT_CALL]);
        goto done;
    }
    if (dialect == Py_None) Py_SETREF(dialect, Py_NewRef(kit[K_FALLBACK]));
    if (!(record = PyDict_New()) || !(end = end_of(view))) goto error;
    PyObject *ts = seconds(end);
    if (ts == NULL && PyErr_Occurred()) goto error;
    if (ts != NULL && set_item(record, k_ts, ts) < 0) goto error;
    PyObject *request_id = Py_NewRef(Py_None);
    if (SLOT(plan, plan_offsets[P_REQUEST_ID_KEY]) == Py_True) {
        PyObject *args[3] = {attrs, kit[K_S_REQUEST_ID], kit[K_MAX_ID_CHARS]};
        Py_SETREF(request_id, PyObject_Vectorcall(py_read_string, args, 3, NULL));
        if (request_id == NULL) goto error;
    }
    if (request_id == Py_None) {
        PyObject *by_dialect = PyObject_GetAttr(dialect, s_request_id_attr);
        if (by_dialect == NULL) goto error_id;
        if (by_dialect != Py_None) Py_SETREF(request_id, call1(by_dialect, attrs));
        Py_DECREF(by_dialect);
        if (request_id == NULL) goto error;
    }
    if (request_id == Py_None && SLOT(plan, plan_offsets[P_RESPONSE_ID_KEY]) == Py_True) {
        PyObject *args[3] = {attrs, kit[K_A_RESPONSE_ID], kit[K_MAX_ID_CHARS]};
        Py_SETREF(request_id, PyObject_Vectorcall(py_read_string, args, 3, NULL));
        if (request_id == NULL) goto error;
    }
    if (request_id == Py_None) {
        PyObject *trace = view[V_TRACE], *span_id = view[V_SPAN];
        int both = PyObject_IsTrue(trace);
        if (both > 0) both = PyObject_IsTrue(span_id);
        if (both < 0) goto error_id;
        if (both) Py_SETREF(request_id, PyUnicode_FromFormat("%S:%S", trace, span_id));
        if (request_id == NULL) goto error;
    }
    if (request_id != Py_None && PyDict_SetItem(record, k_request_id, request_id) < 0) goto error_id;
    Py_DECREF(request_id);
    if (model != Py_None && PyDict_SetItem(record, k_model, model) < 0) goto error;
    keys = SLOT(plan, plan_offsets[P_PROVIDER]);
    if (PyTuple_GET_SIZE(keys)) {
        PyObject *provider = first_of(attrs, keys);
        if (provider == NULL) goto error;
        if (provider != Py_None) {
            PyObject *folded = PyDict_GetItemWithError(kit[K_FOLDED], provider);
            int truth = folded ? PyObject_IsTrue(folded) : (PyErr_Occurred() ? -1 : 0);
            PyObject *value = truth > 0 ? Py_NewRef(folded) : truth == 0 ? call1(kit[K_NORMALISE], provider) : NULL;
            if (set_item(record, k_provider, value) < 0) {
                Py_DECREF(provider);
                goto error;
            }
        }
        Py_DECREF(provider);
    }
    keys = SLOT(plan, plan_offsets[P_TENANT]);
    PyObject *tenant = PyTuple_GET_SIZE(keys) ? first_of(attrs, keys) : Py_NewRef(Py_None);
    if (tenant == Py_None) {
        PyObject *resource = view[V_RESOURCE];
        int some = PyObject_IsTrue(resource);
        if (some < 0) Py_CLEAR(tenant);
        else if (some) Py_SETREF(tenant, first_of(resource, tenant_attributes));
    }
    if (tenant == NULL) goto error;
    int rc = tenant != Py_None ? PyDict_SetItem(record, k_tenant, tenant) : 0;
    Py_DECREF(tenant);
    if (rc < 0) goto error;
    PyObject *pairs = SLOT(plan, plan_offsets[P_COUNTS]);
    if (pairs != Py_None) {
        PyObject *includes = PyObject_GetAttr(dialect, s_counts_include_cache);
        if (includes == NULL) goto error;
        PyObject *args[3] = {attrs, pairs, includes};
        counts = read_counts(NULL, args, 3);
        Py_DECREF(includes);
    } else {
        PyObject *usage = PyObject_GetAttr(dialect, s_usage_attr);
        if (usage == NULL) goto error;
        counts = usage != Py_None ? call1(usage, attrs) : Py_NewRef(Py_None);
        Py_DECREF(usage);
    }
    if (counts == NULL) goto error;
    if (counts != Py_None) {
        PyObject *args[3] = {counts, dialect, forced};
        PyObject *block = usage_block(NULL, args, 3);
        if (block == NULL) goto error;
        if (!PyTuple_Check(block) || PyTuple_GET_SIZE(block) != 2) {
            Py_DECREF(block);
            PyErr_SetString(PyExc_TypeError, "usage_block: not a pair");
            goto error;
        }
        PyObject *usage = PyTuple_GET_ITEM(block, 0), *flags = PyTuple_GET_ITEM(block, 1);
        int some = PyObject_IsTrue(usage);
        if (some > 0) some = PyDict_SetItem(record, k_usage, usage) < 0 ? -1 : 1;
        if (some >= 0) some = PyObject_IsTrue(flags);
        if (some > 0) some = set_item(record, k_source_flags, completeness_of(flags)) < 0 ? -1 : 1;
        Py_DECREF(block);
        if (some < 0) goto error;
    }
    if (SLOT(plan, plan_offsets[P_SAVINGS_OR_METHOD]) == Py_True) {
        PyObject *done_ = call2(kit[K_SAVINGS], attrs, record);
        if (done_ == NULL) goto error;
        Py_DECREF(done_);
    }
    if (SLOT(plan, plan_offsets[P_OPTIMIZER]) == Py_True
        && set_item(record, k_optimizer, call1(kit[K_OPTIMIZER], attrs)) < 0) goto error;
    if (SLOT(plan, plan_offsets[P_GATEWAY]) == Py_True) {
        PyObject *keys_ = call1(kit[K_GATEWAY], attrs);
        if (keys_ == NULL) goto error;
        rc = PyDict_Update(record, keys_);
        Py_DECREF(keys_);
        if (rc < 0) goto error;
    }
    if (set_item(record, k_source_dialect, PyObject_GetAttr(dialect, s_name)) < 0) goto error;
    PyTypeObject *mapped = (PyTypeObject *)kit[K_MAPPED];
    out = mapped->tp_alloc(mapped, 0);
    if (out == NULL) goto error;
    SLOT(out, mapped_offset) = record;  /* stolen */
    record = NULL;
    goto done;
error_id:
    Py_XDECREF(request_id);
error:
    if (PyErr_ExceptionMatches(kit[K_BAD_VALUE])) {  /* rejected: the reason and detail it names */
        PyObject *type, *value, *trace;
        PyErr_Fetch(&type, &value, &trace);
        PyErr_NormalizeException(&type, &value, &trace);
        PyObject *reason = value ? PyObject_GetAttr(value, s_reason) : NULL;
        PyObject *detail = value ? PyObject_GetAttr(value, s_detail) : NULL;
        PyObject *when = NULL;
        if (reason && detail) {
            if (end == NULL) end = end_of(view);
            when = end ? seconds(end) : NULL;
            if (when == NULL && !PyErr_Occurred()) when = Py_NewRef(Py_None);
        }
        if (when) {
            PyObject *args[3] = {reason, detail, when};
            out = PyObject_Vectorcall(kit[K_REJECTED], args, 3, NULL);
        }
        Py_XDECREF(when);
        Py_XDECREF(reason);
        Py_XDECREF(detail);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(trace);
    }
done:
    Py_XDECREF(record);
    Py_XDECREF(model);
    Py_XDECREF(dialect);
    Py_XDECREF(counts);
    Py_XDECREF(end);
    return out;
}

/* map_all(views, plans, tenant_attributes, forced) -> (outcomes, owns): _map_into's loop. */
static PyObject *map_all(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyList_CheckExact(args[0]) || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "map_all(views: list, plans: dict, tenant_attributes, forced)");
        return NULL;
    }
    if (kit[K_PLAN] == NULL || py_read_string == NULL) return unbound("the mapping");
    PyObject *views = args[0], *plans = args[1], *tenants = args[2], *forced = args[3];
    Py_ssize_t n = PyList_GET_SIZE(views);
    for (Py_ssize_t i = 0; i < n; i++) {  /* views of another kind: None, for the Python loop */
        PyObject *span = PyList_GET_ITEM(views, i);
        if (Py_TYPE(span) != (PyTypeObject *)kit[K_VIEW]) Py_RETURN_NONE;
        for (int f = 0; f < V_SIZE; f++) {  /* a field deleted or never set: the Python loop raises */
            if (SLOT(span, view_offsets[f]) == NULL) Py_RETURN_NONE;
        }
        if (!PyDict_CheckExact(SLOT(span, view_offsets[V_ATTRS]))) Py_RETURN_NONE;
    }
    views = PyList_AsTuple(views);  /* a snapshot: the loop calls Python code, which may change the list */
    if (views == NULL) return NULL;
    PyObject *outcomes = PyList_New(n), *owns = PyList_New(n), *out = NULL;
    if (outcomes == NULL || owns == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *span = PyTuple_GET_ITEM(views, i);
        for (int f = 0; f < V_SIZE; f++) {  /* deleted by Python code the loop called */
            if (SLOT(span, view_offsets[f]) == NULL) {
                PyErr_Format(PyExc_AttributeError, "'SpanView' object has no attribute '%s'", VIEW_FIELDS[f]);
                goto done;
            }
        }
        PyObject *attrs = SLOT(span, view_offsets[V_ATTRS]);
        if (!PyDict_CheckExact(attrs)) {
            PyErr_SetString(PyExc_TypeError, "map_all: a view's attrs were replaced by a non-dict");
            goto done;
        }
        PyObject *shape = PyTuple_New(1 + PyDict_GET_SIZE(attrs));  /* (scope name, *names) */
        if (shape == NULL) goto done;
        PyTuple_SET_ITEM(shape, 0, Py_NewRef(SLOT(span, view_offsets[V_SCOPE])));
        Py_ssize_t pos = 0, at = 1;
        PyObject *name, *value;
        while (PyDict_Next(attrs, &pos, &name, &value)) PyTuple_SET_ITEM(shape, at++, Py_NewRef(name));
        PyObject *plan = PyDict_GetItemWithError(plans, shape);
        Py_DECREF(shape);
        if (plan != NULL) {
            Py_INCREF(plan);
        } else {
            if (PyErr_Occurred()) goto done;
            PyObject *call[4] = {plans, attrs, SLOT(span, view_offsets[V_SCOPE]), tenants};
            plan = PyObject_Vectorcall(kit[K_PLAN_FOR], call, 4, NULL);
            if (plan == NULL) goto done;
        }
        if (Py_TYPE(plan) != (PyTypeObject *)kit[K_PLAN]) {  /* its slots are read by offset below */
            Py_DECREF(plan);
            PyErr_SetString(PyExc_TypeError, "map_all: a plan is not a Plan");
            goto done;
        }
        PyObject *outcome = map_one(span, plan, forced, tenants);
        if (outcome == NULL) {
            Py_DECREF(plan);
            goto done;
        }
        PyList_SET_ITEM(outcomes, i, outcome);
        PyList_SET_ITEM(owns, i, Py_NewRef(SLOT(plan, plan_offsets[P_OWN])));
        Py_DECREF(plan);
    }
    out = PyTuple_Pack(2, outcomes, owns);
done:
    Py_XDECREF(outcomes);
    Py_XDECREF(owns);
    Py_DECREF(views);
    return out;
}

static PyMethodDef methods[] = {
    {"first_string", (PyCFunction)(void (*)(void))first_string, METH_FASTCALL,
     "first_string(attrs, keys, limit=256): attributes.first_string"},
    {"read_counts", (PyCFunction)(void (*)(void))read_counts, METH_FASTCALL,
     "read_counts(attrs, pairs, includes_cache=None, flags=()): dialects.base.read_counts"},
    {"usage_block", (PyCFunction)(void (*)(void))usage_block, METH_FASTCALL,
     "usage_block(counts, dialect, forced): blocks.usage_block"},
    {"bind", bind, METH_VARARGS, "bind(name, value): a Python twin or constant the reads use"},
    {"setup_mapping", setup_mapping, METH_O, "setup_mapping(kit): the mapping's classes, helpers and names"},
    {"map_all", (PyCFunction)(void (*)(void))map_all, METH_FASTCALL,
     "map_all(views, plans, tenant_attributes, forced) -> (outcomes, owns), None for views of another kind"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_reads", NULL, -1, methods};

PyMODINIT_FUNC PyInit__reads(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_empty, ""}, {&s_get, "get"}, {&s_input_includes_cache, "input_includes_cache"}, {&k_prompt, "prompt_tokens"},
        {&k_completion, "completion_tokens"}, {&k_details, "prompt_tokens_details"}, {&k_cached, "cached_tokens"},
        {&k_write, "cache_write_tokens"}, {&k_input, "input_tokens"}, {&k_read_input, "cache_read_input_tokens"},
        {&k_creation_input, "cache_creation_input_tokens"}, {&k_creation, "cache_creation"},
        {&k_5m, "ephemeral_5m_input_tokens"}, {&k_1h, "ephemeral_1h_input_tokens"}, {&k_output, "output_tokens"},
        {&s_request_id_attr, "request_id"}, {&s_usage_attr, "usage"}, {&s_counts_include_cache, "counts_include_cache"},
        {&s_name, "name"}, {&s_reason, "reason"}, {&s_detail, "detail"}, {&k_ts, "ts"}, {&k_request_id, "request_id"},
        {&k_model, "model"}, {&k_provider, "provider"}, {&k_tenant, "tenant"}, {&k_usage, "usage"},
        {&k_source_flags, "source_flags"}, {&k_source_dialect, "source_dialect"}, {&k_optimizer, "optimizer"},
    };
    billion = PyFloat_FromDouble(1e9);
    zero = PyLong_FromLong(0);
    if (billion == NULL || zero == NULL) return NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *names[i].slot = PyUnicode_InternFromString(names[i].text);
        if (*names[i].slot == NULL) return NULL;
    }
    return PyModule_Create(&module_def);
}
