/*
 * _capsule.c -- the Arrow PyCapsule Interface at the C level, for laminardb.
 *
 * Two functions, the only places the package touches PyCapsule objects:
 *   pointer(capsule, name) -> int   the struct address a producer's capsule holds,
 *                                   after checking its name exactly (TypeError
 *                                   naming the capsule received otherwise);
 *   take(name, address) -> capsule  move the live Arrow struct at `address` into a
 *                                   new capsule named `name` (the struct there is
 *                                   left released), for pyarrow's public import
 *                                   functions (pa.record_batch, pa.schema,
 *                                   pa.RecordBatchReader.from_stream).
 * A capsule made by take() owns its struct: its destructor calls the struct's
 * release if it is still live (nobody imported it) and frees it, as the
 * PyCapsule specification asks. The cffi module cannot take Python objects as C
 * arguments, hence this small extension of its own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include "laminar.h" /* the Arrow C Data Interface structs */

static const char k_schema[] = "arrow_schema";
static const char k_array[] = "arrow_array";
static const char k_stream[] = "arrow_array_stream";

static void destroy_schema(PyObject* capsule) {
  struct ArrowSchema* s = PyCapsule_GetPointer(capsule, k_schema);
  if (s == NULL) return;
  if (s->release != NULL) s->release(s);
  free(s);
}

static void destroy_array(PyObject* capsule) {
  struct ArrowArray* a = PyCapsule_GetPointer(capsule, k_array);
  if (a == NULL) return;
  if (a->release != NULL) a->release(a);
  free(a);
}

static void destroy_stream(PyObject* capsule) {
  struct ArrowArrayStream* s = PyCapsule_GetPointer(capsule, k_stream);
  if (s == NULL) return;
  if (s->release != NULL) s->release(s);
  free(s);
}

static PyObject* capsule_pointer(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* capsule;
  const char* name;
  if (!PyArg_ParseTuple(args, "Os:pointer", &capsule, &name)) return NULL;
  if (!PyCapsule_CheckExact(capsule)) {
    return PyErr_Format(PyExc_TypeError, "expected a PyCapsule named '%s', got %s", name,
                        Py_TYPE(capsule)->tp_name);
  }
  const char* got = PyCapsule_GetName(capsule);
  if (got == NULL && PyErr_Occurred()) return NULL;
  if (got == NULL || strcmp(got, name) != 0) {
    if (got == NULL) {
      return PyErr_Format(PyExc_TypeError,
                          "expected a PyCapsule named '%s', got one named None", name);
    }
    return PyErr_Format(PyExc_TypeError,
                        "expected a PyCapsule named '%s', got one named '%s'", name, got);
  }
  void* pointer = PyCapsule_GetPointer(capsule, got);
  if (pointer == NULL) {
    PyErr_Clear();
    return PyErr_Format(PyExc_TypeError, "the PyCapsule named '%s' holds a NULL pointer",
                        name);
  }
  return PyLong_FromVoidPtr(pointer);
}

static PyObject* capsule_take(PyObject* self, PyObject* args) {
  (void)self;
  const char* name;
  PyObject* address;
  if (!PyArg_ParseTuple(args, "sO:take", &name, &address)) return NULL;
  void* from = PyLong_AsVoidPtr(address);
  if (from == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "take: NULL address");
    return NULL;
  }
  const char* kind;
  size_t size;
  PyCapsule_Destructor destroy;
  if (strcmp(name, k_schema) == 0) {
    kind = k_schema;
    size = sizeof(struct ArrowSchema);
    destroy = destroy_schema;
  } else if (strcmp(name, k_array) == 0) {
    kind = k_array;
    size = sizeof(struct ArrowArray);
    destroy = destroy_array;
  } else if (strcmp(name, k_stream) == 0) {
    kind = k_stream;
    size = sizeof(struct ArrowArrayStream);
    destroy = destroy_stream;
  } else {
    return PyErr_Format(PyExc_ValueError, "take: not an Arrow capsule name: '%s'", name);
  }
  void* to = malloc(size);
  if (to == NULL) return PyErr_NoMemory();
  PyObject* capsule = PyCapsule_New(to, kind, destroy);
  if (capsule == NULL) {
    free(to);
    return NULL;
  }
  /* Move: the new struct owns what the old one did; the old one is released. The
   * release member sits at a different offset in each struct. */
  memcpy(to, from, size);
  if (kind == k_schema)
    ((struct ArrowSchema*)from)->release = NULL;
  else if (kind == k_array)
    ((struct ArrowArray*)from)->release = NULL;
  else
    ((struct ArrowArrayStream*)from)->release = NULL;
  return capsule;
}

static PyMethodDef k_methods[] = {
    {"pointer", capsule_pointer, METH_VARARGS,
     "pointer(capsule, name) -> int: the address in a capsule of exactly that name."},
    {"take", capsule_take, METH_VARARGS,
     "take(name, address) -> capsule: move the Arrow struct at address into a capsule."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef k_module = {PyModuleDef_HEAD_INIT,
                                      "laminardb._capsule",
                                      "Arrow PyCapsules at the C level (see _capsule.c).",
                                      -1,
                                      k_methods,
                                      NULL,
                                      NULL,
                                      NULL,
                                      NULL};

PyMODINIT_FUNC PyInit__capsule(void) { return PyModule_Create(&k_module); }
