/* The cache-hit call of a compiled CPU entry, in C (runtime/fastcall.py says why).
 *
 * call(fn, packed, descriptors, inputs, outputs): writes each array's data pointer into the
 * `allocated` and `aligned` fields of its memref descriptor (descriptors: addresses, inputs
 * then outputs), then calls the entry with the GIL released: `fn(packed)` where `packed` is
 * the ExecutionEngine's void** argument block, or, for packed == 0, the C interface
 * `fn(desc0, desc1, ...)` of a shared library (at most MAX_ARGS descriptors).
 *
 * The arrays must have the entry's shapes and dtypes (the caller's key says so); anything
 * that is not a C-contiguous numpy array is a TypeError before the entry runs.
 *
 * run_small(fn, packed, descriptors, cache, specs, inputs, reuse): the same for an entry
 * whose buffers are small, with the GIL held throughout (so that no other thread can use
 * the descriptors or the outputs meanwhile: no lock), and the outputs chosen here too: the
 * cached array j is written again when the cache list holds the only reference to it
 * (runtime/outputs.py says why), else a new one of specs[j] = (shape, dtype) replaces it.
 * Returns the list of outputs.
 *
 * call_sized(fn, packed, descriptors, inputs, outputs): call, writing each descriptor's sizes
 * and C-contiguous strides from its array's shape too (an entry with dynamic sizes: the
 * caller has checked that every array has its descriptor's rank).
 *
 * spec_key(target, args): (target, args[0]._spec, ...), the key of a call with Tensors
 * (AttributeError for an argument without a spec, as the Python expression raises).
 *
 * array_key(target, args): the jit cache's key of a call with numpy arrays, (target,
 * (shape, dtype), ...), or None unless every argument is a C-contiguous ndarray.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#define MAX_ARGS 16

typedef struct {
    void *allocated;
    void *aligned;
} DescriptorHead;

typedef void (*Packed)(void *);
typedef void *P;

static void call_c_interface(void *fn, P *d, Py_ssize_t n) {
    switch (n) {
    case 1: ((void (*)(P))fn)(d[0]); break;
    case 2: ((void (*)(P, P))fn)(d[0], d[1]); break;
    case 3: ((void (*)(P, P, P))fn)(d[0], d[1], d[2]); break;
    case 4: ((void (*)(P, P, P, P))fn)(d[0], d[1], d[2], d[3]); break;
    case 5: ((void (*)(P, P, P, P, P))fn)(d[0], d[1], d[2], d[3], d[4]); break;
    case 6: ((void (*)(P, P, P, P, P, P))fn)(d[0], d[1], d[2], d[3], d[4], d[5]); break;
    case 7: ((void (*)(P, P, P, P, P, P, P))fn)(d[0], d[1], d[2], d[3], d[4], d[5], d[6]);
        break;
    case 8: ((void (*)(P, P, P, P, P, P, P, P))fn)(d[0], d[1], d[2], d[3], d[4], d[5], d[6],
                                                   d[7]);
        break;
    case 9: ((void (*)(P, P, P, P, P, P, P, P, P))fn)(d[0], d[1], d[2], d[3], d[4], d[5],
                                                      d[6], d[7], d[8]);
        break;
    case 10: ((void (*)(P, P, P, P, P, P, P, P, P, P))fn)(d[0], d[1], d[2], d[3], d[4], d[5],
                                                          d[6], d[7], d[8], d[9]);
        break;
    case 11: ((void (*)(P, P, P, P, P, P, P, P, P, P, P))fn)(d[0], d[1], d[2], d[3], d[4],
                                                             d[5], d[6], d[7], d[8], d[9],
                                                             d[10]);
        break;
    case 12: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P))fn)(d[0], d[1], d[2], d[3], d[4],
                                                                d[5], d[6], d[7], d[8], d[9],
                                                                d[10], d[11]);
        break;
    case 13: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P))fn)(
        d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12]);
        break;
    case 14: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P))fn)(
        d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13]);
        break;
    case 15: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))fn)(
        d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13],
        d[14]);
        break;
    default: ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P))fn)(
        d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13],
        d[14], d[15]);
        break;
    }
}

static int check_arrays(PyObject *arrays, Py_ssize_t first) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(arrays);
    PyObject **items = PySequence_Fast_ITEMS(arrays);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyArray_Check(items[i]) ||
            !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)items[i])) {
            PyErr_Format(PyExc_TypeError, "argument #%zd is a %s, not a C-contiguous numpy "
                         "array", first + i, Py_TYPE(items[i])->tp_name);
            return -1;
        }
    }
    return 0;
}

static int read_addresses(PyObject *descriptors, P *addresses) {
    Py_ssize_t n = PyTuple_GET_SIZE(descriptors);
    for (Py_ssize_t i = 0; i < n; i++) {
        addresses[i] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(descriptors, i));
        if (addresses[i] == NULL) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "descriptor #%zd is a null address", i);
            return -1;
        }
    }
    return 0;
}

static void set_pointers(P *addresses, Py_ssize_t first, PyObject *arrays) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(arrays);
    PyObject **items = PySequence_Fast_ITEMS(arrays);
    for (Py_ssize_t i = 0; i < n; i++) {
        DescriptorHead *head = (DescriptorHead *)addresses[first + i];
        head->allocated = head->aligned = PyArray_DATA((PyArrayObject *)items[i]);
    }
}

/* A descriptor's sizes and strides (after allocated, aligned and offset): the array's shape
 * and its C-contiguous strides in elements (a zero size counted as one, as numpy does). */
static void set_shapes(P *addresses, Py_ssize_t first, PyObject *arrays) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(arrays);
    PyObject **items = PySequence_Fast_ITEMS(arrays);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyArrayObject *a = (PyArrayObject *)items[i];
        int rank = PyArray_NDIM(a);
        npy_intp *dims = PyArray_DIMS(a);
        int64_t *sizes = (int64_t *)((char *)addresses[first + i] + sizeof(DescriptorHead) +
                                     sizeof(int64_t));
        int64_t stride = 1;
        for (int j = rank - 1; j >= 0; j--) {
            sizes[j] = dims[j];
            sizes[rank + j] = stride;
            stride *= dims[j] > 1 ? dims[j] : 1;
        }
    }
}

static PyObject *do_call(PyObject *const *args, Py_ssize_t nargs, int sized) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, sized ? "call_sized(fn, packed, descriptors, inputs, "
                        "outputs)" : "call(fn, packed, descriptors, inputs, outputs)");
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(args[0]);
    void *packed = PyLong_AsVoidPtr(args[1]);
    PyObject *descriptors = args[2], *inputs = args[3], *outputs = args[4];
    if (PyErr_Occurred())
        return NULL;
    if (!PyTuple_Check(descriptors) || !(PyList_Check(inputs) || PyTuple_Check(inputs)) ||
        !(PyList_Check(outputs) || PyTuple_Check(outputs))) {
        PyErr_SetString(PyExc_TypeError, "descriptors must be a tuple, arrays lists or tuples");
        return NULL;
    }
    Py_ssize_t n_in = PySequence_Fast_GET_SIZE(inputs);
    Py_ssize_t n = n_in + PySequence_Fast_GET_SIZE(outputs);
    if (n != PyTuple_GET_SIZE(descriptors) || (packed == NULL && (n < 1 || n > MAX_ARGS))) {
        PyErr_SetString(PyExc_ValueError, "one descriptor per array (and at most 16 for a "
                                          "C interface)");
        return NULL;
    }
    P addresses[MAX_ARGS];
    P *slots = addresses;
    P *heap = NULL;
    if (n > MAX_ARGS) {  /* (packed calls only: the addresses are not passed) */
        heap = slots = PyMem_Malloc(sizeof(P) * n);
        if (heap == NULL)
            return PyErr_NoMemory();
    }
    /* everything is checked before the first descriptor is written */
    if (check_arrays(inputs, 0) < 0 || check_arrays(outputs, n_in) < 0 ||
        read_addresses(descriptors, slots) < 0) {
        PyMem_Free(heap);
        return NULL;
    }
    set_pointers(slots, 0, inputs);
    set_pointers(slots, n_in, outputs);
    if (sized) {
        set_shapes(slots, 0, inputs);
        set_shapes(slots, n_in, outputs);
    }
    Py_BEGIN_ALLOW_THREADS
    if (packed != NULL)
        ((Packed)fn)(packed);
    else
        call_c_interface(fn, slots, n);
    Py_END_ALLOW_THREADS
    PyMem_Free(heap);
    Py_RETURN_NONE;
}

static PyObject *fastcall_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return do_call(args, nargs, 0);
}

static PyObject *fastcall_call_sized(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return do_call(args, nargs, 1);
}

static PyObject *output_array(PyObject *cache, Py_ssize_t j, PyObject *spec, int reuse) {
    PyObject *old = PyList_GET_ITEM(cache, j);
    if (reuse && old != Py_None && Py_REFCNT(old) == 1) {
        Py_INCREF(old);
        return old;
    }
    PyObject *shape = PyTuple_GET_ITEM(spec, 0);
    PyArray_Descr *dtype = (PyArray_Descr *)PyTuple_GET_ITEM(spec, 1);
    npy_intp dims[NPY_MAXDIMS];
    int nd = (int)PyTuple_GET_SIZE(shape);
    for (int d = 0; d < nd && d < NPY_MAXDIMS; d++)
        dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
    Py_INCREF(dtype);  /* (PyArray_Empty steals it) */
    PyObject *fresh = PyArray_Empty(nd, dims, dtype, 0);
    if (fresh == NULL)
        return NULL;
    if (reuse) {
        Py_INCREF(fresh);
        PyList_SetItem(cache, j, fresh);  /* (steals the new reference, drops the old array) */
    }
    return fresh;
}

static PyObject *fastcall_run_small(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyTuple_Check(args[2]) || !PyList_Check(args[3]) ||
        !PyTuple_Check(args[4]) || PyList_GET_SIZE(args[3]) != PyTuple_GET_SIZE(args[4])) {
        PyErr_SetString(PyExc_TypeError, "run_small(fn, packed, descriptors, cache: list, "
                                         "specs: tuple, inputs, reuse)");
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(args[0]);
    void *packed = PyLong_AsVoidPtr(args[1]);
    PyObject *descriptors = args[2], *cache = args[3], *specs = args[4], *inputs = args[5];
    int reuse = PyObject_IsTrue(args[6]);
    if (PyErr_Occurred() || reuse < 0)
        return NULL;
    if (!(PyList_Check(inputs) || PyTuple_Check(inputs))) {
        PyErr_SetString(PyExc_TypeError, "inputs must be a list or a tuple");
        return NULL;
    }
    Py_ssize_t n_in = PySequence_Fast_GET_SIZE(inputs), n_out = PyList_GET_SIZE(cache);
    Py_ssize_t n = n_in + n_out;
    if (n != PyTuple_GET_SIZE(descriptors) || n > MAX_ARGS || (packed == NULL && n < 1)) {
        PyErr_SetString(PyExc_ValueError, "one descriptor per array, at most 16");
        return NULL;
    }
    P slots[MAX_ARGS];
    if (check_arrays(inputs, 0) < 0 || read_addresses(descriptors, slots) < 0)
        return NULL;
    PyObject *outputs = PyList_New(n_out);
    if (outputs == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < n_out; j++) {
        PyObject *array = output_array(cache, j, PyTuple_GET_ITEM(specs, j), reuse);
        if (array == NULL) {
            Py_DECREF(outputs);
            return NULL;
        }
        PyList_SET_ITEM(outputs, j, array);
    }
    set_pointers(slots, 0, inputs);
    set_pointers(slots, n_in, outputs);
    if (packed != NULL)
        ((Packed)fn)(packed);
    else
        call_c_interface(fn, slots, n);
    return outputs;
}

/* A key tuple (target, <n parts to be set>). */
static PyObject *new_key(PyObject *target, Py_ssize_t n) {
    PyObject *key = PyTuple_New(n + 1);
    if (key != NULL) {
        Py_INCREF(target);
        PyTuple_SET_ITEM(key, 0, target);
    }
    return key;
}

static PyObject *spec_name = NULL;  /* "_spec", interned at import */

/* (target, args[0]._spec, ...); NULL with the attribute's error for an argument without one */
static PyObject *spec_key(PyObject *target, PyObject *args) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *key = new_key(target, n);
    if (key == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *spec = PyObject_GetAttr(PyTuple_GET_ITEM(args, i), spec_name);
        if (spec == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, i + 1, spec);
    }
    return key;
}

static PyObject *fastcall_spec_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "spec_key(target, args: tuple)");
        return NULL;
    }
    return spec_key(args[0], args[1]);
}

/* (target, (shape, dtype), ...) for C-contiguous ndarrays; a new reference to None when an
 * argument is anything else */
static PyObject *array_key(PyObject *target, PyObject *arrays) {
    Py_ssize_t n = PyTuple_GET_SIZE(arrays);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(arrays, i);
        if (!PyArray_CheckExact(a) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a))
            Py_RETURN_NONE;
    }
    PyObject *key = new_key(target, n);
    if (key == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyArrayObject *a = (PyArrayObject *)PyTuple_GET_ITEM(arrays, i);
        int nd = PyArray_NDIM(a);
        npy_intp *dims = PyArray_DIMS(a);
        PyObject *shape = PyTuple_New(nd);
        PyObject *part = shape ? PyTuple_New(2) : NULL;
        if (part == NULL) {
            Py_XDECREF(shape);
            Py_DECREF(key);
            return NULL;
        }
        for (int d = 0; d < nd; d++) {
            PyObject *size = PyLong_FromSsize_t(dims[d]);
            if (size == NULL) {
                Py_DECREF(part);
                Py_DECREF(shape);
                Py_DECREF(key);
                return NULL;
            }
            PyTuple_SET_ITEM(shape, d, size);
        }
        PyArray_Descr *dtype = PyArray_DESCR(a);
        Py_INCREF(dtype);
        PyTuple_SET_ITEM(part, 0, shape);
        PyTuple_SET_ITEM(part, 1, (PyObject *)dtype);
        PyTuple_SET_ITEM(key, i + 1, part);
    }
    return key;
}

static PyObject *fastcall_array_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "array_key(target, args: tuple)");
        return NULL;
    }
    return array_key(args[0], args[1]);
}

#include "jit_call.h"

static PyMethodDef methods[] = {
    {"run_small", (PyCFunction)(void (*)(void))fastcall_run_small, METH_FASTCALL,
     "run_small(fn, packed, descriptors, cache, specs, inputs, reuse) -> outputs: a call "
     "that holds the GIL and chooses its outputs"},
    {"spec_key", (PyCFunction)(void (*)(void))fastcall_spec_key, METH_FASTCALL,
     "spec_key(target, args): (target, args[0]._spec, ...)"},
    {"array_key", (PyCFunction)(void (*)(void))fastcall_array_key, METH_FASTCALL,
     "array_key(target, args): (target, (shape, dtype), ...) for C-contiguous ndarrays, "
     "else None"},
    {"call", (PyCFunction)(void (*)(void))fastcall_call, METH_FASTCALL,
     "call(fn, packed, descriptors, inputs, outputs): patch the descriptors' data pointers "
     "and call the entry (GIL released)"},
    {"call_sized", (PyCFunction)(void (*)(void))fastcall_call_sized, METH_FASTCALL,
     "call_sized(fn, packed, descriptors, inputs, outputs): call, with each descriptor's "
     "sizes and strides set from its array (entries with dynamic sizes)"},
    {"jit_setup", (PyCFunction)(void (*)(void))fastcall_jit_setup, METH_FASTCALL,
     "jit_setup(tensor_type, context, traces, tapes): what JitBase's call reads"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastcall",
    "The cache-hit call of a compiled CPU entry, in C (runtime/fastcall.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__fastcall(void) {
    import_array();
    spec_name = PyUnicode_InternFromString("_spec");
    if (spec_name == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL || jit_base_ready(m) < 0) {
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
