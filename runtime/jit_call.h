/* JitBase: the cache-hit call of an ms.jit function in C, included by _fastcall.c.
 *
 * pyfront/jit.py's JitFunction derives from JitBase, so calling one runs jit_call below
 * before any Python frame exists. A call whose keywords (if any) name the parameters after
 * its positional arguments (jit_bind_keywords), with no trace or PyNative tape open in the
 * thread, whose arguments are all Tensors (or all C-contiguous numpy arrays) of a key in
 * `_flat_cache` and whose entry has a `fast` form, is served here:
 * the key as jit.py builds it (spec_key, array_key), the entry's `last_used` stamped from the
 * `_calls` counter, and `entry.fast(list of the arrays)` returned. Anything else (a miss, an
 * entry without a fast form, a Tensor without host data: TypeError from the fast form, whose
 * message the general path gives better) calls `self._call_python(*args, **kwargs)`, which is
 * JitFunction's whole call in Python: this file only repeats its cache-hit path.
 * jit_setup(context, traces, tapes) hands over the objects the path reads: the context dict
 * (its "target") and the thread stacks of traces and tapes (ThreadStack: their `items`).
 */

static PyObject *jit_context = NULL, *jit_traces = NULL, *jit_tapes = NULL;
static PyObject *str_items, *str_target, *str_data, *str_fast, *str_last_used, *str_slow,
    *str_plain_parameters;

typedef struct {
    PyObject_HEAD
    PyObject *flat_cache;  /* `_flat_cache`: key -> CompiledEntry */
    Py_ssize_t calls;      /* `_calls`: the counter stamped on entries as they serve (LRU) */
} JitBase;

/* 1 when the thread's stack holds an item, 0 if not, -1 with an error set */
static int stack_active(PyObject *stack) {
    PyObject *items = PyObject_GetAttr(stack, str_items);
    if (items == NULL)
        return -1;
    int active = PyList_CheckExact(items) ? PyList_GET_SIZE(items) > 0 : PyObject_IsTrue(items);
    Py_DECREF(items);
    return active;
}

/* The flat cache's key of the call: NULL with no error set where jit.py's fast path would
 * not look (an argument without a spec, arrays not all C-contiguous ndarrays) */
static PyObject *jit_key(PyObject *target, PyObject *args, int arrays) {
    PyObject *key = arrays ? array_key(target, args) : spec_key(target, args);
    if (key == Py_None) {
        Py_DECREF(key);
        return NULL;
    }
    if (key == NULL && PyErr_ExceptionMatches(PyExc_AttributeError))
        PyErr_Clear();
    return key;
}

/* The arrays the fast form takes: the arguments themselves, or each Tensor's `_data` */
static PyObject *jit_arrays(PyObject *args, int arrays) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list != NULL && i < n; i++) {
        PyObject *arg = PyTuple_GET_ITEM(args, i);
        PyObject *item = arrays ? Py_NewRef(arg) : PyObject_GetAttr(arg, str_data);
        if (item == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* The entry's fast form stamped as used, or NULL (no error: the Python path serves it) */
static PyObject *jit_entry_fast(JitBase *self, PyObject *key) {
    PyObject *entry = PyDict_GetItemWithError(self->flat_cache, key);  /* borrowed */
    if (entry == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError))  /* (an unhashable spec: as jit.py) */
            PyErr_Clear();
        return NULL;
    }
    Py_INCREF(entry);
    PyObject *fast = PyObject_GetAttr(entry, str_fast);
    PyObject *stamp = NULL;
    if (fast != NULL && fast != Py_None && (stamp = PyLong_FromSsize_t(self->calls + 1)) &&
        PyObject_SetAttr(entry, str_last_used, stamp) == 0)
        self->calls++;
    else
        Py_CLEAR(fast);  /* (None, or an error stays set) */
    Py_XDECREF(stamp);
    Py_DECREF(entry);
    return fast;
}

/* The cache-hit call: a new reference, or NULL with no error set for the Python path */
static PyObject *jit_hit(JitBase *self, PyObject *args) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n == 0 || self->flat_cache == NULL || !PyDict_CheckExact(self->flat_cache))
        return NULL;
    int busy = stack_active(jit_traces);
    if (busy == 0)
        busy = stack_active(jit_tapes);
    if (busy != 0)  /* (tracing or recording: the Python path; -1 leaves its error) */
        return NULL;
    PyObject *target = PyDict_GetItemWithError(jit_context, str_target);  /* borrowed */
    if (target == NULL)
        return NULL;
    int arrays = PyArray_CheckExact(PyTuple_GET_ITEM(args, 0));
    PyObject *key = jit_key(target, args, arrays);
    if (key == NULL)
        return NULL;
    PyObject *fast = jit_entry_fast(self, key);
    Py_DECREF(key);
    if (fast == NULL)
        return NULL;
    PyObject *list = jit_arrays(args, arrays);
    PyObject *result = list ? PyObject_CallOneArg(fast, list) : NULL;
    Py_XDECREF(list);
    Py_DECREF(fast);
    /* a Tensor without host data (a placeholder): the Python path's run() says which */
    if (result == NULL && !arrays && PyErr_ExceptionMatches(PyExc_TypeError))
        PyErr_Clear();
    return result;
}

/* The arguments by position when keywords name the parameters after the positional ones
 * and the function's parameters are all plain (`_plain_parameters`, () if not), as
 * JitFunction._positional places them; NULL with no error set for anything else */
static PyObject *jit_bind_keywords(PyObject *op, PyObject *args, PyObject *kwargs) {
    PyObject *names = PyObject_GetAttr(op, str_plain_parameters);
    if (names == NULL)
        return NULL;
    PyObject *bound = NULL;
    Py_ssize_t n_pos = PyTuple_GET_SIZE(args);
    Py_ssize_t n = PyTuple_CheckExact(names) ? PyTuple_GET_SIZE(names) : 0;
    if (n > 0 && n_pos + PyDict_GET_SIZE(kwargs) == n && (bound = PyTuple_New(n)) != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *value = i < n_pos ? PyTuple_GET_ITEM(args, i)
                                        : PyDict_GetItemWithError(kwargs,
                                                                  PyTuple_GET_ITEM(names, i));
            if (value == NULL) {  /* (a keyword that is not the next parameter's) */
                Py_CLEAR(bound);
                break;
            }
            PyTuple_SET_ITEM(bound, i, Py_NewRef(value));
        }
    }
    Py_DECREF(names);
    return bound;
}

static PyObject *jit_call(PyObject *op, PyObject *args, PyObject *kwargs) {
    if (jit_context != NULL) {
        PyObject *positional = kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0
                                   ? Py_NewRef(args) : jit_bind_keywords(op, args, kwargs);
        PyObject *result = positional ? jit_hit((JitBase *)op, positional) : NULL;
        Py_XDECREF(positional);
        if (result != NULL || PyErr_Occurred())
            return result;
    }
    PyObject *slow = PyObject_GetAttr(op, str_slow);
    if (slow == NULL)
        return NULL;
    PyObject *result = PyObject_Call(slow, args, kwargs);
    Py_DECREF(slow);
    return result;
}

static int jit_traverse(JitBase *self, visitproc visit, void *arg) {
    Py_VISIT(self->flat_cache);
    return 0;
}

static int jit_clear(JitBase *self) {
    Py_CLEAR(self->flat_cache);
    return 0;
}

static void jit_dealloc(JitBase *self) {
    PyObject_GC_UnTrack(self);
    jit_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef jit_members[] = {
    {"_flat_cache", T_OBJECT_EX, offsetof(JitBase, flat_cache), 0,
     "calls whose arguments are all Tensors or all arrays: key -> entry"},
    {"_calls", T_PYSSIZET, offsetof(JitBase, calls), 0,
     "a counter stamped on entries as they are used (LRU)"},
    {NULL},
};

static PyTypeObject JitBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mscc.runtime._fastcall.JitBase",
    .tp_basicsize = sizeof(JitBase),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The cache-hit call of an ms.jit function (runtime/jit_call.h).",
    .tp_new = PyType_GenericNew,
    .tp_call = jit_call,
    .tp_traverse = (traverseproc)jit_traverse,
    .tp_clear = (inquiry)jit_clear,
    .tp_dealloc = (destructor)jit_dealloc,
    .tp_members = jit_members,
};

static PyObject *fastcall_jit_setup(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "jit_setup(context: dict, traces, tapes)");
        return NULL;
    }
    Py_XSETREF(jit_context, Py_NewRef(args[0]));
    Py_XSETREF(jit_traces, Py_NewRef(args[1]));
    Py_XSETREF(jit_tapes, Py_NewRef(args[2]));
    Py_RETURN_NONE;
}

static int jit_base_ready(PyObject *module) {
    str_items = PyUnicode_InternFromString("items");
    str_target = PyUnicode_InternFromString("target");
    str_data = PyUnicode_InternFromString("_data");
    str_fast = PyUnicode_InternFromString("fast");
    str_last_used = PyUnicode_InternFromString("last_used");
    str_slow = PyUnicode_InternFromString("_call_python");
    str_plain_parameters = PyUnicode_InternFromString("_plain_parameters");
    if (!str_items || !str_target || !str_data || !str_fast || !str_last_used || !str_slow ||
        !str_plain_parameters ||
        PyType_Ready(&JitBaseType) < 0)
        return -1;
    Py_INCREF(&JitBaseType);
    if (PyModule_AddObject(module, "JitBase", (PyObject *)&JitBaseType) < 0) {
        Py_DECREF(&JitBaseType);
        return -1;
    }
    return 0;
}
