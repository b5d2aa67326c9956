"""lrrt from Python: pure Python over liblrrt.so's C ABI (ctypes). docs/python.md.

    import lrrt, numpy as np
    dev = lrrt.Device.select("host")
    x = dev.buffer_from(np.random.rand(1024).astype(np.float32))
    k = lrrt.Module(dev, "saxpy.host.so").kernel("saxpy")
    k.launch(grid=4, block=256, args=[np.float32(2), x, y, np.uint32(1024)])
"""
import ctypes
import struct
from pathlib import Path

import numpy as np

from ._lib import (ARG_GLOBAL_BUFFER, ARG_HIDDEN, ARG_OTHER, DeviceHandle, DeviceProperties, Dim3, Error, GraphAccess,
                   InstantiateOptions, KernelArg, KernelProperties, LaunchConfig, MemoryStats, check, lib)

__all__ = ["Error", "Device", "Buffer", "PinnedBuffer", "Registration", "Module", "Kernel", "Queue", "Event", "Graph",
           "GraphExec", "devices", "version", "access", "READ", "WRITE", "READ_WRITE"]

READ, WRITE, READ_WRITE = 1, 2, 3
H2D, D2H, D2D = 0, 1, 2


def version():
    return lib.lr_version_string().decode()


def _init():
    st = lib.lr_init()
    if st not in (0, 3):  # LR_ERROR_ALREADY_INITIALIZED is fine
        check(st, "lr_init")


class Device:
    def __init__(self, handle):
        self._h = handle

    @staticmethod
    def select(backend="auto", ordinal=0):
        _init()
        h = DeviceHandle()
        check(lib.lr_device_select(backend.encode(), ordinal, ctypes.byref(h)), "lr_device_select")
        return Device(h)

    @staticmethod
    def open(index):
        _init()
        h = DeviceHandle()
        check(lib.lr_device_open(ctypes.c_uint32(index), ctypes.byref(h)), "lr_device_open")
        return Device(h)

    @property
    def properties(self):
        p = DeviceProperties()
        check(lib.lr_device_get_properties(self._h, ctypes.byref(p)), "lr_device_get_properties")
        return {"backend": p.backend.decode(), "name": p.name.decode(), "arch": p.arch.decode(),
                "backend_ordinal": p.backend_ordinal, "compute_units": p.compute_units, "wave_size": p.wave_size,
                "max_workgroup_size": p.max_workgroup_size,
                "max_workgroup_dims": (p.max_workgroup_dims.x, p.max_workgroup_dims.y, p.max_workgroup_dims.z),
                "max_shared_memory_per_workgroup": p.max_shared_memory_per_workgroup, "memory_bytes": p.memory_bytes}

    @property
    def backend(self):
        return self.properties["backend"]

    def memory_stats(self):
        s = MemoryStats()
        check(lib.lr_get_memory_stats(self._h, ctypes.byref(s)), "lr_get_memory_stats")
        return {n: getattr(s, n) for n, _ in MemoryStats._fields_}

    def reset_memory_stats(self):
        check(lib.lr_reset_memory_stats(self._h), "lr_reset_memory_stats")

    def synchronize(self):
        check(lib.lr_synchronize(self._h), "lr_synchronize")

    def buffer(self, nbytes, dtype=np.uint8):
        return Buffer(self, nbytes, dtype)

    def buffer_from(self, array):
        a = np.ascontiguousarray(array)
        b = Buffer(self, a.nbytes, a.dtype, a.shape)
        b.copy_from(a)
        return b

    def pinned(self, nbytes, dtype=np.uint8):
        return PinnedBuffer(self, nbytes, dtype)

    def queue(self):
        return Queue(self)

    def register(self, obj, nbytes=None):
        """Declares memory lrrt did not allocate (a torch tensor's storage, an
        array, or a raw address with nbytes) to this device's graphs, until
        the Registration is closed. Graph does this by itself for the tensors
        and arrays it is given."""
        if nbytes is not None:
            return Registration(self, address_of(obj), int(nbytes), obj)
        extent = foreign_extent(obj)
        if extent is None:
            raise TypeError(f"lrrt.Device.register: give nbytes with a {type(obj).__name__}")
        return Registration(self, extent[0], extent[1], obj)

    def event(self):
        return Event(self)

    def graph(self):
        return Graph(self)

    def __repr__(self):
        p = self.properties
        return f"lrrt.Device({p['backend']}:{p['backend_ordinal']} {p['name']} {p['arch']})"


def devices():
    _init()
    n = ctypes.c_uint32()
    check(lib.lr_device_count(ctypes.byref(n)), "lr_device_count")
    return [Device.open(i) for i in range(n.value)]


class Buffer:
    """Device memory (lr_malloc). numpy copies both ways; on a host device a
    numpy view (`.numpy()`), on cuda `__cuda_array_interface__`."""

    _alloc, _free, _what = "lr_malloc", "lr_free", "lr_malloc"

    def __init__(self, device, nbytes, dtype=np.uint8, shape=None):
        self.device = device
        self.nbytes = int(nbytes)
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape) if shape is not None else (self.nbytes // self.dtype.itemsize,)
        p = ctypes.c_void_p()
        check(getattr(lib, self._alloc)(device._h, ctypes.c_size_t(self.nbytes), ctypes.byref(p)), self._what)
        self.ptr = p.value or 0

    def free(self):
        if self.ptr:
            getattr(lib, self._free)(self.device._h, ctypes.c_void_p(self.ptr))
            self.ptr = 0

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def data_ptr(self):
        return self.ptr

    def copy_from(self, array):
        a = np.ascontiguousarray(array)
        if a.nbytes > self.nbytes:
            raise ValueError(f"lrrt.Buffer.copy_from: {a.nbytes} bytes do not fit in the buffer's {self.nbytes}")
        check(lib.lr_memcpy(self.device._h, ctypes.c_void_p(self.ptr), a.ctypes.data_as(ctypes.c_void_p),
                            ctypes.c_size_t(a.nbytes), H2D), "lr_memcpy")

    def to_numpy(self, dtype=None, shape=None):
        dt = np.dtype(dtype) if dtype is not None else self.dtype
        out = np.empty(shape if shape is not None else (self.nbytes // dt.itemsize,), dtype=dt)
        check(lib.lr_memcpy(self.device._h, out.ctypes.data_as(ctypes.c_void_p), ctypes.c_void_p(self.ptr),
                            ctypes.c_size_t(out.nbytes), D2H), "lr_memcpy")
        return out

    def numpy(self):
        """A view without a copy: host devices only (their memory is host memory)."""
        if self.device.backend != "host":
            raise Error(4, "lrrt.Buffer.numpy", f"a {self.device.backend} buffer is not host memory: use to_numpy()")
        raw = (ctypes.c_uint8 * self.nbytes).from_address(self.ptr)
        return np.frombuffer(raw, dtype=self.dtype, count=int(np.prod(self.shape))).reshape(self.shape)

    @property
    def __cuda_array_interface__(self):
        if self.device.backend != "cuda":
            raise AttributeError("__cuda_array_interface__: only cuda buffers have one")
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3,
                "strides": None}

    @property
    def __array_interface__(self):
        if self.device.backend != "host":
            raise AttributeError("__array_interface__: only host-device buffers are host memory")
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3}


class PinnedBuffer(Buffer):
    _alloc, _free, _what = "lr_host_malloc", "lr_host_free", "lr_host_malloc"

    def numpy(self):
        raw = (ctypes.c_uint8 * self.nbytes).from_address(self.ptr)
        return np.frombuffer(raw, dtype=self.dtype, count=int(np.prod(self.shape))).reshape(self.shape)


class Registration:
    """lr_memory_register of [ptr, ptr + nbytes) on a device, dropped by
    close() or when collected. Holds the object so its memory outlives it."""

    def __init__(self, device, ptr, nbytes, keep=None):
        check(lib.lr_memory_register(device._h, ctypes.c_void_p(ptr), ctypes.c_size_t(nbytes)), "lr_memory_register")
        self.device, self.ptr, self.nbytes, self._keep = device, ptr, nbytes, keep

    def close(self):
        if self.ptr:
            check(lib.lr_memory_unregister(self.device._h, ctypes.c_void_p(self.ptr)), "lr_memory_unregister")
            self.ptr, self._keep = 0, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def foreign_extent(x):
    """(start, nbytes) of the whole allocation behind memory lrrt did not
    allocate: a torch tensor's storage, the array of __cuda_array_interface__,
    a numpy array's base. None for lrrt buffers, raw addresses and others.
    Whole allocations, so that two views of one never overlap as ranges."""
    if isinstance(x, Buffer):
        return None
    if hasattr(x, "untyped_storage") and callable(x.untyped_storage):  # torch
        st = x.untyped_storage()
        return (int(st.data_ptr()), int(st.nbytes())) if st.nbytes() else None
    if hasattr(x, "__cuda_array_interface__"):
        cai = x.__cuda_array_interface__
        item = np.dtype(cai["typestr"]).itemsize
        shape, strides = cai["shape"], cai.get("strides")
        if not shape or 0 in shape:
            return None
        if strides is None:
            nbytes = item * int(np.prod(shape))
        else:
            nbytes = item + sum((n - 1) * st for n, st in zip(shape, strides) if st > 0)
        return (int(cai["data"][0]), int(nbytes))
    if isinstance(x, np.ndarray):
        base = x
        while isinstance(base.base, np.ndarray):
            base = base.base
        lo, hi = np.byte_bounds(base)
        return (int(lo), int(hi - lo)) if hi > lo else None
    return None


def address_of(x):
    """The device address of a kernel argument: lrrt buffers, torch tensors
    (data_ptr), objects with __cuda_array_interface__, numpy arrays (host
    memory: for the host backend), raw int addresses."""
    if isinstance(x, Buffer):
        return x.ptr
    if hasattr(x, "data_ptr") and callable(x.data_ptr):
        return int(x.data_ptr())
    if hasattr(x, "__cuda_array_interface__"):
        return int(x.__cuda_array_interface__["data"][0])
    if isinstance(x, np.ndarray):
        if not x.flags["C_CONTIGUOUS"]:
            raise ValueError("a numpy array passed as a pointer must be C-contiguous")
        return int(x.ctypes.data)
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    raise TypeError(f"cannot pass {type(x).__name__} as a pointer")


_SCALAR_FORMATS = {"f16": "e", "f32": "f", "f64": "d", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
                   "u8": "B", "u16": "H", "u32": "I", "u64": "Q", "bf16": None}


def pack_scalar(value, type_name):
    if type_name == "bf16":
        f = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        f += 0x7FFF + ((f >> 16) & 1)  # round to nearest even
        return struct.pack("<H", (f >> 16) & 0xFFFF)
    fmt = _SCALAR_FORMATS[type_name]
    if fmt in "efd":
        return struct.pack("<" + fmt, float(value))
    return struct.pack("<" + fmt, int(value))


def _numpy_scalar_type(v):
    return {np.float16: "f16", np.float32: "f32", np.float64: "f64", np.int8: "i8", np.int16: "i16", np.int32: "i32",
            np.int64: "i64", np.uint8: "u8", np.uint16: "u16", np.uint32: "u32", np.uint64: "u64"}.get(type(v))


def _dim3(v):
    if isinstance(v, int):
        v = (v,)
    v = tuple(int(x) for x in v) + (1,) * (3 - len(v))
    return Dim3(*v[:3])


def launch_config(grid, block, shared=0):
    return LaunchConfig(_dim3(grid), _dim3(block), int(shared))


class Module:
    def __init__(self, device, image):
        """image: a path (str / Path) or the code object's bytes."""
        if isinstance(image, (str, Path)):
            image = Path(image).read_bytes()
        self.device = device
        self._image = bytes(image)
        m = ctypes.c_void_p()
        check(lib.lr_module_load(device._h, ctypes.c_char_p(self._image), len(self._image), ctypes.byref(m)),
              "lr_module_load")
        self._h = m

    def kernel_names(self):
        n = ctypes.c_uint32()
        check(lib.lr_module_kernel_count(self._h, ctypes.byref(n)), "lr_module_kernel_count")
        out = []
        for i in range(n.value):
            b = ctypes.create_string_buffer(128)
            check(lib.lr_module_kernel_name(self._h, i, b, 128), "lr_module_kernel_name")
            out.append(b.value.decode())
        return out

    def kernel(self, name):
        return Kernel(self, name)

    def __del__(self):
        try:
            if self._h:
                lib.lr_module_destroy(self._h)
                self._h = None
        except Exception:
            pass


class Kernel:
    def __init__(self, module, name):
        self.module = module
        self.name = name
        k = ctypes.c_void_p()
        check(lib.lr_kernel_get(module._h, name.encode(), ctypes.byref(k)), "lr_kernel_get")
        self._h = k
        p = KernelProperties()
        check(lib.lr_kernel_get_properties(k, ctypes.byref(p)), "lr_kernel_get_properties")
        self.properties = {n: (getattr(p, n).decode() if n == "name" else getattr(p, n)) for n, _ in p._fields_}
        self.args = []
        for i in range(p.arg_count):
            a = KernelArg()
            check(lib.lr_kernel_get_arg(k, i, ctypes.byref(a)), "lr_kernel_get_arg")
            if a.kind == ARG_HIDDEN:
                continue
            self.args.append({"offset": a.offset, "size": a.size, "kind": a.kind, "name": a.name.decode(),
                              "type_name": a.type_name.decode()})

    def pack(self, args, types=None):
        """The argument bytes, by the kernel's own layout when it declares one
        (checked: count, pointer or value, size), else natural alignment.
        Scalars: numpy scalars, or Python numbers with `types`."""
        layout = self.args if self.properties["has_arg_layout"] else None
        if layout is not None and len(args) != len(layout):
            raise Error(1, f"lrrt.Kernel.pack({self.name})",
                        f"kernel {self.name} takes {len(layout)} argument(s), got {len(args)}")
        out = bytearray()
        for i, a in enumerate(args):
            decl = layout[i] if layout is not None else None
            t = types[i] if types is not None else None
            if t in (None, "ptr") and not isinstance(a, (float, np.generic)) and t != "value" and \
                    (t == "ptr" or not isinstance(a, int) or (decl is not None and decl["kind"] == ARG_GLOBAL_BUFFER)):
                data = struct.pack("<Q", address_of(a))
                pointer = True
            else:
                t = t or _numpy_scalar_type(a)
                if t is None:
                    raise Error(1, f"lrrt.Kernel.pack({self.name})",
                                f"argument {i}: give a numpy scalar (np.float32(2)) or `types`, not {type(a).__name__}")
                data = pack_scalar(a, t)
                pointer = False
            if decl is not None:
                if decl["kind"] != ARG_OTHER and (decl["kind"] == ARG_GLOBAL_BUFFER) != pointer:
                    raise Error(1, f"lrrt.Kernel.pack({self.name})",
                                f"argument {i} ({decl['name'] or '?'}) is a {'pointer' if pointer else 'value'} but the "
                                f"kernel's is a {'pointer' if decl['kind'] == ARG_GLOBAL_BUFFER else 'value'}")
                if decl["size"] != len(data):
                    raise Error(1, f"lrrt.Kernel.pack({self.name})",
                                f"argument {i} ({decl['name'] or '?'}) is {len(data)} bytes but the kernel's is "
                                f"{decl['size']} bytes")
                off = decl["offset"]
            else:
                off = (len(out) + len(data) - 1) // len(data) * len(data)
            if len(out) < off + len(data):
                out.extend(b"\0" * (off + len(data) - len(out)))
            out[off:off + len(data)] = data
        need = self.properties["explicit_kernarg_size"]
        if len(out) < need:
            out.extend(b"\0" * (need - len(out)))
        return bytes(out)

    def launch(self, grid, block, args, shared=0, queue=None, types=None):
        data = self.pack(args, types) if not isinstance(args, (bytes, bytearray)) else bytes(args)
        cfg = launch_config(grid, block, shared)
        buf = ctypes.create_string_buffer(data, len(data)) if data else None
        if queue is None:
            check(lib.lr_launch(self._h, ctypes.byref(cfg), buf, len(data)), "lr_launch")
        else:
            check(lib.lr_launch_on_queue(queue._h, self._h, ctypes.byref(cfg), buf, len(data)), "lr_launch_on_queue")


class Queue:
    def __init__(self, device):
        q = ctypes.c_void_p()
        check(lib.lr_queue_create(device._h, ctypes.byref(q)), "lr_queue_create")
        self._h, self.device = q, device

    def synchronize(self):
        check(lib.lr_queue_synchronize(self._h), "lr_queue_synchronize")

    def __del__(self):
        try:
            if self._h:
                lib.lr_queue_destroy(self._h)
                self._h = None
        except Exception:
            pass


class Event:
    def __init__(self, device):
        e = ctypes.c_void_p()
        check(lib.lr_event_create(device._h, ctypes.byref(e)), "lr_event_create")
        self._h = e

    def record(self, queue=None):
        if queue is None:
            check(lib.lr_event_record(self._h), "lr_event_record")
        else:
            check(lib.lr_event_record_on_queue(self._h, queue._h), "lr_event_record_on_queue")

    def synchronize(self):
        check(lib.lr_event_synchronize(self._h), "lr_event_synchronize")

    def elapsed_ns(self, end):
        ns = ctypes.c_uint64()
        check(lib.lr_event_elapsed_time_ns(self._h, end._h, ctypes.byref(ns)), "lr_event_elapsed_time_ns")
        return ns.value

    def __del__(self):
        try:
            if self._h:
                lib.lr_event_destroy(self._h)
                self._h = None
        except Exception:
            pass


def access(obj, mode, nbytes=0, offset=0):
    """An access declaration for a graph step: an lrrt buffer, a torch tensor,
    an array or a raw address; READ, WRITE or READ_WRITE; nbytes 0 = to the
    end of the allocation."""
    return (address_of(obj), mode, nbytes, offset, obj)


class Graph:
    """Steps recorded with access declarations (lrrt derives the order),
    instantiated into a GraphExec, replayed and patched."""

    def __init__(self, device):
        g = ctypes.c_void_p()
        check(lib.lr_graph_create(device._h, ctypes.byref(g)), "lr_graph_create")
        self._h, self.device = g, device
        self._registered = {}  # start -> Registration, for memory lrrt did not allocate

    def use(self, obj):
        """Registers the allocation behind a foreign object (torch tensor,
        array) once for this graph and keeps it alive with the graph and its
        execs. add_kernel calls it for every argument and access."""
        extent = foreign_extent(obj)
        if extent is None or extent[0] in self._registered:
            return
        self._registered[extent[0]] = Registration(self.device, extent[0], extent[1], obj)

    def add_kernel(self, kernel, grid, block, args, accesses=(), shared=0, types=None):
        if not isinstance(args, (bytes, bytearray)):
            for a in args:
                self.use(a)
        data = kernel.pack(args, types) if not isinstance(args, (bytes, bytearray)) else bytes(args)
        cfg = launch_config(grid, block, shared)
        acc = (GraphAccess * max(1, len(accesses)))()
        for i, a in enumerate(accesses):
            ptr, mode, nbytes, offset = a[:4]
            if len(a) > 4:
                self.use(a[4])
            acc[i] = GraphAccess(ctypes.c_void_p(ptr), offset, nbytes, mode)
        node = ctypes.c_uint32()
        buf = ctypes.create_string_buffer(data, len(data)) if data else None
        check(lib.lr_graph_add_kernel(self._h, kernel._h, ctypes.byref(cfg), buf, len(data), acc, len(accesses),
                                      ctypes.byref(node)), "lr_graph_add_kernel")
        return node.value

    def add_dependency(self, before, after):
        check(lib.lr_graph_add_dependency(self._h, before, after), "lr_graph_add_dependency")

    def instantiate(self, max_lanes=0, patch_waits=False):
        opts = InstantiateOptions(max_lanes, 1 if patch_waits else 0)
        e = ctypes.c_void_p()
        check(lib.lr_graph_instantiate(self._h, ctypes.byref(opts), ctypes.byref(e)), "lr_graph_instantiate")
        return GraphExec(e, self)

    def __del__(self):
        try:
            if self._h:
                lib.lr_graph_destroy(self._h)
                self._h = None
            for r in self._registered.values():
                r.close()
        except Exception:
            pass


class GraphExec:
    def __init__(self, handle, graph):
        self._h, self.graph = handle, graph

    def launch(self, queue=None):
        check(lib.lr_graph_exec_launch(self._h, queue._h if queue else None), "lr_graph_exec_launch")

    def synchronize(self):
        check(lib.lr_graph_exec_synchronize(self._h), "lr_graph_exec_synchronize")

    def replay(self, queue=None):
        self.launch(queue)
        self.synchronize()

    def set_kernargs(self, node, offset, data):
        data = bytes(data)
        check(lib.lr_graph_exec_set_kernargs(self._h, node, offset, ctypes.c_char_p(data), len(data)),
              "lr_graph_exec_set_kernargs")

    def __del__(self):
        try:
            if self._h:
                lib.lr_graph_exec_destroy(self._h)
                self._h = None
        except Exception:
            pass
