/* The C launcher of lrrt.triton's bound launchers (python/lrrt/_launcher.py,
 * docs/python.md "What a launch costs").
 *
 * A Launcher does in C what the generated Python launcher does per call: a
 * guard per argument (its class, and a pointer's dtype, against those the
 * checked path learnt), the pointer's data_ptr(), each scalar converted as
 * struct.pack would, written into a copy of the launch block's template
 * (lr_launch_block_t's header and the hidden scratch pointers, written when
 * bound), then one call of lr_launch_block. It saves ctypes' call and
 * struct's pack: about half of what Python added to a launch.
 *
 * It accepts no argument the Python fast path would refuse: anything it does
 * not take as is (an unseen class or dtype, a value that does not convert or
 * fit, a keyword, a wrong count, a launcher disarmed by lrrt.shutdown) goes
 * to the checked Python path, slow(*args), which raises naming the argument
 * or learns it (learn() sets the guard here).
 *
 * Built against Python's limited API (3.11): one .abi3.so loads in any
 * CPython from 3.11 on. It is not linked to liblrrt: the address of
 * lr_launch_block comes from the library ctypes loaded, so both paths use
 * the same runtime. */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lrrt/lrrt.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the launch block is packed little-endian (struct '<'), as lr_launch_block reads it on this host"
#endif

_Static_assert(sizeof(lr_launch_block_t) == 32, "lr_launch_block_t's header is 32 bytes (lrrt.h)");

typedef lr_status_t (*launch_block_fn)(const lr_launch_block_t*);

/* How one argument is written: its struct code in _launcher.py's layout. */
enum kind { K_PTR, K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64, K_F32, K_F64, K_BF16 };

typedef struct {
  int kind;
  Py_ssize_t offset;  /* in the block, header included */
  PyObject* cls;      /* learnt class; NULL until the checked path learnt one */
  PyObject* dtype;    /* a pointer's learnt dtype */
} param_t;

enum { STACK_BLOCK = 1024 };

typedef struct {
  PyObject_HEAD
  launch_block_fn launch;
  unsigned char* template_block;
  Py_ssize_t block_size;
  Py_ssize_t count;
  param_t* params;
  PyObject* slow;   /* the checked path: slow(*args) */
  PyObject* fail;   /* fail(status): raises lrrt.Error with lr_last_error_message() */
  PyObject* keep;   /* what the block's addresses need alive (configuration, scratch) */
  int disarmed;
  PyObject* dict;
  PyObject* weakrefs;
} launcher_t;

static PyObject* s_dtype;
static PyObject* s_data_ptr;

static int kind_of(const char* code, int* kind) {
  static const struct { const char* code; int kind; } table[] = {
      {"ptr", K_PTR}, {"b", K_I8},  {"h", K_I16}, {"i", K_I32}, {"q", K_I64},  {"B", K_U8},
      {"H", K_U16},   {"I", K_U32}, {"Q", K_U64}, {"f", K_F32}, {"d", K_F64}, {"bf16", K_BF16}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
    if (strcmp(code, table[i].code) == 0) {
      *kind = table[i].kind;
      return 1;
    }
  return 0;
}

static Py_ssize_t kind_size(int kind) {
  switch (kind) {
    case K_I8: case K_U8: return 1;
    case K_I16: case K_U16: case K_BF16: return 2;
    case K_I32: case K_U32: case K_F32: return 4;
    default: return 8;
  }
}

/* An integer as struct's integer codes take it (__index__), range-checked
 * for the kind. 0 when it does not convert or fit (no error left set). */
static int put_integer(PyObject* value, int kind, unsigned char* at) {
  PyObject* index = PyNumber_Index(value);
  if (!index) {
    PyErr_Clear();
    return 0;
  }
  int ok = 0;
  if (kind == K_U64 || kind == K_PTR) {
    unsigned long long u = PyLong_AsUnsignedLongLong(index);
    if (!(u == (unsigned long long)-1 && PyErr_Occurred())) {
      uint64_t v = u;
      memcpy(at, &v, 8);
      ok = 1;
    }
  } else {
    long long s = PyLong_AsLongLong(index);
    if (!(s == -1 && PyErr_Occurred())) {
      switch (kind) {
        case K_I8: ok = s >= INT8_MIN && s <= INT8_MAX; if (ok) { int8_t v = (int8_t)s; memcpy(at, &v, 1); } break;
        case K_I16: ok = s >= INT16_MIN && s <= INT16_MAX; if (ok) { int16_t v = (int16_t)s; memcpy(at, &v, 2); } break;
        case K_I32: ok = s >= INT32_MIN && s <= INT32_MAX; if (ok) { int32_t v = (int32_t)s; memcpy(at, &v, 4); } break;
        case K_I64: { int64_t v = s; memcpy(at, &v, 8); ok = 1; } break;
        case K_U8: ok = s >= 0 && s <= UINT8_MAX; if (ok) { uint8_t v = (uint8_t)s; memcpy(at, &v, 1); } break;
        case K_U16: ok = s >= 0 && s <= UINT16_MAX; if (ok) { uint16_t v = (uint16_t)s; memcpy(at, &v, 2); } break;
        case K_U32: ok = s >= 0 && s <= UINT32_MAX; if (ok) { uint32_t v = (uint32_t)s; memcpy(at, &v, 4); } break;
        default: break;
      }
    }
  }
  if (PyErr_Occurred()) PyErr_Clear();
  Py_DECREF(index);
  return ok;
}

/* A float as struct's 'f'/'d' take it, and bf16 as lrrt's bf16_bits() packs
 * it (float32, then round to nearest even). A double that is finite but
 * overflows float32 is refused, as struct.pack('f') refuses it. */
static int put_float(PyObject* value, int kind, unsigned char* at) {
  double d = PyFloat_AsDouble(value);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  if (kind == K_F64) {
    memcpy(at, &d, 8);
    return 1;
  }
  float f = (float)d;
  if (isinf(f) && !isinf(d)) return 0;
  if (kind == K_F32) {
    memcpy(at, &f, 4);
    return 1;
  }
  uint32_t bits;
  memcpy(&bits, &f, 4);
  uint64_t rounded = (uint64_t)bits + 0x7FFFu + ((bits >> 16) & 1u);
  uint16_t b16 = (uint16_t)((rounded >> 16) & 0xFFFFu);
  memcpy(at, &b16, 2);
  return 1;
}

/* One argument into the block; 0 sends the call to the checked path. */
static int put_argument(const param_t* p, PyObject* a, unsigned char* block) {
  if (!p->cls || (PyObject*)Py_TYPE(a) != p->cls) return 0;
  unsigned char* at = block + p->offset;
  switch (p->kind) {
    case K_PTR: {
      PyObject* dtype = PyObject_GetAttr(a, s_dtype);
      if (!dtype) {
        PyErr_Clear();
        return 0;
      }
      int same = dtype == p->dtype;
      Py_DECREF(dtype);
      if (!same) return 0;
      PyObject* address = PyObject_CallMethodObjArgs(a, s_data_ptr, NULL);
      if (!address) {
        PyErr_Clear();
        return 0;
      }
      int ok = put_integer(address, K_PTR, at);
      Py_DECREF(address);
      return ok;
    }
    case K_F32: case K_F64: case K_BF16: return put_float(a, p->kind, at);
    default: return put_integer(a, p->kind, at);
  }
}

static PyObject* launcher_call(PyObject* self_obj, PyObject* args, PyObject* kwargs) {
  launcher_t* self = (launcher_t*)self_obj;
  Py_ssize_t n = PyTuple_Size(args);
  if (n < 0) return NULL;
  if (self->disarmed || (kwargs && PyDict_Size(kwargs) != 0) || n != self->count) goto checked;
  {
    unsigned char stack[STACK_BLOCK];
    unsigned char* block = self->block_size <= STACK_BLOCK ? stack : PyMem_Malloc((size_t)self->block_size);
    if (!block) return PyErr_NoMemory();
    memcpy(block, self->template_block, (size_t)self->block_size);
    int ok = 1;
    for (Py_ssize_t i = 0; i < n && ok; ++i) ok = put_argument(&self->params[i], PyTuple_GetItem(args, i), block);
    lr_status_t status = LR_SUCCESS;
    if (ok) {
      /* As ctypes does: another thread may run while the driver is called. The
       * block is this call's own (a stack copy). */
      Py_BEGIN_ALLOW_THREADS
      status = self->launch((const lr_launch_block_t*)block);
      Py_END_ALLOW_THREADS
    }
    if (block != stack) PyMem_Free(block);
    if (!ok) goto checked;
    if (status != LR_SUCCESS) {
      PyObject* r = PyObject_CallFunction(self->fail, "i", (int)status);
      if (!r) return NULL;
      Py_DECREF(r);
    }
    Py_RETURN_NONE;
  }
checked:
  if (!self->slow) {  /* cleared by the collector (a cycle being freed): no checked path left */
    PyErr_SetString(PyExc_RuntimeError, "lrrt.triton launcher: called while being freed");
    return NULL;
  }
  return PyObject_Call(self->slow, args, kwargs);
}

static int launcher_traverse(PyObject* self_obj, visitproc visit, void* arg) {
  launcher_t* self = (launcher_t*)self_obj;
  Py_VISIT(Py_TYPE(self_obj));
  Py_VISIT(self->slow);
  Py_VISIT(self->fail);
  Py_VISIT(self->keep);
  Py_VISIT(self->dict);
  for (Py_ssize_t i = 0; i < self->count; ++i) {
    Py_VISIT(self->params[i].cls);
    Py_VISIT(self->params[i].dtype);
  }
  return 0;
}

static int launcher_clear(PyObject* self_obj) {
  launcher_t* self = (launcher_t*)self_obj;
  Py_CLEAR(self->slow);
  Py_CLEAR(self->fail);
  Py_CLEAR(self->keep);
  Py_CLEAR(self->dict);
  for (Py_ssize_t i = 0; i < self->count; ++i) {
    Py_CLEAR(self->params[i].cls);
    Py_CLEAR(self->params[i].dtype);
  }
  /* Cleared by the collector: calls go to a checked path no longer there. */
  self->disarmed = 1;
  return 0;
}

static void launcher_dealloc(PyObject* self_obj) {
  launcher_t* self = (launcher_t*)self_obj;
  PyTypeObject* type = Py_TYPE(self_obj);
  PyObject_GC_UnTrack(self_obj);
  if (self->weakrefs) PyObject_ClearWeakRefs(self_obj);
  launcher_clear(self_obj);
  PyMem_Free(self->params);
  PyMem_Free(self->template_block);
  freefunc free_fn = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_fn(self_obj);
  Py_DECREF(type);
}

/* Launcher(launch_address, template, layout, slow, fail, keep): layout is a
 * sequence of (code, offset), one per argument the caller passes, code one of
 * ptr b h i q B H I Q f d bf16. */
static PyObject* launcher_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  unsigned long long address = 0;
  Py_buffer template_view;
  PyObject *layout, *slow, *fail, *keep;
  static char* names[] = {"launch_address", "template", "layout", "slow", "fail", "keep", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Ky*OOOO", names, &address, &template_view, &layout, &slow, &fail,
                                   &keep))
    return NULL;
  PyObject* result = NULL;
  PyObject* items = NULL;
  if (!address) {
    PyErr_SetString(PyExc_ValueError, "_fastlaunch.Launcher: launch_address is 0");
    goto done;
  }
  if (template_view.len < (Py_ssize_t)sizeof(lr_launch_block_t)) {
    PyErr_Format(PyExc_ValueError, "_fastlaunch.Launcher: the template has %zd bytes, fewer than the 32-byte header",
                 template_view.len);
    goto done;
  }
  if (!PyCallable_Check(slow) || !PyCallable_Check(fail)) {
    PyErr_SetString(PyExc_TypeError, "_fastlaunch.Launcher: slow and fail must be callable");
    goto done;
  }
  items = PySequence_Tuple(layout);
  if (!items) goto done;
  allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
  launcher_t* self = (launcher_t*)alloc(type, 0);
  if (!self) goto done;
  result = (PyObject*)self;
  self->launch = (launch_block_fn)(uintptr_t)address;
  self->block_size = template_view.len;
  self->template_block = PyMem_Malloc((size_t)template_view.len);
  self->count = PyTuple_Size(items);
  self->params = PyMem_Calloc(self->count ? (size_t)self->count : 1, sizeof(param_t));
  if (!self->template_block || !self->params) {
    self->count = 0;
    PyErr_NoMemory();
    goto fail_new;
  }
  memcpy(self->template_block, template_view.buf, (size_t)template_view.len);
  for (Py_ssize_t i = 0; i < self->count; ++i) {
    const char* code = NULL;
    Py_ssize_t offset = 0;
    PyObject* item = PyTuple_GetItem(items, i);
    if (!PyTuple_Check(item)) {
      PyErr_Format(PyExc_TypeError, "_fastlaunch.Launcher: layout[%zd] is not a (code, offset) tuple", i);
      goto fail_new;
    }
    if (!PyArg_ParseTuple(item, "sn", &code, &offset)) goto fail_new;
    if (!kind_of(code, &self->params[i].kind)) {
      PyErr_Format(PyExc_ValueError, "_fastlaunch.Launcher: layout[%zd]: unknown code '%s'", i, code);
      goto fail_new;
    }
    if (offset < (Py_ssize_t)sizeof(lr_launch_block_t) ||
        offset > template_view.len - kind_size(self->params[i].kind)) {
      PyErr_Format(PyExc_ValueError, "_fastlaunch.Launcher: layout[%zd]: offset %zd is outside the block's arguments",
                   i, offset);
      goto fail_new;
    }
    self->params[i].offset = offset;
  }
  Py_INCREF(slow);
  self->slow = slow;
  Py_INCREF(fail);
  self->fail = fail;
  Py_INCREF(keep);
  self->keep = keep;
  goto done;
fail_new:
  Py_CLEAR(result);
done:
  Py_XDECREF(items);
  PyBuffer_Release(&template_view);
  return result;
}

static PyObject* launcher_learn(PyObject* self_obj, PyObject* args) {
  launcher_t* self = (launcher_t*)self_obj;
  Py_ssize_t i;
  PyObject *cls, *dtype;
  if (!PyArg_ParseTuple(args, "nOO", &i, &cls, &dtype)) return NULL;
  if (i < 0 || i >= self->count) return PyErr_Format(PyExc_IndexError, "learn: argument %zd of %zd", i, self->count);
  if (!PyType_Check(cls)) return PyErr_Format(PyExc_TypeError, "learn: cls must be a class");
  param_t* p = &self->params[i];
  PyObject *old_cls = p->cls, *old_dtype = p->dtype;
  Py_INCREF(cls);
  p->cls = cls;
  p->dtype = NULL;
  if (p->kind == K_PTR) {
    Py_INCREF(dtype);
    p->dtype = dtype;
  }
  Py_XDECREF(old_cls);
  Py_XDECREF(old_dtype);
  Py_RETURN_NONE;
}

static PyObject* launcher_disarm(PyObject* self_obj, PyObject* unused) {
  (void)unused;
  ((launcher_t*)self_obj)->disarmed = 1;
  Py_RETURN_NONE;
}

/* ((class, dtype), ...) as learnt, None where none is: for tests. */
static PyObject* launcher_guards(PyObject* self_obj, PyObject* unused) {
  (void)unused;
  launcher_t* self = (launcher_t*)self_obj;
  PyObject* out = PyTuple_New(self->count);
  if (!out) return NULL;
  for (Py_ssize_t i = 0; i < self->count; ++i) {
    PyObject* cls = self->params[i].cls ? self->params[i].cls : Py_None;
    PyObject* dtype = self->params[i].dtype ? self->params[i].dtype : Py_None;
    PyObject* pair = Py_BuildValue("(OO)", cls, dtype);
    if (!pair) {
      Py_DECREF(out);
      return NULL;
    }
    PyTuple_SetItem(out, i, pair);
  }
  return out;
}

static PyMethodDef launcher_methods[] = {
    {"learn", launcher_learn, METH_VARARGS, "learn(i, cls, dtype): argument i of this class (and dtype) takes the fast path"},
    {"disarm", launcher_disarm, METH_NOARGS, "every later call takes the checked path (lrrt.shutdown)"},
    {"guards", launcher_guards, METH_NOARGS, "the learnt (class, dtype) of each argument"},
    {NULL, NULL, 0, NULL}};

static PyMemberDef launcher_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(launcher_t, dict), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(launcher_t, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL}};

static PyType_Slot launcher_slots[] = {
    {Py_tp_new, launcher_new},
    {Py_tp_call, launcher_call},
    {Py_tp_dealloc, launcher_dealloc},
    {Py_tp_traverse, launcher_traverse},
    {Py_tp_clear, launcher_clear},
    {Py_tp_methods, launcher_methods},
    {Py_tp_members, launcher_members},
    {Py_tp_doc, "A bound launcher of one kernel and grid, in C (lrrt.triton; python/lrrt/_fastlaunch.c)."},
    {0, NULL}};

static PyType_Spec launcher_spec = {"lrrt._fastlaunch.Launcher", sizeof(launcher_t), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, launcher_slots};

static int module_exec(PyObject* module) {
  s_dtype = PyUnicode_InternFromString("dtype");
  s_data_ptr = PyUnicode_InternFromString("data_ptr");
  if (!s_dtype || !s_data_ptr) return -1;
  PyObject* type = PyType_FromSpec(&launcher_spec);
  if (!type) return -1;
  if (PyModule_AddObject(module, "Launcher", type) < 0) {
    Py_DECREF(type);
    return -1;
  }
  /* The Python side checks it: a stale build beside a newer package is not used. */
  return PyModule_AddIntConstant(module, "ABI", 1);
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, module_exec}, {0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_fastlaunch", "lrrt.triton's bound launchers in C (python/lrrt/_fastlaunch.c).", 0, NULL,
    module_slots, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastlaunch(void) { return PyModuleDef_Init(&module_def); }
