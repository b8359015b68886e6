/* The protobuf span views, read off the wire in C (the fast path of decode.views_of_protobuf).
 *
 * validate(body): ValueError unless upb would parse ``body`` with the read schema
 *   (pb_schema), which configure() gives from its descriptors: every tag, length and
 *   varint as upb reads them, UTF-8 in the schema's string fields, groups matched,
 *   at most upb's 100 levels of nesting. tests/sources/otlp/test_views_c.py holds it
 *   to upb's answer on written, damaged and captured bodies.
 * views(body, decisions, wanted, span_view, unsupported) -> list of span_view, of a
 *   body validate() accepted (it still checks every length against the buffer).
 *
 * The views are what spans_from_protobuf reads from upb's message, value for value.
 * Protobuf's merge rules are kept: a singular field repeated on the wire keeps its
 * last value, a singular message repeated is merged (its attributes added), a map
 * entry repeated keeps its last value, a map entry with a field of its own that is
 * unknown stays out of the map (upb keeps it among the unknown fields), and a oneof
 * keeps the member set last. A field whose wire type is not the schema's is unknown.
 *
 * Only a wanted name's value becomes a Python object: a prompt's text is checked
 * for UTF-8 and skipped (decisions[name] is looked up, else wanted(name) decides).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Buf;

typedef struct {
    PyObject *decisions;  /* dict: name -> bool */
    PyObject *wanted;     /* callable: name -> bool */
    PyObject *unsupported; /* class: Unsupported(kind) */
    uint64_t generation;  /* generation_now when the call began: its decisions dict's number */
} Ctx;

/* The schema, given once by configure() from the read schema's descriptors (decode._schema_table).
 * Per message: its fields by number, each with the wire type its type has and what it holds. */
#define MAX_MESSAGES 32
#define MAX_FIELD 32  /* field numbers the schema uses are below this; any other is unknown */
enum { F_UNKNOWN = 0, F_MESSAGE, F_STRING, F_OTHER };
typedef struct {
    uint8_t kind;
    uint8_t wire;
    uint8_t child;  /* F_MESSAGE: the message's index */
} FieldSpec;
static FieldSpec schema[MAX_MESSAGES][MAX_FIELD];
static int schema_ready;
#define MAX_DEPTH 100  /* upb's: a submessage or group is one level; the request is level 0 */
/* AnyValue's oneof members other than string/bool/int/double (1-4): by field number, the wire type
 * and the member's name, read as Unsupported(name) (an array, a kvlist, bytes, a string index...). */
static PyObject *other_names[MAX_FIELD];
static uint8_t other_wires[MAX_FIELD];

/* Attribute names as str, by their UTF-8 bytes: names repeat by the thousand, so each is decoded
 * and hashed once. Open addressing, never resized; full, a name is decoded anew each time.
 * Names only (clients choose them, as the Python decisions cache they feed); never a value. */
#define NAMES 4096
#define NAME_MAX_KEPT 256  /* longer names (never a semantic convention's) are decoded each time, not kept */
typedef struct {
    uint64_t hash;
    PyObject *name;  /* a str whose UTF-8 is the key, or NULL */
    uint64_t generation;  /* the decisions dict ``keep`` was read from (0: none yet) */
    int keep;
} NameSlot;
/* The decisions dict of the latest call, held so that its generation number names it alone. */
static PyObject *decisions_now;
static uint64_t generation_now = 1;
static NameSlot names[NAMES];
static Py_ssize_t names_used;

static PyObject *name_of(const uint8_t *p, Py_ssize_t n, NameSlot **found) {
    *found = NULL;
    if (n > NAME_MAX_KEPT) return PyUnicode_DecodeUTF8((const char *)p, n, "strict");  /* never kept: not hashed */
    uint64_t hash = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) hash = (hash ^ p[i]) * 1099511628211ULL;
    for (Py_ssize_t probe = 0; probe < 8; probe++) {
        NameSlot *slot = &names[(hash + (uint64_t)probe) & (NAMES - 1)];
        if (slot->name == NULL) {
            PyObject *name = PyUnicode_DecodeUTF8((const char *)p, n, "strict");
            if (name == NULL || names_used >= NAMES / 2) return name;
            PyUnicode_InternInPlace(&name);
            Py_INCREF(name);
            slot->hash = hash;
            slot->name = name;
            slot->generation = 0;
            names_used++;
            *found = slot;
            return name;
        }
        if (slot->hash == hash) {
            Py_ssize_t size;
            const char *utf8 = PyUnicode_AsUTF8AndSize(slot->name, &size);
            if (utf8 != NULL && size == n && memcmp(utf8, p, (size_t)n) == 0) {
                Py_INCREF(slot->name);
                *found = slot;
                return slot->name;
            }
            PyErr_Clear();
        }
    }
    return PyUnicode_DecodeUTF8((const char *)p, n, "strict");
}

static int fail(const char *what) {
    PyErr_Format(PyExc_ValueError, "protobuf walk: %s", what);
    return -1;
}

static int read_varint_slow(Buf *b, uint64_t *out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (b->p >= b->end) return fail("truncated varint");
        uint8_t byte = *b->p++;
        if (shift < 64) value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 0;
        }
    }
    return fail("varint too long");
}

static inline int read_varint(Buf *b, uint64_t *out) {
    if (b->p < b->end && *b->p < 0x80) {  /* the common case: one byte */
        *out = *b->p++;
        return 0;
    }
    return read_varint_slow(b, out);
}

/* The next field's tag; 0 at the end of the buffer. */
static inline int read_tag(Buf *b, uint32_t *field, uint32_t *wire) {
    uint64_t tag;
    if (b->p >= b->end) {
        *field = 0;
        return 0;
    }
    if (read_varint(b, &tag) < 0) return -1;
    *field = (uint32_t)(tag >> 3);
    *wire = (uint32_t)(tag & 7);
    if (*field == 0) return fail("field number 0");
    return 0;
}

static inline int read_len(Buf *b, Buf *inner) {
    uint64_t size;
    const uint8_t *start = b->p;
    if (read_varint(b, &size) < 0) return -1;
    if (b->p - start > 5) return fail("length longer than 5 bytes");
    if (size > (uint64_t)(b->end - b->p)) return fail("length past the end");
    inner->p = b->p;
    inner->end = b->p + size;
    b->p += size;
    return 0;
}

/* A group is walked by validate's check_group, whichever pass meets it (views() too: the same bytes). */
static int check_group(Buf *b, uint32_t field, int depth);

static int skip_field(Buf *b, uint32_t field, uint32_t wire, int depth) {
    uint64_t ignored;
    Buf inner;
    switch (wire) {
    case 0:
        return read_varint(b, &ignored);
    case 1:
        if (b->end - b->p < 8) return fail("truncated fixed64");
        b->p += 8;
        return 0;
    case 2:
        return read_len(b, &inner);
    case 3:
        return check_group(b, field, depth + 1);
    case 5:
        if (b->end - b->p < 4) return fail("truncated fixed32");
        b->p += 4;
        return 0;
    default:
        return fail("bad wire type");
    }
}

static uint64_t read_fixed64(Buf *b) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; i--) value = (value << 8) | b->p[i];
    b->p += 8;
    return value;
}

static PyObject *hex_of(Buf *id) {
    static const char digits[] = "0123456789abcdef";
    Py_ssize_t n = id->end - id->p;
    PyObject *text = PyUnicode_New(n * 2, 127);
    if (text == NULL) return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(text);
    for (Py_ssize_t i = 0; i < n; i++) {
        out[2 * i] = (Py_UCS1)digits[id->p[i] >> 4];
        out[2 * i + 1] = (Py_UCS1)digits[id->p[i] & 15];
    }
    return text;
}

/* An AnyValue as decode._pb_value gives it: str, int, bool, float, Unsupported(kind) or None.
 * ``value`` holds each occurrence of the entry's value field (merged: the member set last wins). */
enum { V_NONE, V_STRING, V_BOOL, V_INT, V_DOUBLE, V_OTHER };

typedef struct {
    int kind;
    Buf text;
    uint64_t number;
    uint32_t other;  /* V_OTHER: the member's field number */
} AnyValue;

static int merge_any_value(Buf b, AnyValue *value) {
    uint32_t field, wire;
    for (;;) {
        if (read_tag(&b, &field, &wire) < 0) return -1;
        if (field == 0) return 0;
        if (field == 1 && wire == 2) {
            if (read_len(&b, &value->text) < 0) return -1;
            value->kind = V_STRING;
        } else if ((field == 2 || field == 3) && wire == 0) {
            if (read_varint(&b, &value->number) < 0) return -1;
            value->kind = field == 2 ? V_BOOL : V_INT;
        } else if (field == 4 && wire == 1) {
            if (b.end - b.p < 8) return fail("truncated double");
            value->number = read_fixed64(&b);
            value->kind = V_DOUBLE;
        } else if (field < MAX_FIELD && other_names[field] != NULL && wire == other_wires[field]) {
            if (skip_field(&b, field, wire, 0) < 0) return -1;
            value->kind = V_OTHER;
            value->other = field;
        } else if (skip_field(&b, field, wire, 0) < 0) {
            return -1;
        }
    }
}

static PyObject *any_value_object(const AnyValue *value, const Ctx *ctx) {
    double real;
    switch (value->kind) {
    case V_STRING:
        return PyUnicode_DecodeUTF8((const char *)value->text.p, value->text.end - value->text.p, "strict");
    case V_BOOL:
        return PyBool_FromLong(value->number != 0);
    case V_INT:
        return PyLong_FromLongLong((long long)value->number);
    case V_DOUBLE:
        memcpy(&real, &value->number, sizeof real);
        return PyFloat_FromDouble(real);
    case V_OTHER:
        return PyObject_CallOneArg(ctx->unsupported, other_names[value->other]);
    default:
        Py_RETURN_NONE;
    }
}

/* One map entry (KeyValue on the wire): when its name is wanted, out[name] = its value.
 * Two passes: the name (the last given; "" when none), then, only if it is wanted, the value's occurrences. */
static int add_entry(Buf b, PyObject *out, const Ctx *ctx) {
    Buf walk = b, key = {b.p, b.p};
    uint32_t field, wire;
    for (;;) {
        if (read_tag(&walk, &field, &wire) < 0) return -1;
        if (field == 0) break;
        if (field == 1 && wire == 2) {
            if (read_len(&walk, &key) < 0) return -1;
        } else if (field == 2 && wire == 2) {
            Buf inner;
            if (read_len(&walk, &inner) < 0) return -1;
        } else {
            /* upb keeps an entry with an unknown field among the unknown fields of the span, not in the map */
            return 0;
        }
    }
    NameSlot *slot;
    PyObject *name = name_of(key.p, key.end - key.p, &slot);
    if (name == NULL) return -1;
    PyObject *decision = NULL;
    int keep;
    if (slot != NULL && slot->generation == ctx->generation) {
        keep = slot->keep;
    } else if ((decision = PyDict_GetItemWithError(ctx->decisions, name)) != NULL) {  /* borrowed */
        keep = decision == Py_True ? 1 : decision == Py_False ? 0 : PyObject_IsTrue(decision);
        if (slot != NULL && keep >= 0) {  /* a decision once made is never changed (MappingOptions.wanted) */
            slot->generation = ctx->generation;
            slot->keep = keep;
        }
    } else if (PyErr_Occurred()) {
        keep = -1;
    } else {
        PyObject *answer = PyObject_CallOneArg(ctx->wanted, name);
        keep = answer == NULL ? -1 : PyObject_IsTrue(answer);
        Py_XDECREF(answer);
    }
    if (keep <= 0) {
        Py_DECREF(name);
        return keep;
    }
    AnyValue value = {V_NONE, {NULL, NULL}, 0, 0};
    for (;;) {
        if (read_tag(&b, &field, &wire) < 0) goto error;
        if (field == 0) break;
        if (field == 2 && wire == 2) {
            Buf inner;
            if (read_len(&b, &inner) < 0 || merge_any_value(inner, &value) < 0) goto error;
        } else if (read_len(&b, &key) < 0) {  /* the key again (the first pass checked every field) */
            goto error;
        }
    }
    PyObject *object = any_value_object(&value, ctx);
    int rc = object == NULL ? -1 : PyDict_SetItem(out, name, object);
    Py_DECREF(name);
    Py_XDECREF(object);
    return rc;
error:
    Py_DECREF(name);
    return -1;
}

/* Every attributes entry (field ``number``, LEN) of a message into ``out``. */
static int add_attributes(Buf b, uint32_t number, PyObject *out, const Ctx *ctx) {
    uint32_t field, wire;
    for (;;) {
        if (read_tag(&b, &field, &wire) < 0) return -1;
        if (field == 0) return 0;
        if (field == number && wire == 2) {
            Buf entry;
            if (read_len(&b, &entry) < 0 || add_entry(entry, out, ctx) < 0) return -1;
        } else if (skip_field(&b, field, wire, 0) < 0) {
            return -1;
        }
    }
}

/* The span view class's slot offsets: a view is made by filling its eight slots, as its dataclass
 * __init__ would (in field order), without running that __init__ in the interpreter. */
static const char *const VIEW_FIELDS[8] = {"attrs", "resource", "scope_name", "trace_id",
                                           "span_id", "start_ns", "end_ns", "parent_span_id"};
static PyTypeObject *view_type;
static Py_ssize_t view_offsets[8];

static int learn_view_type(PyObject *type) {
    if ((PyTypeObject *)type == view_type) return 0;
    if (!PyType_Check(type)) return fail("span_view is not a class");
    Py_ssize_t offsets[8];
    for (int i = 0; i < 8; i++) {
        PyObject *descr = PyObject_GetAttrString(type, VIEW_FIELDS[i]);
        if (descr == NULL) return -1;
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX &&
                 PyType_IsSubtype((PyTypeObject *)type, PyDescr_TYPE(descr));  /* its own layout's slot */
        if (ok) offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!ok) return fail("span_view's fields are not slots");
    }
    memcpy(view_offsets, offsets, sizeof offsets);
    Py_XDECREF(view_type);
    Py_INCREF(type);
    view_type = (PyTypeObject *)type;
    return 0;
}

/* A view holding ``values`` (new references, stolen; all non-NULL). */
static PyObject *new_view(PyObject **values) {
    PyObject *view = view_type->tp_alloc(view_type, 0);
    if (view == NULL) {
        for (int i = 0; i < 8; i++) Py_DECREF(values[i]);
        return NULL;
    }
    for (int i = 0; i < 8; i++) *(PyObject **)((char *)view + view_offsets[i]) = values[i];
    return view;
}

static int add_span(Buf b, PyObject *resource, PyObject *scope_name, PyObject *views, PyObject *span_view,
                    const Ctx *ctx) {
    Buf trace = {b.p, b.p}, span = {b.p, b.p}, parent = {b.p, b.p};
    uint64_t start = 0, end = 0;
    PyObject *attrs = PyDict_New();
    if (attrs == NULL) return -1;
    uint32_t field, wire;
    for (;;) {
        if (read_tag(&b, &field, &wire) < 0) goto error;
        if (field == 0) break;
        if (wire == 2 && (field == 1 || field == 2 || field == 4)) {
            if (read_len(&b, field == 1 ? &trace : field == 2 ? &span : &parent) < 0) goto error;
        } else if (wire == 1 && (field == 7 || field == 8)) {
            if (b.end - b.p < 8) {
                fail("truncated fixed64");
                goto error;
            }
            *(field == 7 ? &start : &end) = read_fixed64(&b);
        } else if (field == 9 && wire == 2) {
            Buf entry;
            if (read_len(&b, &entry) < 0 || add_entry(entry, attrs, ctx) < 0) goto error;
        } else if (skip_field(&b, field, wire, 0) < 0) {
            goto error;
        }
    }
    (void)span_view;
    PyObject *values[8] = {attrs, resource, scope_name, hex_of(&trace), hex_of(&span),
                           PyLong_FromUnsignedLongLong(start), PyLong_FromUnsignedLongLong(end), hex_of(&parent)};
    if (!(values[3] && values[4] && values[5] && values[6] && values[7])) {
        for (int i = 3; i < 8; i++) Py_XDECREF(values[i]);
        Py_DECREF(attrs);
        return -1;
    }
    Py_INCREF(resource);
    Py_INCREF(scope_name);
    PyObject *view = new_view(values);  /* takes attrs and the rest */
    if (view == NULL) return -1;
    int rc = PyList_Append(views, view);
    Py_DECREF(view);
    return rc;
error:
    Py_DECREF(attrs);
    return -1;
}

/* A ScopeSpans: its scope's name (the last given), then its spans in order. */
static int add_scope_spans(Buf b, PyObject *resource, PyObject *views, PyObject *span_view, const Ctx *ctx) {
    Buf walk = b, name = {b.p, b.p};
    uint32_t field, wire;
    for (;;) {  /* first pass: the scope (a singular message: repeated occurrences merge, the last name wins) */
        if (read_tag(&walk, &field, &wire) < 0) return -1;
        if (field == 0) break;
        if (field == 1 && wire == 2) {
            Buf scope;
            if (read_len(&walk, &scope) < 0) return -1;
            for (;;) {
                uint32_t f, w;
                if (read_tag(&scope, &f, &w) < 0) return -1;
                if (f == 0) break;
                if (f == 1 && w == 2) {
                    if (read_len(&scope, &name) < 0) return -1;
                } else if (skip_field(&scope, f, w, 0) < 0) {
                    return -1;
                }
            }
        } else if (skip_field(&walk, field, wire, 0) < 0) {
            return -1;
        }
    }
    NameSlot *slot;
    PyObject *scope_name = name_of(name.p, name.end - name.p, &slot);
    if (scope_name == NULL) return -1;
    for (;;) {
        if (read_tag(&b, &field, &wire) < 0) goto error;
        if (field == 0) break;
        if (field == 2 && wire == 2) {
            Buf span;
            if (read_len(&b, &span) < 0 || add_span(span, resource, scope_name, views, span_view, ctx) < 0)
                goto error;
        } else if (skip_field(&b, field, wire, 0) < 0) {
            goto error;
        }
    }
    Py_DECREF(scope_name);
    return 0;
error:
    Py_DECREF(scope_name);
    return -1;
}

/* A ResourceSpans: its resource's attributes (every occurrence merged), then its scope spans in order. */
static int add_resource_spans(Buf b, PyObject *views, PyObject *span_view, const Ctx *ctx) {
    PyObject *resource = PyDict_New();
    if (resource == NULL) return -1;
    Buf walk = b;
    uint32_t field, wire;
    for (;;) {
        if (read_tag(&walk, &field, &wire) < 0) goto error;
        if (field == 0) break;
        if (field == 1 && wire == 2) {
            Buf message;
            if (read_len(&walk, &message) < 0 || add_attributes(message, 1, resource, ctx) < 0) goto error;
        } else if (skip_field(&walk, field, wire, 0) < 0) {
            goto error;
        }
    }
    for (;;) {
        if (read_tag(&b, &field, &wire) < 0) goto error;
        if (field == 0) break;
        if (field == 2 && wire == 2) {
            Buf scope_spans;
            if (read_len(&b, &scope_spans) < 0 || add_scope_spans(scope_spans, resource, views, span_view, ctx) < 0)
                goto error;
        } else if (skip_field(&b, field, wire, 0) < 0) {
            goto error;
        }
    }
    Py_DECREF(resource);
    return 0;
error:
    Py_DECREF(resource);
    return -1;
}

/* --- validation: what upb refuses, refused ------------------------------------------------ */

/* Well-formed UTF-8 (Unicode's table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF). */
static int utf8_ok(const uint8_t *p, const uint8_t *end) {
    while (p < end) {
        uint8_t c = *p;
        if (c < 0x80) {
            p++;
            continue;
        }
        Py_ssize_t left = end - p;
        if (c >= 0xC2 && c <= 0xDF) {
            if (left < 2 || (p[1] & 0xC0) != 0x80) return 0;
            p += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            uint8_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (left < 3 || p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80) return 0;
            p += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (left < 4 || p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
            p += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* A tag as upb reads it: at most 5 bytes, a 32-bit value, a field number of at least 1. */
static int check_tag(Buf *b, uint32_t *field, uint32_t *wire, int in_group) {
    const uint8_t *start = b->p;
    uint64_t tag;
    if (read_varint(b, &tag) < 0) return -1;
    if (b->p - start > 5 || tag > 0xFFFFFFFFULL) return fail("tag too long");
    *field = (uint32_t)(tag >> 3);
    *wire = (uint32_t)(tag & 7);
    if (*field == 0 && !in_group) return fail("field number 0");
    if (*wire > 5) return fail("bad wire type");
    return 0;
}

static int check_field(Buf *b, uint32_t field, uint32_t wire, int depth);

/* An unknown group's fields up to its matching end; the group is one level deeper than its message. */
static int check_group(Buf *b, uint32_t field, int depth) {
    if (depth > MAX_DEPTH) return fail("nested too deep");
    for (;;) {
        uint32_t f, w;
        if (b->p >= b->end) return fail("group without its end");
        if (check_tag(b, &f, &w, 1) < 0) return -1;
        if (w == 4) return f == field ? 0 : fail("mismatched end group");
        if (check_field(b, f, w, depth) < 0) return -1;
    }
}

/* An unknown field's value (its tag read), at ``depth`` (its message's level). */
static int check_field(Buf *b, uint32_t field, uint32_t wire, int depth) {
    if (wire == 3) return check_group(b, field, depth + 1);
    if (wire == 4) return fail("end group outside a group");
    return skip_field(b, field, wire, depth);
}

static int check_message(Buf b, int message, int depth) {
    if (depth > MAX_DEPTH) return fail("nested too deep");
    while (b.p < b.end) {
        uint32_t field, wire;
        if (check_tag(&b, &field, &wire, 0) < 0) return -1;
        const FieldSpec *spec = field < MAX_FIELD ? &schema[message][field] : NULL;
        if (spec != NULL && spec->kind != F_UNKNOWN && spec->wire == wire) {
            Buf inner;
            if (spec->kind == F_MESSAGE) {
                if (read_len(&b, &inner) < 0 || check_message(inner, spec->child, depth + 1) < 0) return -1;
            } else if (spec->kind == F_STRING) {
                if (read_len(&b, &inner) < 0) return -1;
                if (!utf8_ok(inner.p, inner.end)) return fail("a string is not UTF-8");
            } else if (skip_field(&b, field, wire, depth) < 0) {
                return -1;
            }
        } else if (check_field(&b, field, wire, depth) < 0) {  /* unknown, or a known number under another wire type */
            return -1;
        }
    }
    return 0;
}

static PyObject *validate(PyObject *module, PyObject *arg) {
    (void)module;
    if (!schema_ready) {
        PyErr_SetString(PyExc_RuntimeError, "configure() the schema first");
        return NULL;
    }
    Py_buffer body;
    if (PyObject_GetBuffer(arg, &body, PyBUF_SIMPLE) < 0) return NULL;
    Buf b = {(const uint8_t *)body.buf, (const uint8_t *)body.buf + body.len};
    int rc = check_message(b, 0, 0);
    PyBuffer_Release(&body);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* configure(messages, others): ``messages[i]`` is message i's fields as (number, wire, kind, child)
 * (message 0 the request); ``others`` AnyValue's other oneof members as (number, wire, name). */
static PyObject *configure(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *messages, *others;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &messages, &PyTuple_Type, &others)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(messages);
    if (n < 1 || n > MAX_MESSAGES) return PyErr_Format(PyExc_ValueError, "%zd messages", n);
    memset(schema, 0, sizeof schema);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *fields = PyTuple_GET_ITEM(messages, i);
        if (!PyTuple_Check(fields)) return PyErr_Format(PyExc_TypeError, "message %zd", i);
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fields); j++) {
            int number, wire, kind, child;
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fields, j), "iiii", &number, &wire, &kind, &child)) return NULL;
            if (number <= 0 || number >= MAX_FIELD || wire < 0 || wire > 5 || kind <= F_UNKNOWN || kind > F_OTHER ||
                child < 0 || child >= n)
                return PyErr_Format(PyExc_ValueError, "field %d of message %zd", number, i);
            schema[i][number] = (FieldSpec){(uint8_t)kind, (uint8_t)wire, (uint8_t)child};
        }
    }
    for (int i = 0; i < MAX_FIELD; i++) Py_CLEAR(other_names[i]);
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(others); j++) {
        int number, wire;
        PyObject *name;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(others, j), "iiU", &number, &wire, &name)) return NULL;
        if (number <= 4 || number >= MAX_FIELD || wire < 0 || wire > 5)
            return PyErr_Format(PyExc_ValueError, "AnyValue member %d", number);
        Py_INCREF(name);
        other_names[number] = name;
        other_wires[number] = (uint8_t)wire;
    }
    schema_ready = 1;
    Py_RETURN_NONE;
}

static PyObject *views(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "views(body, decisions, wanted, span_view, unsupported)");
        return NULL;
    }
    if (!PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "decisions must be a dict");
        return NULL;
    }
    if (learn_view_type(args[3]) < 0) return NULL;
    if (args[1] != decisions_now) {
        Py_INCREF(args[1]);
        Py_XSETREF(decisions_now, args[1]);
        generation_now++;
    }
    Py_buffer body;
    if (PyObject_GetBuffer(args[0], &body, PyBUF_SIMPLE) < 0) return NULL;
    Ctx ctx = {args[1], args[2], args[4], generation_now};
    Buf b = {(const uint8_t *)body.buf, (const uint8_t *)body.buf + body.len};
    PyObject *out = PyList_New(0);
    uint32_t field, wire;
    while (out != NULL) {
        if (read_tag(&b, &field, &wire) < 0) goto error;
        if (field == 0) break;
        if (field == 1 && wire == 2) {
            Buf resource_spans;
            if (read_len(&b, &resource_spans) < 0 || add_resource_spans(resource_spans, out, args[3], &ctx) < 0)
                goto error;
        } else if (skip_field(&b, field, wire, 0) < 0) {
            goto error;
        }
    }
    PyBuffer_Release(&body);
    return out;
error:
    Py_XDECREF(out);
    PyBuffer_Release(&body);
    return NULL;
}

static PyMethodDef methods[] = {
    {"validate", validate, METH_O, "validate(body): ValueError unless upb would parse it with the read schema"},
    {"configure", configure, METH_VARARGS, "configure(messages, others): the read schema (decode._schema_table)"},
    {"views", (PyCFunction)(void (*)(void))views, METH_FASTCALL,
     "views(body, decisions, wanted, span_view, unsupported) -> list of span views of a valid body"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_views", NULL, -1, methods};

PyMODINIT_FUNC PyInit__views(void) {
    return PyModule_Create(&module_def);
}
