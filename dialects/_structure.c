/* A function's structure with its integer constants' values left out, as one walk in C
 * (passes/cpu_merge_constants.py: functions that differ only in those constants become one).
 *
 * signature(function) returns the function body's structure as bytes: for every op in order
 * its name, result types, operands (numbered by where they are defined in the function),
 * successors, attributes and regions. Two bodies with equal bytes are the same but for
 * locations and the values of their index, i32 and i64 llvm.mlir.constant ops, which signature returns
 * beside the bytes (values, and the constant ops as capsules), in the same order for both.
 * Names, types and attributes are MLIR's uniqued pointers: equal pointers, equal things.
 *
 * The bindings' Python walk wraps every op in an object (~1.2 us per op): a MobileNetV2
 * training step's 56,000 ops at the LLVM stage took 1 s in Python. Like dialects/_walk.c,
 * this links against Python only and gets the MLIR C API's functions by address
 * (dialects/capi.py); the handle types are declared as mlir-c/IR.h declares them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct { void *ptr; } MlirOperation;
typedef struct { void *ptr; } MlirRegion;
typedef struct { void *ptr; } MlirBlock;
typedef struct { const void *ptr; } MlirValue;
typedef struct { const void *ptr; } MlirType;
typedef struct { const void *ptr; } MlirAttribute;
typedef struct { const void *ptr; } MlirIdentifier;
typedef struct { const char *data; size_t length; } MlirStringRef;
typedef struct { MlirIdentifier name; MlirAttribute attribute; } MlirNamedAttribute;

static struct {
    MlirIdentifier (*name)(MlirOperation);
    MlirStringRef (*identifier_str)(MlirIdentifier);
    intptr_t (*num_regions)(MlirOperation);
    MlirRegion (*region)(MlirOperation, intptr_t);
    MlirBlock (*first_block)(MlirRegion);
    MlirBlock (*next_block)(MlirBlock);
    intptr_t (*num_arguments)(MlirBlock);
    MlirValue (*argument)(MlirBlock, intptr_t);
    MlirOperation (*first_op)(MlirBlock);
    MlirOperation (*next_op)(MlirOperation);
    intptr_t (*num_operands)(MlirOperation);
    MlirValue (*operand)(MlirOperation, intptr_t);
    intptr_t (*num_results)(MlirOperation);
    MlirValue (*result)(MlirOperation, intptr_t);
    MlirType (*value_type)(MlirValue);
    intptr_t (*num_successors)(MlirOperation);
    MlirBlock (*successor)(MlirOperation, intptr_t);
    intptr_t (*num_attributes)(MlirOperation);
    MlirNamedAttribute (*attribute)(MlirOperation, intptr_t);
    bool (*is_integer_attr)(MlirAttribute);
    int64_t (*integer_value)(MlirAttribute);
    MlirType (*attribute_type)(MlirAttribute);
    bool (*is_integer_type)(MlirType);
    unsigned (*integer_width)(MlirType);
    bool (*is_signless)(MlirType);
    bool (*is_index_type)(MlirType);
} api;

/* The C API functions, in the order of api's fields. */
static const char *const API_NAMES[] = {
    "mlirOperationGetName", "mlirIdentifierStr", "mlirOperationGetNumRegions",
    "mlirOperationGetRegion", "mlirRegionGetFirstBlock", "mlirBlockGetNextInRegion",
    "mlirBlockGetNumArguments", "mlirBlockGetArgument", "mlirBlockGetFirstOperation",
    "mlirOperationGetNextInBlock", "mlirOperationGetNumOperands", "mlirOperationGetOperand",
    "mlirOperationGetNumResults", "mlirOperationGetResult", "mlirValueGetType",
    "mlirOperationGetNumSuccessors", "mlirOperationGetSuccessor",
    "mlirOperationGetNumAttributes", "mlirOperationGetAttribute", "mlirAttributeIsAInteger",
    "mlirIntegerAttrGetValueInt", "mlirAttributeGetType", "mlirTypeIsAInteger",
    "mlirIntegerTypeGetWidth", "mlirIntegerTypeIsSignless", "mlirTypeIsAIndex",
};
#define API_COUNT (sizeof(API_NAMES) / sizeof(API_NAMES[0]))
static int configured;

static const char CAPSULE[] = "mlir.ir.Operation._CAPIPtr";
static const char CONSTANT[] = "llvm.mlir.constant";
static const char VALUE[] = "value";

/* Values and blocks numbered in the order they are defined: an open-addressing table of
 * pointers (never 0) to their numbers. */
typedef struct {
    const void **keys;
    uint64_t *numbers;
    size_t capacity, count;
} Numbering;

static size_t slot_of(const Numbering *n, const void *key) {
    size_t i = ((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull & (n->capacity - 1);
    while (n->keys[i] != NULL && n->keys[i] != key)
        i = (i + 1) & (n->capacity - 1);
    return i;
}

static int grow(Numbering *n) {
    Numbering bigger = {calloc(n->capacity * 2, sizeof(void *)),
                        malloc(n->capacity * 2 * sizeof(uint64_t)), n->capacity * 2, n->count};
    if (bigger.keys == NULL || bigger.numbers == NULL) {
        free(bigger.keys);
        free(bigger.numbers);
        return -1;
    }
    for (size_t i = 0; i < n->capacity; i++)
        if (n->keys[i] != NULL) {
            size_t j = slot_of(&bigger, n->keys[i]);
            bigger.keys[j] = n->keys[i];
            bigger.numbers[j] = n->numbers[i];
        }
    free(n->keys);
    free(n->numbers);
    *n = bigger;
    return 0;
}

static int number(Numbering *n, const void *key) {
    if (2 * (n->count + 1) > n->capacity && grow(n) < 0)
        return -1;
    size_t i = slot_of(n, key);
    if (n->keys[i] == NULL) {
        n->keys[i] = key;
        n->numbers[i] = n->count++;
    }
    return 0;
}

/* A value defined outside the function (none, for an isolated function) reads as ~0. */
static uint64_t number_of(const Numbering *n, const void *key) {
    size_t i = slot_of(n, key);
    return n->keys[i] == NULL ? ~0ull : n->numbers[i];
}

typedef struct {
    Numbering numbering;
    uint64_t *words;
    size_t length, capacity;
    PyObject *values, *constants;
    int failed;
} Signature;

/* Room for one more item in the growing array *items (doubling from `first`); 0 when out of
 * memory (the array is kept). */
static int reserve(void **items, size_t length, size_t *capacity, size_t item, size_t first) {
    if (length < *capacity)
        return 1;
    size_t bigger = *capacity ? 2 * *capacity : first;
    void *grown = realloc(*items, bigger * item);
    if (grown == NULL)
        return 0;
    *items = grown;
    *capacity = bigger;
    return 1;
}

static void emit(Signature *s, uint64_t word) {
    if (!reserve((void **)&s->words, s->length, &s->capacity, sizeof(uint64_t), 1024)) {
        s->failed = 1;
        return;
    }
    s->words[s->length++] = word;
}

/* First pass: every block, block argument and op result of `op`'s regions gets its number,
 * so that an operand defined in a later block (unstructured control flow) has one too. */
static void number_regions(Signature *s, MlirOperation op) {
    for (intptr_t r = 0; r < api.num_regions(op); r++)
        for (MlirBlock b = api.first_block(api.region(op, r)); b.ptr; b = api.next_block(b)) {
            s->failed |= number(&s->numbering, b.ptr) < 0;
            for (intptr_t a = 0; a < api.num_arguments(b); a++)
                s->failed |= number(&s->numbering, api.argument(b, a).ptr) < 0;
            for (MlirOperation o = api.first_op(b); o.ptr; o = api.next_op(o)) {
                for (intptr_t i = 0; i < api.num_results(o); i++)
                    s->failed |= number(&s->numbering, api.result(o, i).ptr) < 0;
                number_regions(s, o);
            }
        }
}

static int is_named(MlirOperation op, const char *name) {
    MlirStringRef str = api.identifier_str(api.name(op));
    return str.length == strlen(name) && memcmp(str.data, name, str.length) == 0;
}

/* An index, i32 or i64 constant's value: left out of the words, listed beside them. */
static int is_index_constant(MlirOperation op, MlirNamedAttribute attr) {
    MlirStringRef name = api.identifier_str(attr.name);
    if (name.length != sizeof(VALUE) - 1 || memcmp(name.data, VALUE, name.length) != 0 ||
        !api.is_integer_attr(attr.attribute) || !is_named(op, CONSTANT))
        return 0;
    MlirType type = api.attribute_type(attr.attribute);
    if (api.is_index_type(type))
        return 1;
    unsigned width = api.is_integer_type(type) ? api.integer_width(type) : 0;
    return (width == 32 || width == 64) && api.is_signless(type);
}

static void list_constant(Signature *s, MlirOperation op, MlirAttribute value) {
    PyObject *number = PyLong_FromLongLong(api.integer_value(value));
    PyObject *capsule = PyCapsule_New(op.ptr, CAPSULE, NULL);
    if (number == NULL || capsule == NULL || PyList_Append(s->values, number) < 0 ||
        PyList_Append(s->constants, capsule) < 0)
        s->failed = 1;
    Py_XDECREF(number);
    Py_XDECREF(capsule);
}

static void emit_regions(Signature *s, MlirOperation op);

static void emit_op(Signature *s, MlirOperation op) {
    emit(s, (uintptr_t)api.name(op).ptr);
    intptr_t results = api.num_results(op), operands = api.num_operands(op);
    intptr_t successors = api.num_successors(op), attributes = api.num_attributes(op);
    emit(s, results);
    for (intptr_t i = 0; i < results; i++)
        emit(s, (uintptr_t)api.value_type(api.result(op, i)).ptr);
    emit(s, operands);
    for (intptr_t i = 0; i < operands; i++)
        emit(s, number_of(&s->numbering, api.operand(op, i).ptr));
    emit(s, successors);
    for (intptr_t i = 0; i < successors; i++)
        emit(s, number_of(&s->numbering, api.successor(op, i).ptr));
    emit(s, attributes);
    for (intptr_t i = 0; i < attributes; i++) {
        MlirNamedAttribute attr = api.attribute(op, i);
        emit(s, (uintptr_t)attr.name.ptr);
        if (is_index_constant(op, attr)) {
            emit(s, (uintptr_t)api.attribute_type(attr.attribute).ptr);
            list_constant(s, op, attr.attribute);
        } else {
            emit(s, (uintptr_t)attr.attribute.ptr);
        }
    }
    emit_regions(s, op);
}

static void emit_regions(Signature *s, MlirOperation op) {
    emit(s, api.num_regions(op));
    for (intptr_t r = 0; r < api.num_regions(op) && !s->failed; r++) {
        MlirRegion region = api.region(op, r);
        uint64_t blocks = 0;
        for (MlirBlock b = api.first_block(region); b.ptr; b = api.next_block(b))
            blocks++;
        emit(s, blocks);
        for (MlirBlock b = api.first_block(region); b.ptr; b = api.next_block(b)) {
            emit(s, api.num_arguments(b));
            for (intptr_t a = 0; a < api.num_arguments(b); a++)
                emit(s, (uintptr_t)api.value_type(api.argument(b, a)).ptr);
            for (MlirOperation o = api.first_op(b); o.ptr && !s->failed; o = api.next_op(o))
                emit_op(s, o);
            emit(s, ~0ull);  // the block's end
        }
    }
}

/* The operation of a capsule argument, once configure() was called; else NULL (an
 * exception set, naming `who`). */
static MlirOperation operation_argument(PyObject *arg, const char *who) {
    MlirOperation op = {NULL};
    if (!configured)
        PyErr_Format(PyExc_RuntimeError, "%s: configure() was not called", who);
    else
        op.ptr = PyCapsule_GetPointer(arg, CAPSULE);
    return op;
}

/* signature(function capsule) -> (bytes, [int], [constant op capsule]) */
static PyObject *signature(PyObject *self, PyObject *arg) {
    MlirOperation fn = operation_argument(arg, "signature");
    if (fn.ptr == NULL)
        return NULL;
    Signature s = {.numbering = {calloc(1024, sizeof(void *)), malloc(1024 * sizeof(uint64_t)),
                                 1024, 0},
                   .values = PyList_New(0), .constants = PyList_New(0)};
    PyObject *result = NULL;
    if (s.numbering.keys == NULL || s.numbering.numbers == NULL || s.values == NULL ||
        s.constants == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    number_regions(&s, fn);
    if (!s.failed)
        emit_regions(&s, fn);
    if (s.failed) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)s.words,
                                                (Py_ssize_t)(s.length * sizeof(uint64_t)));
    if (bytes != NULL)
        result = PyTuple_Pack(3, bytes, s.values, s.constants);
    Py_XDECREF(bytes);
done:
    free(s.numbering.keys);
    free(s.numbering.numbers);
    free(s.words);
    Py_XDECREF(s.values);
    Py_XDECREF(s.constants);
    return result;
}

/* captured_uses(function capsule): for each top-level op of the function's body that holds
 * regions (a loop nest, in order), the values defined at the top level (the body's
 * arguments, the top-level ops' results) that it or an op nested in it reads, as
 * [(definer, index, [(user op capsule, operand number)])] in the order the values are
 * defined: definer None and index i for the body's argument i, else the defining op's capsule
 * and the result's number (passes/cpu_outline.py; in Python, hashing the bindings' objects
 * took most of MobileNetV2's 0.25 s). */
typedef struct { uint64_t value, order; void *owner; intptr_t operand; } Use;
typedef struct { Use *items; size_t length, capacity; int failed; } Uses;

static void add_use(Uses *u, uint64_t value, void *owner, intptr_t operand) {
    if (!reserve((void **)&u->items, u->length, &u->capacity, sizeof(Use), 256)) {
        u->failed = 1;
        return;
    }
    u->items[u->length] = (Use){value, u->length, owner, operand};
    u->length++;
}

static void collect_uses(const Numbering *n, MlirOperation op, Uses *u) {
    for (intptr_t i = 0; i < api.num_operands(op); i++) {
        uint64_t value = number_of(n, api.operand(op, i).ptr);
        if (value != ~0ull)
            add_use(u, value, op.ptr, i);
    }
    for (intptr_t r = 0; r < api.num_regions(op); r++)
        for (MlirBlock b = api.first_block(api.region(op, r)); b.ptr; b = api.next_block(b))
            for (MlirOperation o = api.first_op(b); o.ptr; o = api.next_op(o))
                collect_uses(n, o, u);
}

static int by_value(const void *a, const void *b) {
    const Use *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* [(definer, index, [(op capsule, operand)])] of one nest's uses, sorted by value. */
static PyObject *grouped(Uses *u, const void **definers, const intptr_t *indices) {
    qsort(u->items, u->length, sizeof(Use), by_value);
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out != NULL && i < u->length;) {
        uint64_t value = u->items[i].value;
        PyObject *users = PyList_New(0), *definer = definers[value] == NULL ? Py_None
            : PyCapsule_New((void *)definers[value], CAPSULE, NULL), *entry = NULL;
        if (definer == Py_None)
            Py_INCREF(definer);
        for (; users != NULL && i < u->length && u->items[i].value == value; i++) {
            PyObject *pair = Py_BuildValue("(Nn)", PyCapsule_New(u->items[i].owner, CAPSULE, NULL),
                                           u->items[i].operand);
            if (pair == NULL || PyList_Append(users, pair) < 0)
                Py_CLEAR(users);
            Py_XDECREF(pair);
        }
        if (users != NULL && definer != NULL)
            entry = Py_BuildValue("(OnO)", definer, indices[value], users);
        Py_XDECREF(users);
        Py_XDECREF(definer);
        if (entry == NULL || PyList_Append(out, entry) < 0)
            Py_CLEAR(out);
        Py_XDECREF(entry);
    }
    return out;
}

static PyObject *captured_uses(PyObject *self, PyObject *arg) {
    MlirOperation fn = operation_argument(arg, "captured_uses");
    if (fn.ptr == NULL)
        return NULL;
    MlirBlock body = api.first_block(api.region(fn, 0));
    size_t defined = (size_t)api.num_arguments(body);
    for (MlirOperation o = api.first_op(body); o.ptr; o = api.next_op(o))
        defined += (size_t)api.num_results(o);
    Numbering n = {calloc(1024, sizeof(void *)), malloc(1024 * sizeof(uint64_t)), 1024, 0};
    const void **definers = malloc((defined + 1) * sizeof(void *));
    intptr_t *indices = malloc((defined + 1) * sizeof(intptr_t));
    Uses u = {0};
    PyObject *out = NULL;
    int failed = n.keys == NULL || n.numbers == NULL || definers == NULL || indices == NULL;
    for (intptr_t i = 0; !failed && i < api.num_arguments(body); i++) {
        definers[n.count] = NULL, indices[n.count] = i;
        failed = number(&n, api.argument(body, i).ptr) < 0;
    }
    for (MlirOperation o = api.first_op(body); !failed && o.ptr; o = api.next_op(o))
        for (intptr_t i = 0; !failed && i < api.num_results(o); i++) {
            definers[n.count] = o.ptr, indices[n.count] = i;
            failed = number(&n, api.result(o, i).ptr) < 0;
        }
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    out = PyList_New(0);
    for (MlirOperation o = api.first_op(body); out != NULL && o.ptr; o = api.next_op(o)) {
        if (api.num_regions(o) == 0)
            continue;
        u.length = 0;
        collect_uses(&n, o, &u);
        PyObject *nest = u.failed ? PyErr_NoMemory() : grouped(&u, definers, indices);
        if (nest == NULL || PyList_Append(out, nest) < 0)
            Py_CLEAR(out);
        Py_XDECREF(nest);
    }
done:
    free(n.keys);
    free(n.numbers);
    free(definers);
    free(indices);
    free(u.items);
    return out;
}

/* configure(address: callable(name) -> int): the C API functions' addresses. */
static PyObject *configure(PyObject *self, PyObject *address) {
    void *found[API_COUNT];
    for (size_t i = 0; i < API_COUNT; i++) {
        PyObject *value = PyObject_CallFunction(address, "s", API_NAMES[i]);
        if (value == NULL)
            return NULL;
        found[i] = PyLong_AsVoidPtr(value);
        Py_DECREF(value);
        if (found[i] == NULL) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "configure: %s's address is 0", API_NAMES[i]);
            return NULL;
        }
    }
    _Static_assert(sizeof(api) == sizeof(found), "one address per field of api");
    memcpy(&api, found, sizeof(api));
    configured = 1;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "configure(address: callable(name) -> int)"},
    {"signature", signature, METH_O,
     "signature(function capsule) -> (bytes, [constant value], [constant op capsule])"},
    {"captured_uses", captured_uses, METH_O,
     "captured_uses(function capsule) -> per nest [(definer capsule or None, index, "
     "[(user op capsule, operand number)])]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_structure", NULL, -1, methods};

PyMODINIT_FUNC PyInit__structure(void) { return PyModule_Create(&module); }
