/* The counted-once rules' inner loop in C: correlator.SpanCorrelator._place over a request's
 * members, and PrintIndex's add, match and forget, on the correlator's own dictionaries.
 *
 * place(state, members, arrival_lists, [next]) -> codes (next updated in place as families are made)
 *   state: (family_of, families, parents, pending, seen_ids, queues, matched, tolerance_ns)
 *   arrival_lists: (models, placed, pendings, prints), the request's _Arrival lists
 *   codes: the kinds of the entries each member added, in order (as _place returns them, joined)
 * forget_prints(queues, matched, prints): PrintIndex.forget_all
 *
 * It decides what the Python code decides, step for step, and leaves the same maps behind:
 * tests/sources/otlp/test_correlation_reference.py runs both against the one-queue reference
 * correlator and compares every map after every request. Nothing here reads a prompt: the keys
 * are trace and span ids, the values families, usages, dialect names and response ids.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyObject *deque_type, *one, *minus_one;
static PyObject *s_model, *s_end_ns, *s_count, *s_lower, *s_popleft, *s_remove, *s_append, *s_empty;

typedef struct {
    PyObject *family_of, *families, *parents, *pending, *seen_ids, *queues, *matched, *tolerance;
} State;

/* Member (setup()): a slots dataclass whose fields are read and written by their slots' offsets
 * (no attribute lookup); any other object through its attributes. */
enum { M_KEY, M_PARENT, M_DIALECT, M_USAGE, M_MODEL, M_END, M_RESPONSE_ID, M_REQUEST_ID, M_RANK, M_INDEX,
       M_FAMILY, M_KEEP, M_SIZE };
static const char *const MEMBER_FIELDS[M_SIZE] = {"key", "parent_key", "dialect", "usage", "model", "end_ns",
                                                  "response_id", "request_id", "rank", "index", "family", "keep"};
static PyTypeObject *member_class;
static Py_ssize_t member_offsets[M_SIZE];
static PyObject *member_names[M_SIZE];
#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

static PyObject *mget(PyObject *member, int field) {
    if (Py_TYPE(member) == member_class) {
        PyObject *value = SLOT(member, member_offsets[field]);
        if (value != NULL) return Py_NewRef(value);
    }
    return PyObject_GetAttr(member, member_names[field]);
}

static int mset(PyObject *member, int field, PyObject *value) {
    if (Py_TYPE(member) == member_class) {
        Py_XSETREF(SLOT(member, member_offsets[field]), Py_NewRef(value));
        return 0;
    }
    return PyObject_SetAttr(member, member_names[field], value);
}

/* ``tuple`` untracked by the collector when it holds no tracked object, as a collection would do on
 * its first pass over it: the memory's tuples are never in a cycle, and tens of thousands of them
 * live in the memory, so this spares the young collections walking them. */
static PyObject *atoms(PyObject *tuple) {
    if (tuple == NULL || !PyObject_GC_IsTracked(tuple)) return tuple;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {  /* atoms, or tuples untracked already */
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        if (PyObject_IS_GC(item) && !(PyTuple_CheckExact(item) && !PyObject_GC_IsTracked(item))) return tuple;
    }
    PyObject_GC_UnTrack(tuple);
    return tuple;
}

/* |a - b| > tolerance, as Python's ints give it (end times are up to 2**64 - 1). -1: error. */
static int apart(PyObject *a, PyObject *b, PyObject *tolerance) {
    long long x, y, t, d;
    int ox, oy, ot;
    if (!PyLong_CheckExact(a) || !PyLong_CheckExact(b) || !PyLong_CheckExact(tolerance)) goto exact;
    x = PyLong_AsLongLongAndOverflow(a, &ox);
    y = PyLong_AsLongLongAndOverflow(b, &oy);
    t = PyLong_AsLongLongAndOverflow(tolerance, &ot);
    if (PyErr_Occurred()) return -1;
    if (!ox && !oy && !ot && !__builtin_sub_overflow(x, y, &d) && d != LLONG_MIN) {
        return (d < 0 ? -d : d) > t;
    }
exact:;
    PyObject *diff = PyNumber_Subtract(a, b);
    if (diff == NULL) return -1;
    PyObject *size = PyNumber_Absolute(diff);
    Py_DECREF(diff);
    if (size == NULL) return -1;
    int out = PyObject_RichCompareBool(size, tolerance, Py_GT);
    Py_DECREF(size);
    return out;
}

/* a == b as Python's == gives it (PyObject_RichCompareBool takes an object as equal to itself, which a
 * float NaN is not); exact ints compared directly. -1: error. */
static int equal(PyObject *a, PyObject *b) {
    if (PyLong_CheckExact(a) && PyLong_CheckExact(b)) return PyObject_RichCompareBool(a, b, Py_EQ);
    PyObject *answer = PyObject_RichCompare(a, b, Py_EQ);
    if (answer == NULL) return -1;
    int truth = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return truth;
}

/* A usage as the rules read it: None, or a tuple of (input total, cache read, cache write, output). */
static int usage_ok(PyObject *usage) {
    if (usage == Py_None || (PyTuple_CheckExact(usage) && PyTuple_GET_SIZE(usage) >= 4)) return 0;
    PyErr_SetString(PyExc_TypeError, "a member's usage: None or a tuple of four counts");
    return -1;
}

/* SpanCorrelator._compatible: the family is known and one usage is absent, or the input totals
 * and outputs are equal. -1: error. */
static int compatible(State *st, PyObject *family, PyObject *usage) {
    PyObject *known = PyDict_GetItemWithError(st->families, family);  /* borrowed */
    if (known == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) < 3) {
        PyErr_SetString(PyExc_TypeError, "a family: (request id, usage, emitted)");
        return -1;
    }
    PyObject *theirs = PyTuple_GET_ITEM(known, 1);
    if (usage_ok(theirs) < 0) return -1;
    if (theirs == Py_None || usage == Py_None) return 1;
    Py_INCREF(theirs);  /* held: == may run Python code */
    int same = equal(PyTuple_GET_ITEM(theirs, 0), PyTuple_GET_ITEM(usage, 0));
    if (same > 0) same = equal(PyTuple_GET_ITEM(theirs, 3), PyTuple_GET_ITEM(usage, 3));
    Py_DECREF(theirs);
    return same;
}

/* PrintIndex.drop. -1: error. */
static int drop(State *st, PyObject *fingerprint, PyObject *entry) {
    PyObject *held = PyDict_GetItemWithError(st->queues, fingerprint);  /* borrowed */
    if (held == NULL) return PyErr_Occurred() ? -1 : 0;
    if (PyTuple_CheckExact(held)) {
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(held, 4), PyTuple_GET_ITEM(entry, 4), Py_EQ);
        if (same <= 0) return same;
        return PyDict_DelItem(st->queues, fingerprint);
    }
    Py_INCREF(held);
    int rc = -1;
    PyObject *queue = NULL;
    PyObject *key = PyTuple_Pack(2, PyTuple_GET_ITEM(entry, 0), PyTuple_GET_ITEM(entry, 3));
    if (key == NULL) goto done;
    queue = PyDict_GetItemWithError(held, key);
    if (queue == NULL) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    Py_INCREF(queue);
    Py_ssize_t size = PyObject_Size(queue);
    if (size < 0) goto done;
    int first = 0;
    if (size > 0) {
        PyObject *head = PySequence_GetItem(queue, 0);
        if (head == NULL) goto done;
        first = head == entry;
        Py_DECREF(head);
    }
    PyObject *out;
    if (first) {
        out = PyObject_CallMethodNoArgs(queue, s_popleft);
    } else {
        int in = PySequence_Contains(queue, entry);
        if (in < 0) goto done;
        out = in ? PyObject_CallMethodOneArg(queue, s_remove, entry) : Py_NewRef(Py_None);
    }
    if (out == NULL) goto done;
    Py_DECREF(out);
    size = PyObject_Size(queue);
    if (size < 0) goto done;
    rc = 0;
    if (size == 0) {
        rc = PyDict_DelItem(held, key);
        if (rc == 0 && PyDict_GET_SIZE(held) == 0) rc = PyDict_DelItem(st->queues, fingerprint);
    }
done:
    Py_XDECREF(queue);
    Py_XDECREF(key);
    Py_DECREF(held);
    return rc;
}

/* PrintIndex._earliest: the earliest print of the fingerprint's queues that may match. A new
 * reference, NULL with no error when there is none. */
static PyObject *earliest(State *st, PyObject *held, PyObject *dialect, int has_id, PyObject *end_ns) {
    PyObject *best = NULL, *name, *queue;
    Py_ssize_t pos = 0;
    while (PyDict_Next(held, &pos, &name, &queue)) {
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(name, 0), dialect, Py_EQ);
        if (same < 0) goto fail;
        if (same) continue;
        if (has_id) {
            int with_id = PyObject_IsTrue(PyTuple_GET_ITEM(name, 1));
            if (with_id < 0) goto fail;
            if (with_id) continue;
        }
        Py_INCREF(queue);
        PyObject *it = PyObject_GetIter(queue);
        Py_DECREF(queue);
        if (it == NULL) goto fail;
        PyObject *entry;
        while ((entry = PyIter_Next(it)) != NULL) {
            if (best != NULL) {
                int later = PyObject_RichCompareBool(PyTuple_GET_ITEM(entry, 4), PyTuple_GET_ITEM(best, 4), Py_GT);
                if (later != 0) {
                    Py_DECREF(entry);
                    if (later < 0) {
                        Py_DECREF(it);
                        goto fail;
                    }
                    break;
                }
            }
            int far = apart(PyTuple_GET_ITEM(entry, 1), end_ns, st->tolerance);
            if (far < 0) {
                Py_DECREF(entry);
                Py_DECREF(it);
                goto fail;
            }
            int known = far ? 0 : PyDict_Contains(st->families, PyTuple_GET_ITEM(entry, 2));
            if (known < 0) {
                Py_DECREF(entry);
                Py_DECREF(it);
                goto fail;
            }
            if (!known) {
                Py_DECREF(entry);
                continue;
            }
            Py_XSETREF(best, entry);
            break;
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) goto fail;
    }
    return best;
fail:
    Py_XDECREF(best);
    return NULL;
}

/* PrintIndex.match_held: the family of the print matched (a new reference), now out of its queue
 * and among the matched; NULL with no error when none matches. */
static PyObject *match_held(State *st, PyObject *fingerprint, PyObject *held, PyObject *dialect, int has_id,
                            PyObject *end_ns) {
    PyObject *best;
    if (PyTuple_CheckExact(held)) {
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(held, 0), dialect, Py_EQ);
        if (same < 0) return NULL;
        if (same) return NULL;
        if (has_id) {
            int with_id = PyObject_IsTrue(PyTuple_GET_ITEM(held, 3));
            if (with_id < 0) return NULL;
            if (with_id) return NULL;
        }
        int far = apart(PyTuple_GET_ITEM(held, 1), end_ns, st->tolerance);
        if (far) return NULL;  /* -1 leaves its error set */
        int known = PyDict_Contains(st->families, PyTuple_GET_ITEM(held, 2));
        if (known <= 0) return NULL;
        best = Py_NewRef(held);
    } else {
        best = earliest(st, held, dialect, has_id, end_ns);
        if (best == NULL) return NULL;
    }
    PyObject *family = NULL;
    if (PySet_Add(st->matched, PyTuple_GET_ITEM(best, 4)) == 0 && drop(st, fingerprint, best) == 0) {
        family = Py_NewRef(PyTuple_GET_ITEM(best, 2));
    }
    Py_DECREF(best);
    return family;
}

/* PrintIndex.add, given ``held`` (borrowed, NULL: the fingerprint holds nothing yet). -1: error. */
static int add(State *st, PyObject *fingerprint, PyObject *entry, PyObject *held) {
    if (held == NULL) return PyDict_SetItem(st->queues, fingerprint, entry);
    int rc = -1;
    PyObject *queues = NULL, *key = NULL, *queue = NULL;
    if (PyTuple_CheckExact(held)) {
        PyObject *first = PyTuple_Pack(2, PyTuple_GET_ITEM(held, 0), PyTuple_GET_ITEM(held, 3));
        PyObject *items = PyTuple_Pack(1, held);
        PyObject *made = items ? PyObject_CallOneArg(deque_type, items) : NULL;
        queues = PyDict_New();
        int ok = first && made && queues && PyDict_SetItem(queues, first, made) == 0
                 && PyDict_SetItem(st->queues, fingerprint, queues) == 0;
        Py_XDECREF(first);
        Py_XDECREF(items);
        Py_XDECREF(made);
        if (!ok) goto done;
    } else {
        queues = Py_NewRef(held);
    }
    key = PyTuple_Pack(2, PyTuple_GET_ITEM(entry, 0), PyTuple_GET_ITEM(entry, 3));
    if (key == NULL) goto done;
    queue = PyDict_GetItemWithError(queues, key);
    if (queue == NULL) {
        if (PyErr_Occurred()) goto done;
        PyObject *items = PyTuple_Pack(1, entry);
        PyObject *made = items ? PyObject_CallOneArg(deque_type, items) : NULL;
        Py_XDECREF(items);
        if (made == NULL) goto done;
        rc = PyDict_SetItem(queues, key, made);
        Py_DECREF(made);
        queue = NULL;
        goto done;
    }
    PyObject *out = PyObject_CallMethodOneArg(queue, s_append, entry);
    queue = NULL;
    if (out == NULL) goto done;
    Py_DECREF(out);
    rc = 0;
done:
    Py_XDECREF(key);
    Py_XDECREF(queues);
    return rc;
}

/* model.lower(), remembered for up to LOWERED names of up to 256 characters (clients choose them; a
 * longer one is lowered each time). A new reference. */
#define LOWERED 4096
static PyObject *lowered_names;

static PyObject *lowered_name(PyObject *model) {
    if (PyUnicode_CheckExact(model)) {
        PyObject *known = PyDict_GetItemWithError(lowered_names, model);
        if (known != NULL) return Py_NewRef(known);
        if (PyErr_Occurred()) return NULL;
    }
    PyObject *lowered = PyObject_CallMethodNoArgs(model, s_lower);
    if (lowered != NULL && PyUnicode_CheckExact(model) && PyUnicode_GET_LENGTH(model) <= 256
        && PyDict_GET_SIZE(lowered_names) < LOWERED && PyDict_SetItem(lowered_names, model, lowered) < 0) {
        Py_CLEAR(lowered);
    }
    return lowered;
}

/* True when ``value`` is a non-empty str (the Python code's ``if cursor``), -1 on error. */
static int present(PyObject *value) {
    if (PyUnicode_CheckExact(value)) return PyUnicode_GET_LENGTH(value) > 0;
    return PyObject_IsTrue(value);
}

/* SpanCorrelator._place of one member: its codes appended to ``codes`` (a char buffer of 3). */
static int place_one(State *st, PyObject *member, PyObject *models, PyObject *placed, PyObject *pendings,
                     PyObject *prints, PyObject *box, PyObject **next, char *codes, int *ncodes) {
    int rc = -1;
    PyObject *key = NULL, *usage = NULL, *parent_key = NULL, *family = NULL, *fingerprint = NULL,
             *response_id = NULL, *dialect = NULL, *end_ns = NULL, *held = NULL, *last = NULL, *cursor = NULL;
    *ncodes = 0;
    if (!(key = mget(member, M_KEY)) || !(usage = mget(member, M_USAGE)) || usage_ok(usage) < 0
        || !(response_id = mget(member, M_RESPONSE_ID))) goto done;
    PyObject *again = PyDict_GetItemWithError(st->family_of, key);  /* borrowed */
    if (again == NULL && PyErr_Occurred()) goto done;
    if (again != NULL) {
        Py_INCREF(again);
        int known = PyDict_Contains(st->families, again);
        int resent = known > 0 ? compatible(st, again, usage) : known;
        if (resent > 0) {
            PyObject *seen = PyDict_GetItemWithError(st->seen_ids, key);
            if (seen == NULL && PyErr_Occurred()) resent = -1;
            else resent = PyObject_RichCompareBool(seen ? seen : Py_None, response_id, Py_EQ);
        }
        if (resent > 0) {
            rc = mset(member, M_FAMILY, again);
            Py_DECREF(again);
            goto done;
        }
        Py_DECREF(again);
        if (resent < 0) goto done;
    }
    /* (a) an ancestor seen before */
    if (!(parent_key = mget(member, M_PARENT))) goto done;
    cursor = Py_NewRef(parent_key);
    last = Py_NewRef(parent_key);
    for (int depth = 0; depth < 8; depth++) {
        int more = present(cursor);
        if (more < 0) goto done;
        if (!more) break;
        PyObject *found = PyDict_GetItemWithError(st->family_of, cursor);
        if (found == NULL && PyErr_Occurred()) goto done;
        if (found != NULL) {
            int fits = compatible(st, found, usage);
            if (fits < 0) goto done;
            if (fits) {
                family = Py_NewRef(found);
                break;
            }
        }
        Py_SETREF(last, Py_NewRef(cursor));
        PyObject *up = PyDict_GetItemWithError(st->parents, cursor);
        if (up == NULL && PyErr_Occurred()) goto done;
        Py_SETREF(cursor, Py_NewRef(up ? up : s_empty));
    }
    /* (a) a descendant seen before, waiting for this span */
    if (family == NULL && PyDict_GET_SIZE(st->pending)) {
        PyObject *waiting = PyDict_GetItemWithError(st->pending, key);
        if (waiting == NULL && PyErr_Occurred()) goto done;
        if (waiting != NULL) {
            Py_INCREF(waiting);
            int fits = compatible(st, waiting, usage);
            if (fits > 0 && PyDict_DelItem(st->pending, key) < 0) fits = -1;
            if (fits < 0) {
                Py_DECREF(waiting);
                goto done;
            }
            if (fits) family = waiting;
            else Py_DECREF(waiting);
        }
    }
    /* (c) the fingerprint: the model (lowered) and the four usage numbers */
    PyObject *model = NULL;
    if (usage != Py_None) {
        int some = PyObject_IsTrue(PyTuple_GET_ITEM(usage, 0));
        if (some == 0) some = PyObject_IsTrue(PyTuple_GET_ITEM(usage, 3));
        if (some < 0) goto done;
        if (some) {
            if (!(model = mget(member, M_MODEL))) goto done;
            int named = PyObject_IsTrue(model);
            if (named > 0) {
                PyObject *lowered = lowered_name(model);
                if (lowered != NULL) {
                    fingerprint = atoms(PyTuple_Pack(5, lowered, PyTuple_GET_ITEM(usage, 0), PyTuple_GET_ITEM(usage, 1),
                                                     PyTuple_GET_ITEM(usage, 2), PyTuple_GET_ITEM(usage, 3)));
                    Py_DECREF(lowered);
                }
                if (fingerprint == NULL) named = -1;
            }
            Py_DECREF(model);
            if (named < 0) goto done;
        }
    }
    int has_id = response_id != Py_None;
    if (!(dialect = mget(member, M_DIALECT)) || !(end_ns = mget(member, M_END))) goto done;
    codes[(*ncodes)++] = 'M';
    if (family == NULL && fingerprint != NULL) {
        held = PyDict_GetItemWithError(st->queues, fingerprint);
        if (held == NULL && PyErr_Occurred()) goto done;
        if (held != NULL) {
            Py_INCREF(held);
            family = match_held(st, fingerprint, held, dialect, has_id, end_ns);
            if (family == NULL && PyErr_Occurred()) goto done;
        }
    }
    if (family == NULL) {
        PyObject *request_id = mget(member, M_REQUEST_ID);
        if (request_id == NULL) goto done;
        family = PyNumber_Add(*next, one);
        PyObject *info = family ? atoms(PyTuple_Pack(3, request_id, usage, Py_False)) : NULL;
        Py_DECREF(request_id);
        int ok = info && PyDict_SetItem(st->families, family, info) == 0;
        Py_XDECREF(info);
        if (!ok) goto done;
        Py_SETREF(*next, Py_NewRef(family));
        if (PyList_SetItem(box, 0, Py_NewRef(family)) < 0) goto done;  /* the correlator's, at once */
        if (fingerprint != NULL) {
            PyObject *entry = atoms(PyTuple_Pack(5, dialect, end_ns, family, has_id ? Py_True : Py_False, family));
            PyObject *pair = entry ? atoms(PyTuple_Pack(2, fingerprint, entry)) : NULL;
            ok = pair && add(st, fingerprint, entry, held) == 0 && PyList_Append(prints, pair) == 0;
            Py_XDECREF(entry);
            Py_XDECREF(pair);
            if (!ok) goto done;
            codes[0] = 'F';
            codes[(*ncodes)++] = 'M';
        }
    } else {
        PyObject *known = PyDict_GetItemWithError(st->families, family);
        if (known == NULL) {
            if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, family);
            goto done;
        }
        if (PyTuple_GET_ITEM(known, 1) == Py_None) {
            PyObject *info = atoms(PyTuple_Pack(3, PyTuple_GET_ITEM(known, 0), usage, PyTuple_GET_ITEM(known, 2)));
            int ok = info && PyDict_SetItem(st->families, family, info) == 0;
            Py_XDECREF(info);
            if (!ok) goto done;
        }
    }
    if (mset(member, M_FAMILY, family) < 0 || PyDict_SetItem(st->family_of, key, family) < 0) goto done;
    if (has_id) {
        if (PyDict_SetItem(st->seen_ids, key, response_id) < 0) goto done;
    } else if (PyDict_GET_SIZE(st->seen_ids)) {
        int seen = PyDict_Contains(st->seen_ids, key);
        if (seen < 0 || (seen && PyDict_DelItem(st->seen_ids, key) < 0)) goto done;
    }
    if (PyList_Append(models, key) < 0 || PyList_Append(placed, family) < 0) goto done;
    int more = present(last);
    if (more < 0) goto done;
    if (more) {
        int seen = PyDict_Contains(st->family_of, last);
        if (seen == 0) seen = PyDict_Contains(st->pending, last);
        if (seen < 0) goto done;
        if (!seen) {
            if (PyDict_SetItem(st->pending, last, family) < 0 || PyList_Append(pendings, last) < 0) goto done;
            codes[(*ncodes)++] = 'Q';
        }
    }
    rc = 0;
done:
    Py_XDECREF(key);
    Py_XDECREF(usage);
    Py_XDECREF(parent_key);
    Py_XDECREF(family);
    Py_XDECREF(fingerprint);
    Py_XDECREF(response_id);
    Py_XDECREF(dialect);
    Py_XDECREF(end_ns);
    Py_XDECREF(held);
    Py_XDECREF(last);
    Py_XDECREF(cursor);
    return rc;
}

static int unpack_state(PyObject *tuple, State *st) {
    if (!PyTuple_CheckExact(tuple) || PyTuple_GET_SIZE(tuple) != 8) {
        PyErr_SetString(PyExc_TypeError, "state: a tuple of 8");
        return -1;
    }
    PyObject **items[8] = {&st->family_of, &st->families, &st->parents, &st->pending, &st->seen_ids, &st->queues,
                           &st->matched, &st->tolerance};
    for (int i = 0; i < 8; i++) *items[i] = PyTuple_GET_ITEM(tuple, i);
    for (int i = 0; i < 6; i++) {
        if (!PyDict_CheckExact(*items[i])) {
            PyErr_Format(PyExc_TypeError, "state[%d]: a dict", i);
            return -1;
        }
    }
    if (!PySet_CheckExact(st->matched)) {
        PyErr_SetString(PyExc_TypeError, "state[6]: a set");
        return -1;
    }
    return 0;
}

static PyObject *place(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    State st;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "place(state, members, arrival_lists, next: [int])");
        return NULL;
    }
    if (unpack_state(args[0], &st) < 0) return NULL;
    PyObject *lists = args[2];
    if (!PyTuple_CheckExact(lists) || PyTuple_GET_SIZE(lists) != 4) {
        PyErr_SetString(PyExc_TypeError, "arrival_lists: (models, placed, pendings, prints)");
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        if (!PyList_CheckExact(PyTuple_GET_ITEM(lists, i))) {
            PyErr_SetString(PyExc_TypeError, "arrival_lists: four lists");
            return NULL;
        }
    }
    PyObject *members = PySequence_Tuple(args[1]);
    if (members == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(members);
    PyObject *box = args[3];
    if (!PyList_CheckExact(box) || PyList_GET_SIZE(box) != 1) {
        Py_DECREF(members);
        PyErr_SetString(PyExc_TypeError, "place: next is a list of one int, updated as families are made");
        return NULL;
    }
    PyObject *next = Py_NewRef(PyList_GET_ITEM(box, 0));
    char *buffer = PyMem_Malloc(3 * (size_t)n + 1);
    Py_ssize_t used = 0;
    PyObject *out = NULL;
    if (buffer == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int ncodes;
        if (place_one(&st, PyTuple_GET_ITEM(members, i), PyTuple_GET_ITEM(lists, 0),
                      PyTuple_GET_ITEM(lists, 1), PyTuple_GET_ITEM(lists, 2), PyTuple_GET_ITEM(lists, 3), box, &next,
                      buffer + used, &ncodes) < 0) goto done;
        used += ncodes;
    }
    PyObject *codes = PyUnicode_FromStringAndSize(buffer, used);
    if (codes != NULL) {
        out = codes;
    }
done:
    PyMem_Free(buffer);
    Py_DECREF(next);
    Py_DECREF(members);
    return out;
}

/* PrintIndex.forget_all. */
static PyObject *forget_prints(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    State st = {0};
    if (nargs != 3 || !PyDict_CheckExact(args[0]) || !PySet_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "forget_prints(queues, matched, prints)");
        return NULL;
    }
    st.queues = args[0];
    st.matched = args[1];
    PyObject *prints = PySequence_Tuple(args[2]);
    if (prints == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(prints);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(prints, i);
        PyObject *fingerprint = PyTuple_GET_ITEM(pair, 0), *entry = PyTuple_GET_ITEM(pair, 1);
        PyObject *seq = PyTuple_GET_ITEM(entry, 4);
        int was = PySet_GET_SIZE(st.matched) ? PySet_Contains(st.matched, seq) : 0;
        if (was > 0) was = PySet_Discard(st.matched, seq) < 0 ? -1 : 1;
        if (was == 0) {
            PyObject *held = PyDict_GetItemWithError(st.queues, fingerprint);
            if (held == entry) was = PyDict_DelItem(st.queues, fingerprint);
            else was = held == NULL && PyErr_Occurred() ? -1 : drop(&st, fingerprint, entry);
        }
        if (was < 0) {
            Py_DECREF(prints);
            return NULL;
        }
    }
    Py_DECREF(prints);
    Py_RETURN_NONE;
}

/* --- the glue: a request's spans -> links and members, and the answers back (correlate.py) ------ */

static PyObject *member_type, *mapped_type, *a_response_id, *cache_hit;  /* setup() */
static PyObject *s_trace_id, *s_span_id, *s_parent_span_id, *s_attrs, *s_start_ns, *s_record, *k_usage, *k_source_flags, *k_source_dialect, *k_request_id, *k_prompt, *k_completion,
    *k_details, *k_cached, *k_write, *k_read_input, *k_creation_input, *k_input, *k_output, *k_creation, *zero;

/* "<a>:<b>", as the f-string makes it. */
static PyObject *joined(PyObject *a, PyObject *b) {
    if (!PyUnicode_CheckExact(a) || !PyUnicode_CheckExact(b)) return PyUnicode_FromFormat("%S:%S", a, b);
    if (PyUnicode_IS_ASCII(a) && PyUnicode_IS_ASCII(b)) {
        Py_ssize_t la = PyUnicode_GET_LENGTH(a), lb = PyUnicode_GET_LENGTH(b);
        PyObject *out = PyUnicode_New(la + 1 + lb, 127);
        if (out == NULL) return NULL;
        Py_UCS1 *data = PyUnicode_1BYTE_DATA(out);
        memcpy(data, PyUnicode_1BYTE_DATA(a), (size_t)la);
        data[la] = ':';
        memcpy(data + la + 1, PyUnicode_1BYTE_DATA(b), (size_t)lb);
        return out;
    }
    return PyUnicode_FromFormat("%U:%U", a, b);
}

/* mapping.get(key, fallback) as a new reference (NULL: an error). */
static PyObject *get(PyObject *mapping, PyObject *key, PyObject *fallback) {
    if (PyDict_CheckExact(mapping)) {
        PyObject *value = PyDict_GetItemWithError(mapping, key);
        if (value == NULL && PyErr_Occurred()) return NULL;
        return Py_NewRef(value ? value : fallback);
    }
    return PyObject_CallMethod(mapping, "get", "OO", key, fallback);
}

/* value or fallback: Python's ``value or 0`` (a new reference). */
static PyObject *or_else(PyObject *value, PyObject *fallback) {
    int truth = PyObject_IsTrue(value);
    if (truth < 0) {
        Py_DECREF(value);
        return NULL;
    }
    if (truth) return value;
    Py_DECREF(value);
    return Py_NewRef(fallback);
}

/* correlate._usage_numbers: (input total, cache read, cache write, output) of a usage block. */
static PyObject *usage_numbers(PyObject *usage) {
    PyObject *n[4] = {NULL, NULL, NULL, NULL}, *out = NULL, *details = NULL, *sum = NULL;
    int openai = PySequence_Contains(usage, k_prompt);
    if (openai == 0) openai = PySequence_Contains(usage, k_completion);
    if (openai == 0) openai = PySequence_Contains(usage, k_details);
    if (openai < 0) return NULL;
    if (openai) {
        PyObject *empty = PyDict_New();
        details = empty ? get(usage, k_details, Py_None) : NULL;
        if (details) details = or_else(details, empty);
        Py_XDECREF(empty);
        if (details == NULL) goto done;
        if (!(n[0] = get(usage, k_prompt, Py_None)) || !(n[0] = or_else(n[0], zero))) goto done;
        if (!(n[1] = get(details, k_cached, Py_None)) || !(n[1] = or_else(n[1], zero))) goto done;
        if (!(n[2] = get(details, k_write, Py_None)) || !(n[2] = or_else(n[2], zero))) goto done;
    } else {
        if (!(n[1] = get(usage, k_read_input, Py_None)) || !(n[1] = or_else(n[1], zero))) goto done;
        if (!(n[2] = get(usage, k_creation_input, Py_None)) || !(n[2] = or_else(n[2], zero))) goto done;
        PyObject *input = get(usage, k_input, zero);
        if (input == NULL) goto done;
        sum = PyNumber_Add(input, n[1]);
        Py_DECREF(input);
        if (sum == NULL || !(n[0] = PyNumber_Add(sum, n[2]))) goto done;
    }
    if (!(n[3] = get(usage, openai ? k_completion : k_output, Py_None)) || !(n[3] = or_else(n[3], zero))) goto done;
    out = atoms(PyTuple_Pack(4, n[0], n[1], n[2], n[3]));
done:
    for (int i = 0; i < 4; i++) Py_XDECREF(n[i]);
    Py_XDECREF(details);
    Py_XDECREF(sum);
    return out;
}

/* correlate._member: the correlator's view of a mapped span with usage. */
static PyObject *make_member(PyObject *view, PyObject *record, PyObject *usage, PyObject *key,
                             PyObject *parent_key, Py_ssize_t index) {
    PyObject *flags = NULL, *attrs = NULL, *response_id = NULL, *dialect = NULL, *numbers = NULL, *model = NULL,
             *end = NULL, *request_id = NULL, *rank = NULL, *position = NULL, *out = NULL;
    if (!(flags = get(record, k_source_flags, Py_None)) || !(attrs = PyObject_GetAttr(view, s_attrs))
        || !(response_id = get(attrs, a_response_id, Py_None))) goto done;
    if (!PyUnicode_Check(response_id) || PyUnicode_GET_LENGTH(response_id) == 0) {
        Py_SETREF(response_id, Py_NewRef(Py_None));
    }
    int complete = PyObject_IsTrue(flags);
    if (complete < 0) goto done;
    if (complete) {  /* flags: no flag but the cache hit */
        Py_ssize_t size = PyObject_Size(flags), count = 0;
        if (size < 0) goto done;
        if (PyList_CheckExact(flags)) {  /* the mapping's: counted here, on a snapshot */
            PyObject *seen = PyList_AsTuple(flags);
            if (seen == NULL) goto done;
            size = PyTuple_GET_SIZE(seen);
            for (Py_ssize_t i = 0; i < size && count == i; i++) {
                int hit = PyObject_RichCompareBool(PyTuple_GET_ITEM(seen, i), cache_hit, Py_EQ);
                if (hit < 0) {
                    Py_DECREF(seen);
                    goto done;
                }
                count += hit;
            }
            Py_DECREF(seen);
        } else {
            PyObject *hits = PyObject_CallMethodOneArg(flags, s_count, cache_hit);
            if (hits == NULL) goto done;
            count = PyLong_AsSsize_t(hits);
            Py_DECREF(hits);
            if (count == -1 && PyErr_Occurred()) goto done;
        }
        complete = count == size;
    } else {
        complete = 1;
    }
    if (!(dialect = get(record, k_source_dialect, s_empty)) || !(numbers = usage_numbers(usage))
        || !(model = get(record, s_model, s_empty)) || !(end = PyObject_GetAttr(view, s_end_ns))
        || !(end = or_else(end, Py_None))) goto done;
    if (end == Py_None) {
        Py_DECREF(end);
        if (!(end = PyObject_GetAttr(view, s_start_ns))) goto done;
    }
    int split = PySequence_Contains(usage, k_creation);
    if (split < 0 || !(request_id = get(record, k_request_id, Py_None))) goto done;
    rank = atoms(PyTuple_Pack(3, complete ? one : zero, split ? one : zero, response_id != Py_None ? one : zero));
    if (rank == NULL || !(position = PyLong_FromSsize_t(index))) goto done;
    PyObject *values[M_SIZE] = {key, parent_key, dialect, numbers, model, end, response_id, request_id, rank,
                                position, minus_one, Py_True};  /* family and keep: their defaults */
    if (member_class == NULL) {  /* not a slots class: its __init__ */
        out = PyObject_Vectorcall(member_type, values, 10, NULL);
        goto done;
    }
    out = member_class->tp_alloc(member_class, 0);
    if (out == NULL) goto done;
    for (int i = 0; i < M_SIZE; i++) SLOT(out, member_offsets[i]) = Py_NewRef(values[i]);
done:
    Py_XDECREF(flags);
    Py_XDECREF(attrs);
    Py_XDECREF(response_id);
    Py_XDECREF(dialect);
    Py_XDECREF(numbers);
    Py_XDECREF(model);
    Py_XDECREF(end);
    Py_XDECREF(request_id);
    Py_XDECREF(rank);
    Py_XDECREF(position);
    return out;
}

/* gather(views, outcomes, owns) -> (links, members): correlate's loop over a request's spans. */
static PyObject *gather(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) || !PyList_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "gather(views: list, outcomes: list, owns: list)");
        return NULL;
    }
    if (member_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_correlator.setup() was not called");
        return NULL;
    }
    /* snapshots: the loop calls Python code (attribute reads, truth values), which may change the lists */
    PyObject *views = PyList_AsTuple(args[0]), *outcomes = PyList_AsTuple(args[1]), *owns = PyList_AsTuple(args[2]);
    PyObject *links = PyList_New(0), *members = PyList_New(0), *out = NULL;
    if (views == NULL || outcomes == NULL || owns == NULL || links == NULL || members == NULL) goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(views);
    if (PyTuple_GET_SIZE(outcomes) != n || PyTuple_GET_SIZE(owns) != n) {
        PyErr_SetString(PyExc_ValueError, "gather: one outcome and one owns flag per view");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *view = PyTuple_GET_ITEM(views, i);
        PyObject *trace = PyObject_GetAttr(view, s_trace_id), *span = NULL, *parent = NULL, *key = NULL,
                 *parent_key = NULL, *link = NULL;
        int ok = 0;
        if (trace == NULL || !(span = PyObject_GetAttr(view, s_span_id))
            || !(parent = PyObject_GetAttr(view, s_parent_span_id))) goto next;  /* read as correlate does */
        int both = PyObject_IsTrue(trace);
        if (both > 0) both = PyObject_IsTrue(span);
        if (both <= 0) {
            ok = both == 0;
            goto next;
        }
        if (!(key = joined(trace, span))) goto next;
        int has_parent = PyObject_IsTrue(parent);
        if (has_parent < 0) goto next;
        parent_key = has_parent ? joined(trace, parent) : Py_NewRef(s_empty);
        if (parent_key == NULL || !(link = atoms(PyTuple_Pack(2, key, parent_key))) || PyList_Append(links, link) < 0) goto next;
        PyObject *outcome = PyTuple_GET_ITEM(outcomes, i);
        if ((PyObject *)Py_TYPE(outcome) == mapped_type) {
            PyObject *record = PyObject_GetAttr(outcome, s_record);
            PyObject *usage = record ? get(record, k_usage, Py_None) : NULL;
            int take = usage ? PyObject_IsTrue(usage) : -1;
            if (take > 0) {
                int own = PyObject_IsTrue(PyTuple_GET_ITEM(owns, i));
                take = own < 0 ? -1 : !own;
            }
            if (take > 0) {
                PyObject *member = make_member(view, record, usage, key, parent_key, i);
                take = member == NULL || PyList_Append(members, member) < 0 ? -1 : 1;
                Py_XDECREF(member);
            }
            Py_XDECREF(record);
            Py_XDECREF(usage);
            if (take < 0) goto next;
        }
        ok = 1;
    next:
        Py_XDECREF(trace);
        Py_XDECREF(span);
        Py_XDECREF(parent);
        Py_XDECREF(key);
        Py_XDECREF(parent_key);
        Py_XDECREF(link);
        if (!ok) goto done;
    }
    out = PyTuple_Pack(2, links, members);
done:
    Py_XDECREF(views);
    Py_XDECREF(outcomes);
    Py_XDECREF(owns);
    Py_XDECREF(links);
    Py_XDECREF(members);
    return out;
}

/* link(links, members, known, pending, parents, pendings): resolve's loops over a request's links -
 * a parent link remembered for each new span with a parent, and a non-model span passing a waiting
 * descendant on to its own parent. */
static PyObject *link_into(PyObject *links, PyObject *members_arg, PyObject *known, PyObject *pending,
                           PyObject *parents, PyObject *pendings) {
    Py_ssize_t n = PyTuple_GET_SIZE(links);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(links, i);
        PyObject *key = PyTuple_GET_ITEM(pair, 0), *parent = PyTuple_GET_ITEM(pair, 1);
        int has_parent = present(parent);
        if (has_parent < 0) return NULL;
        if (!has_parent) continue;
        int seen = PyDict_Contains(known, key);
        if (seen < 0) return NULL;
        if (!seen && (PyDict_SetItem(known, key, parent) < 0 || PyList_Append(parents, key) < 0)) return NULL;
    }
    if (PyDict_GET_SIZE(pending) == 0) Py_RETURN_TRUE;
    PyObject *model_keys = PySet_New(NULL);
    if (model_keys == NULL) return NULL;
    PyObject *members = PySequence_Tuple(members_arg);
    if (members == NULL) goto fail;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members); i++) {
        PyObject *key = mget(PyTuple_GET_ITEM(members, i), M_KEY);
        int rc = key == NULL ? -1 : PySet_Add(model_keys, key);
        Py_XDECREF(key);
        if (rc < 0) {
            Py_DECREF(members);
            goto fail;
        }
    }
    Py_DECREF(members);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(links, i);
        PyObject *key = PyTuple_GET_ITEM(pair, 0), *parent = PyTuple_GET_ITEM(pair, 1);
        int model = PySet_Contains(model_keys, key);
        if (model < 0) goto fail;
        if (model) continue;
        PyObject *waiting = PyDict_GetItemWithError(pending, key);
        if (waiting == NULL) {
            if (PyErr_Occurred()) goto fail;
            continue;
        }
        Py_INCREF(waiting);
        int rc = PyDict_DelItem(pending, key);
        int has_parent = rc < 0 ? -1 : present(parent);
        if (has_parent > 0 && (PyDict_SetItem(pending, parent, waiting) < 0 || PyList_Append(pendings, parent) < 0)) {
            has_parent = -1;
        }
        Py_DECREF(waiting);
        if (has_parent < 0) goto fail;
    }
    Py_DECREF(model_keys);
    Py_RETURN_TRUE;
fail:
    Py_DECREF(model_keys);
    return NULL;
}


/* link(links, members, known, pending, parents, pendings) -> True, or False (nothing done) when a link is
 * not a (key, parent key) tuple: then the Python loop (SpanCorrelator._link) reads it as it does. */
static PyObject *link_spans(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyList_CheckExact(args[0]) || !PyDict_CheckExact(args[2]) || !PyDict_CheckExact(args[3])
        || !PyList_CheckExact(args[4]) || !PyList_CheckExact(args[5])) {
        PyErr_SetString(PyExc_TypeError, "link(links: list, members, known: dict, pending: dict, parents: list, "
                                         "pendings: list)");
        return NULL;
    }
    PyObject *links = PyList_AsTuple(args[0]);  /* a snapshot: the loop calls Python code (hash, eq) */
    if (links == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(links); i++) {
        PyObject *pair = PyTuple_GET_ITEM(links, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
            Py_DECREF(links);
            Py_RETURN_FALSE;
        }
    }
    PyObject *out = link_into(links, args[1], args[2], args[3], args[4], args[5]);
    Py_DECREF(links);
    return out;
}

/* apply(members, outcomes, same_call): a member dropped becomes same_call, a kept one gets its
 * family's request id. */
static PyObject *apply(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "apply(members, outcomes: list, same_call)");
        return NULL;
    }
    PyObject *members = PySequence_Tuple(args[0]);
    if (members == NULL) return NULL;
    PyObject *outcomes = args[1], *same_call = args[2];
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members); i++) {
        PyObject *member = PyTuple_GET_ITEM(members, i);
        PyObject *keep = mget(member, M_KEEP), *index = NULL, *request_id = NULL, *record = NULL;
        int rc = -1;
        if (keep == NULL || !(index = mget(member, M_INDEX))) goto next;
        Py_ssize_t at = PyLong_AsSsize_t(index);
        if (at == -1 && PyErr_Occurred()) goto next;
        int kept = PyObject_IsTrue(keep);
        if (kept < 0) goto next;
        if (!kept) {
            rc = PyList_SetItem(outcomes, at, Py_NewRef(same_call));
            goto next;
        }
        if (!(request_id = mget(member, M_REQUEST_ID))) goto next;
        if (request_id == Py_None) {
            rc = 0;
            goto next;
        }
        PyObject *outcome = PyList_GetItem(outcomes, at);
        if (outcome == NULL || !(record = PyObject_GetAttr(outcome, s_record))) goto next;
        rc = PyObject_SetItem(record, k_request_id, request_id);
    next:
        Py_XDECREF(keep);
        Py_XDECREF(index);
        Py_XDECREF(request_id);
        Py_XDECREF(record);
        if (rc < 0) {
            Py_DECREF(members);
            return NULL;
        }
    }
    Py_DECREF(members);
    Py_RETURN_NONE;
}

/* choose(families, members): SpanCorrelator._choose - per family, the best member of this request is
 * kept unless the family was emitted; every member gets the family's request id. */
static PyObject *choose(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "choose(families: dict, members)");
        return NULL;
    }
    PyObject *families = args[0], *result = NULL, *family = NULL;
    PyObject *members = PySequence_Tuple(args[1]);
    PyObject *first = PyDict_New(), *more = PyDict_New();  /* family -> its first member; -> all, when several */
    if (members == NULL || first == NULL || more == NULL) goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members); i++) {
        PyObject *member = PyTuple_GET_ITEM(members, i);
        Py_XSETREF(family, mget(member, M_FAMILY));
        if (family == NULL) goto done;
        PyObject *earlier = PyDict_GetItemWithError(first, family);
        if (earlier == NULL) {
            if (PyErr_Occurred() || PyDict_SetItem(first, family, member) < 0) goto done;
            continue;
        }
        PyObject *group = PyDict_GetItemWithError(more, family);
        if (group == NULL) {
            if (PyErr_Occurred()) goto done;
            group = PyList_New(0);
            int rc = group == NULL || PyList_Append(group, earlier) < 0 || PyDict_SetItem(more, family, group) < 0;
            Py_XDECREF(group);
            if (rc) goto done;
        }
        if (PyList_Append(group, member) < 0) goto done;
    }
    Py_ssize_t pos = 0;
    PyObject *id, *member;
    while (PyDict_Next(first, &pos, &id, &member)) {
        PyObject *known = PyDict_GetItemWithError(families, id);  /* (request id, usage, emitted) */
        if (known == NULL) {
            if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, id);
            goto done;
        }
        Py_INCREF(known);
        int emitted = PyObject_IsTrue(PyTuple_GET_ITEM(known, 2)), rc = emitted < 0 ? -1 : 0;
        PyObject *group = rc ? NULL : PyDict_GetItemWithError(more, id);
        if (group == NULL && PyErr_Occurred()) rc = -1;
        if (rc == 0 && group == NULL) {  /* the common case: one member */
            if (emitted) {
                rc = mset(member, M_REQUEST_ID, PyTuple_GET_ITEM(known, 0));
            } else {
                PyObject *own = mget(member, M_REQUEST_ID);
                PyObject *info = own ? atoms(PyTuple_Pack(3, own, PyTuple_GET_ITEM(known, 1), Py_True)) : NULL;
                rc = info == NULL ? -1 : PyDict_SetItem(families, id, info);
                Py_XDECREF(own);
                Py_XDECREF(info);
            }
        } else if (rc == 0 && emitted) {  /* counted as duplicates by the pipeline's dedupe */
            for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(group); j++) {
                rc = mset(PyList_GET_ITEM(group, j), M_REQUEST_ID, PyTuple_GET_ITEM(known, 0));
            }
        } else if (rc == 0) {
            /* the best by rank (the first of equals), and the request id of the first with a response id
             * unless the best has one */
            PyObject *best = PyList_GET_ITEM(group, 0), *with_id = NULL, *best_rank = mget(best, M_RANK);
            rc = best_rank == NULL ? -1 : 0;
            for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(group); j++) {
                PyObject *candidate = PyList_GET_ITEM(group, j);
                PyObject *rank = j ? mget(candidate, M_RANK) : NULL, *response_id = mget(candidate, M_RESPONSE_ID);
                int higher = j == 0 ? 0 : rank == NULL ? -1 : PyObject_RichCompareBool(rank, best_rank, Py_GT);
                if (response_id == NULL || higher < 0) rc = -1;
                else if (higher) {
                    best = candidate;
                    Py_SETREF(best_rank, Py_NewRef(rank));
                }
                if (rc == 0 && with_id == NULL && response_id != Py_None) with_id = candidate;
                Py_XDECREF(rank);
                Py_XDECREF(response_id);
            }
            Py_XDECREF(best_rank);
            PyObject *best_id = rc ? NULL : mget(best, M_RESPONSE_ID);
            if (best_id == NULL) rc = -1;
            PyObject *source = best_id == Py_None && with_id != NULL ? with_id : best;
            Py_XDECREF(best_id);
            PyObject *request_id = rc ? NULL : mget(source, M_REQUEST_ID);
            PyObject *info = request_id ? atoms(PyTuple_Pack(3, request_id, PyTuple_GET_ITEM(known, 1), Py_True)) : NULL;
            if (info == NULL || PyDict_SetItem(families, id, info) < 0) rc = -1;
            for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(group); j++) {
                PyObject *each = PyList_GET_ITEM(group, j);
                rc = mset(each, M_KEEP, each == best ? Py_True : Py_False);
                if (rc == 0) rc = mset(each, M_REQUEST_ID, request_id);
            }
            Py_XDECREF(request_id);
            Py_XDECREF(info);
        }
        Py_DECREF(known);
        if (rc < 0) goto done;
    }
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(family);
    Py_XDECREF(first);
    Py_XDECREF(more);
    Py_XDECREF(members);
    return result;
}

/* setup(member_type, mapped_type, response_id_key, cache_hit_flag): the glue's types and names, once. */
static PyObject *setup(PyObject *module, PyObject *args) {
    PyObject *member, *mapped, *key, *hit;
    if (!PyArg_ParseTuple(args, "OOUU", &member, &mapped, &key, &hit)) return NULL;
    Py_ssize_t offsets[M_SIZE];
    int slots = PyType_Check(member) && ((PyTypeObject *)member)->tp_dictoffset == 0;
    for (int i = 0; slots && i < M_SIZE; i++) {  /* Member's own slots, each an object */
        PyObject *descr = PyObject_GetAttrString(member, MEMBER_FIELDS[i]);
        if (descr == NULL) return NULL;
        slots = Py_IS_TYPE(descr, &PyMemberDescr_Type)
                && ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX
                && PyType_IsSubtype((PyTypeObject *)member, PyDescr_TYPE(descr));
        if (slots) offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
    }
    if (slots) memcpy(member_offsets, offsets, sizeof offsets);
    Py_XSETREF(member_class, slots ? (PyTypeObject *)Py_NewRef(member) : NULL);
    Py_XSETREF(member_type, Py_NewRef(member));
    Py_XSETREF(mapped_type, Py_NewRef(mapped));
    Py_XSETREF(a_response_id, Py_NewRef(key));
    Py_XSETREF(cache_hit, Py_NewRef(hit));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"place", (PyCFunction)(void (*)(void))place, METH_FASTCALL,
     "place(state, members, arrival_lists, [next]) -> codes: SpanCorrelator._place of each member"},
    {"forget_prints", (PyCFunction)(void (*)(void))forget_prints, METH_FASTCALL,
     "forget_prints(queues, matched, prints): PrintIndex.forget_all"},
    {"gather", (PyCFunction)(void (*)(void))gather, METH_FASTCALL,
     "gather(views, outcomes, owns) -> (links, members): correlate's members of a request"},
    {"link", (PyCFunction)(void (*)(void))link_spans, METH_FASTCALL,
     "link(links, members, known, pending, parents, pendings): resolve's loops over a request's links"},
    {"apply", (PyCFunction)(void (*)(void))apply, METH_FASTCALL,
     "apply(members, outcomes, same_call): the correlator's answers written back"},
    {"choose", (PyCFunction)(void (*)(void))choose, METH_FASTCALL,
     "choose(families, members): SpanCorrelator._choose"},
    {"setup", setup, METH_VARARGS, "setup(member_type, mapped_type, response_id_key, cache_hit_flag)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_correlator", NULL, -1, methods};

PyMODINIT_FUNC PyInit__correlator(void) {
    PyObject *collections = PyImport_ImportModule("collections");
    if (collections == NULL) return NULL;
    deque_type = PyObject_GetAttrString(collections, "deque");
    Py_DECREF(collections);
    if (deque_type == NULL) return NULL;
    one = PyLong_FromLong(1);
    zero = PyLong_FromLong(0);
    minus_one = PyLong_FromLong(-1);
    lowered_names = PyDict_New();
    if (lowered_names == NULL) return NULL;
    if (one == NULL || zero == NULL || minus_one == NULL) return NULL;
    for (int i = 0; i < M_SIZE; i++) {
        member_names[i] = PyUnicode_InternFromString(MEMBER_FIELDS[i]);
        if (member_names[i] == NULL) return NULL;
    }
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_model, "model"}, {&s_end_ns, "end_ns"}, {&s_count, "count"}, {&s_lower, "lower"}, {&s_popleft, "popleft"},
        {&s_remove, "remove"}, {&s_append, "append"}, {&s_empty, ""},
        {&s_trace_id, "trace_id"}, {&s_span_id, "span_id"}, {&s_parent_span_id, "parent_span_id"},
        {&s_attrs, "attrs"}, {&s_start_ns, "start_ns"}, {&s_record, "record"},
        {&k_usage, "usage"}, {&k_source_flags, "source_flags"},
        {&k_source_dialect, "source_dialect"}, {&k_request_id, "request_id"}, {&k_prompt, "prompt_tokens"},
        {&k_completion, "completion_tokens"}, {&k_details, "prompt_tokens_details"}, {&k_cached, "cached_tokens"},
        {&k_write, "cache_write_tokens"}, {&k_read_input, "cache_read_input_tokens"},
        {&k_creation_input, "cache_creation_input_tokens"}, {&k_input, "input_tokens"},
        {&k_output, "output_tokens"}, {&k_creation, "cache_creation"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *names[i].slot = PyUnicode_InternFromString(names[i].text);
        if (*names[i].slot == NULL) return NULL;
    }
    return PyModule_Create(&module_def);
}
