/* The passes' op searches (dialects/ir_helpers.ops_of_kind, has_op_of_kind) as one walk in C.
 *
 * The bindings' Operation.walk calls back into Python for every op, wrapping each in a Python
 * object: ~1.2 us per op, 13 ms per search of a LeNet5 step's 11,000 operations at the llvm
 * stage, and the passes search hundreds of times per compile. Here the walk compares names in
 * C and hands Python only the ops it found, as capsules for Operation._CAPICreate.
 *
 * The MLIR C API functions come from the bindings' own libMLIRPythonCAPI.so, whose addresses
 * dialects/capi.py passes to configure() (this extension links against Python only). The
 * C API's types are declared here as the C API defines them (mlir-c/IR.h, mlir-c/Support.h):
 * handles are structs of one pointer, passed and returned in registers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct { void *ptr; } MlirOperation;
typedef struct { const void *ptr; } MlirIdentifier;
typedef struct { const char *data; size_t length; } MlirStringRef;
typedef enum { WALK_ADVANCE, WALK_INTERRUPT, WALK_SKIP } MlirWalkResult;
typedef enum { PRE_ORDER, POST_ORDER } MlirWalkOrder;
typedef MlirWalkResult (*WalkCallback)(MlirOperation, void *);

static void (*operation_walk)(MlirOperation, WalkCallback, void *, MlirWalkOrder);
static MlirIdentifier (*operation_get_name)(MlirOperation);
static MlirStringRef (*identifier_str)(MlirIdentifier);

static const char CAPSULE[] = "mlir.ir.Operation._CAPIPtr";
#define MAX_NAMES 32
static const char LINALG[] = "linalg.";

typedef struct {
    Py_ssize_t count;
    const char *names[MAX_NAMES];
    Py_ssize_t lengths[MAX_NAMES];
    int skip_linalg_bodies, first_only, failed;
    PyObject *found;
} Search;

static int is_named(const Search *s, MlirStringRef name) {
    for (Py_ssize_t i = 0; i < s->count; i++)
        if ((Py_ssize_t)name.length == s->lengths[i] &&
            memcmp(name.data, s->names[i], name.length) == 0)
            return 1;
    return 0;
}

static MlirWalkResult visit(MlirOperation op, void *data) {
    Search *s = data;
    MlirStringRef name = identifier_str(operation_get_name(op));
    if (is_named(s, name)) {
        PyObject *capsule = PyCapsule_New(op.ptr, CAPSULE, NULL);
        int appended = capsule != NULL && PyList_Append(s->found, capsule) == 0;
        Py_XDECREF(capsule);
        if (!appended) {
            s->failed = 1;
            return WALK_INTERRUPT;
        }
        if (s->first_only)
            return WALK_INTERRUPT;
    }
    if (s->skip_linalg_bodies && name.length > sizeof(LINALG) - 1 &&
        memcmp(name.data, LINALG, sizeof(LINALG) - 1) == 0)
        return WALK_SKIP;
    return WALK_ADVANCE;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    unsigned long long walk, get_name, str;
    if (!PyArg_ParseTuple(args, "KKK", &walk, &get_name, &str))
        return NULL;
    if (!walk || !get_name || !str) {
        PyErr_SetString(PyExc_ValueError, "configure: a C API function's address is 0");
        return NULL;
    }
    operation_walk = (void (*)(MlirOperation, WalkCallback, void *, MlirWalkOrder))walk;
    operation_get_name = (MlirIdentifier (*)(MlirOperation))get_name;
    identifier_str = (MlirStringRef (*)(MlirIdentifier))str;
    Py_RETURN_NONE;
}

static int read_names(Search *s, PyObject *names) {
    s->count = PyTuple_GET_SIZE(names);
    if (s->count > MAX_NAMES) {
        PyErr_Format(PyExc_ValueError, "find: at most %d op names", MAX_NAMES);
        return -1;
    }
    for (Py_ssize_t i = 0; i < s->count; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "find: op names must be str");
            return -1;
        }
        s->names[i] = PyUnicode_AsUTF8AndSize(name, &s->lengths[i]);
        if (s->names[i] == NULL)
            return -1;
    }
    return 0;
}

/* find(operation capsule, names: tuple[str], skip_linalg_bodies, post_order, first_only)
 * -> list of operation capsules, in walk order. */
static PyObject *find(PyObject *self, PyObject *args) {
    PyObject *root, *names;
    int skip_linalg_bodies, post_order, first_only;
    if (!PyArg_ParseTuple(args, "OO!ppp", &root, &PyTuple_Type, &names, &skip_linalg_bodies,
                          &post_order, &first_only))
        return NULL;
    if (operation_walk == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "find: configure() was not called");
        return NULL;
    }
    MlirOperation op = {PyCapsule_GetPointer(root, CAPSULE)};
    if (op.ptr == NULL)
        return NULL;
    Search s = {.skip_linalg_bodies = skip_linalg_bodies && !post_order,
                .first_only = first_only};
    if (read_names(&s, names) < 0)
        return NULL;
    s.found = PyList_New(0);
    if (s.found == NULL)
        return NULL;
    operation_walk(op, visit, &s, post_order ? POST_ORDER : PRE_ORDER);
    if (s.failed) {
        Py_DECREF(s.found);
        return NULL;
    }
    return s.found;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(mlirOperationWalk, mlirOperationGetName, mlirIdentifierStr): addresses"},
    {"find", find, METH_VARARGS,
     "find(capsule, names, skip_linalg_bodies, post_order, first_only) -> [capsule]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void) { return PyModule_Create(&module); }
