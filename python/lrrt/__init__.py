"""lrrt from Python: pure Python over liblrrt.so's C ABI (ctypes). docs/python.md.

    import lrrt, numpy as np
    dev = lrrt.Device.select("host")
    x = dev.buffer_from(np.random.rand(1024).astype(np.float32))
    k = lrrt.Module(dev, "saxpy.host.so").kernel("saxpy")
    k.launch(grid=4, block=256, args=[np.float32(2), x, y, np.uint32(1024)])
"""
import ctypes
from pathlib import Path

from . import _np
from ._args import U32_MAX, aggregate, check_pointee, check_scalar, launch_config, pack_value, parse_type, scalar_code, whole
from ._buffer import Buffer, PinnedBuffer, _Runtime, inside_allocation, shutdown
from ._foreign import Registration, Staging, _host_array, _require_live, _stale, address_of, foreign_extent
from ._lib import (ARG_GLOBAL_BUFFER, ArgumentError, ArgumentRangeError, ARG_HIDDEN, ARG_OTHER, DeviceHandle, DeviceProperties, Error, KernelArg,
                   KernelProperties, MemoryStats, TensorMapDesc, check, lib)

from ._graph import READ, READ_WRITE, WRITE, Graph, GraphExec, access

__all__ = ["Error", "ArgumentError", "ArgumentRangeError", "Device", "Buffer", "PinnedBuffer", "Registration", "Module", "Kernel", "Queue", "Event", "Graph",
           "GraphExec", "devices", "version", "access", "shutdown", "READ", "WRITE", "READ_WRITE"]



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
        if not isinstance(backend, str):
            raise TypeError(f"lrrt.Device.select: backend is a name (str), not {type(backend).__name__}")
        ordinal = whole(ordinal, "lrrt.Device.select: ordinal", 0, U32_MAX)
        h = DeviceHandle()
        check(lib.lr_device_select(_c_name(backend, "lrrt.Device.select: backend"), ordinal, ctypes.byref(h)), "lr_device_select")
        return Device(h)

    @staticmethod
    def open(index):
        _init()
        index = whole(index, "lrrt.Device.open: index", 0, U32_MAX)
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
        try:
            return self._backend
        except AttributeError:
            self._backend = self.properties["backend"]
            return self._backend

    def memory_stats(self):
        s = MemoryStats()
        check(lib.lr_get_memory_stats(self._h, ctypes.byref(s)), "lr_get_memory_stats")
        return {n: getattr(s, n) for n, _ in MemoryStats._fields_}

    def reset_memory_stats(self):
        check(lib.lr_reset_memory_stats(self._h), "lr_reset_memory_stats")

    def synchronize(self):
        check(lib.lr_synchronize(self._h), "lr_synchronize")

    # lr_tensor_map_dtype_t by element type name (numpy's names too).
    _TMA_DTYPES = {"u8": 0, "uint8": 0, "i8": 0, "int8": 0, "u16": 1, "uint16": 1, "i16": 1, "int16": 1, "u32": 2,
                   "uint32": 2, "i32": 3, "int32": 3, "u64": 4, "uint64": 4, "i64": 5, "int64": 5, "f16": 6,
                   "float16": 6, "f32": 7, "float32": 7, "f64": 8, "float64": 8, "bf16": 9, "bfloat16": 9, "tf32": 11}
    _TMA_WORDS = {"swizzle": ("none", "32B", "64B", "128B"), "interleave": ("none", "16B", "32B"),
                  "l2_promotion": ("none", "64B", "128B", "256B"), "oob_fill": ("zero", "nan")}

    def tensor_map(self, tensor, dtype, shape, box, strides=None, element_strides=None, swizzle="none",
                   interleave="none", l2_promotion="none", oob_fill="zero"):
        """The 128-byte TMA descriptor (lr_tensor_map_encode; cuda sm_90+) of
        a tiled view of `tensor` (an lrrt buffer, a torch tensor, or a device
        address), as bytes: pass them to Kernel.launch like any bytes
        argument (placed at the kernel's declared offset). shape, box, strides (in
        elements, the last 1; default dense) and element_strides are written
        outermost first, like a numpy shape (docs/manifest.md#tensor-maps).
        Raises lrrt.Error naming the field, and LR_ERROR_NOT_SUPPORTED off
        cuda sm_90+."""
        name = dtype if isinstance(dtype, str) else str(dtype).replace("torch.", "")
        if not isinstance(dtype, str) and _np.loaded() is not None and not str(dtype).startswith("torch."):
            try:
                name = _np.loaded().dtype(dtype).name  # np.float32, np.dtype("f4")
            except TypeError:
                pass
        if name not in self._TMA_DTYPES:
            raise ValueError(f"lrrt.Device.tensor_map: dtype {name!r} is not one of {sorted(set(self._TMA_DTYPES))}")
        return self._tensor_map(self._TMA_DTYPES[name], address_of(tensor), shape, box, strides, element_strides,
                                swizzle, interleave, l2_promotion, oob_fill)

    def _tensor_map(self, dtype_code, address, shape, box, strides=None, element_strides=None, swizzle="none",
                    interleave="none", l2_promotion="none", oob_fill="zero", where="lrrt.Device.tensor_map"):
        """tensor_map with the dtype as its lr_tensor_map_dtype_t value and
        the tensor as its address (lrrt.triton's descriptors: Triton's
        tensordesc_meta gives the CUtensorMapDataType, the same numbering)."""
        rank = len(shape)
        if not 1 <= rank <= 5 or len(box) != rank:
            raise ValueError(f"{where}: shape and box need 1 to 5 entries each, the same number "
                             f"(shape {list(shape)}, box {list(box)})")
        esize = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}.get(dtype_code)
        if esize is None:
            raise ValueError(f"{where}: dtype code {dtype_code!r} is not an lr_tensor_map_dtype_t")
        if strides is None:
            strides = [1] * rank
            for i in range(rank - 2, -1, -1):
                strides[i] = strides[i + 1] * shape[i + 1]
        if element_strides is None:
            element_strides = [1] * rank
        if len(strides) != rank or len(element_strides) != rank:
            raise ValueError(f"{where}: strides and element_strides need one entry per dimension")
        if strides[-1] != 1:
            raise ValueError(f"{where}: the innermost stride must be 1, not {strides[-1]}")
        d = TensorMapDesc()
        d.dtype = dtype_code
        d.rank = rank
        d.global_address = address
        for i in range(rank):
            r = rank - 1 - i  # CUDA's dimension i is the numpy-order r
            d.global_dims[i] = whole(shape[r], f"{where}: shape[{r}]", 0, 2**64 - 1)
            d.box_dims[i] = whole(box[r], f"{where}: box[{r}]", 0, U32_MAX)
            d.element_strides[i] = whole(element_strides[r], f"{where}: element_strides[{r}]", 0, U32_MAX)
            if i > 0:
                d.global_strides[i - 1] = whole(strides[r], f"{where}: strides[{r}]", 0, 2**58) * esize
        for field, words in self._TMA_WORDS.items():
            value = {"swizzle": swizzle, "interleave": interleave, "l2_promotion": l2_promotion, "oob_fill": oob_fill}[field]
            if value not in words:
                raise ValueError(f"{where}: {field} {value!r} is not one of {list(words)}")
            setattr(d, field, words.index(value))
        out = ctypes.create_string_buffer(128)
        check(lib.lr_tensor_map_encode(self._h, ctypes.byref(d), out), "lr_tensor_map_encode")
        return out.raw

    def buffer(self, nbytes, dtype=None):
        """nbytes of device memory; dtype (numpy's) types it, None: bytes."""
        return Buffer(self, nbytes, dtype)

    def buffer_from(self, array):
        """A buffer holding a copy of a numpy array (or of bytes: untyped)."""
        if isinstance(array, (bytes, bytearray, memoryview)):
            b = Buffer(self, memoryview(array).nbytes)
            b.copy_from(array)
            return b
        a = _np.numpy("Device.buffer_from of an array").ascontiguousarray(array)
        b = Buffer(self, a.nbytes, a.dtype, a.shape)
        b.copy_from(a)
        return b

    def pinned(self, nbytes, dtype=None):
        return PinnedBuffer(self, nbytes, dtype)

    def queue(self):
        return Queue(self)

    def register(self, obj, nbytes=None):
        """Declares memory lrrt did not allocate (a torch tensor's storage, an
        array, or a raw address with nbytes) to this device's graphs, until
        the Registration is closed. Graph does this by itself for the tensors
        and arrays it is given."""
        if nbytes is not None:
            return Registration(self, address_of(obj), whole(nbytes, "lrrt.Device.register: nbytes", 1, 2**63 - 1),
                                obj)
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


def pack_scalar(value, type_name):
    """The bytes of one scalar of an lrrt type name (f32, u32, bf16, ...),
    OverflowError if it does not fit."""
    code = scalar_code(type_name) if isinstance(type_name, str) else None
    if code is None:
        raise ValueError(f"lrrt.pack_scalar: unknown type {type_name!r} (f16, bf16, f32, f64, i8..i64, u8..u64)")
    return pack_value(value, code, f"a {type_name} value")


def _numpy_scalar_type(v):
    np = _np.loaded()
    if np is None or not isinstance(v, np.generic):
        return None
    return {np.float16: "f16", np.float32: "f32", np.float64: "f64", np.int8: "i8", np.int16: "i16", np.int32: "i32",
            np.int64: "i64", np.uint8: "u8", np.uint16: "u16", np.uint32: "u32", np.uint64: "u64"}.get(type(v))


class Module:
    def __init__(self, device, image):
        """image: a path (str / Path) or the code object's bytes."""
        self._h = None
        if isinstance(image, (str, Path)):
            image = Path(image).read_bytes()
        elif not isinstance(image, (bytes, bytearray, memoryview)):
            raise TypeError(f"lrrt.Module: give a path or the code object's bytes, not {type(image).__name__}")
        self.device = device
        self._image = bytes(image)
        self._generation = _Runtime.generation
        m = ctypes.c_void_p()
        check(lib.lr_module_load(device._h, ctypes.c_char_p(self._image), len(self._image), ctypes.byref(m)),
              "lr_module_load")
        self._h = m

    def kernel_names(self):
        _require_live(self, "lrrt.Module.kernel_names")
        n = ctypes.c_uint32()
        check(lib.lr_module_kernel_count(self._h, ctypes.byref(n)), "lr_module_kernel_count")
        out = []
        for i in range(n.value):
            b = ctypes.create_string_buffer(128)
            check(lib.lr_module_kernel_name(self._h, i, b, 128), "lr_module_kernel_name")
            out.append(b.value.decode())
        return out

    def kernel(self, name):
        _require_live(self, "lrrt.Module.kernel")
        return Kernel(self, name)

    def __del__(self):
        try:
            if self._h and not _stale(self):
                lib.lr_module_destroy(self._h)
            self._h = None
        except Exception:
            pass


class Kernel:
    def __init__(self, module, name):
        self.module = module
        self.name = name
        k = ctypes.c_void_p()
        check(lib.lr_kernel_get(module._h, _c_name(name, "lrrt.Kernel: name"), ctypes.byref(k)), "lr_kernel_get")
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
        self._declared = [parse_type(a["type_name"]) for a in self.args]  # (pointer, family, bytes), parsed once
        self._host = module.device.backend == "host"

    def _declared_size(self, i):
        """(pointer, family, bytes) of argument i with bytes the kernel's
        size (a struct's declared type name says nothing lrrt knows)."""
        pointer, fam, _ = self._declared[i]
        return pointer, fam, self.args[i]["size"]

    def pack(self, args, types=None):
        """The argument bytes, by the kernel's own layout when it declares one
        (checked: count, pointer or value, size, and the declared types: a
        float64 array is not a float*, np.int32 not a float), else natural
        alignment. Scalars: numpy scalars, Python numbers where the kernel
        declares the type, else with `types` (f32, u32, ..., "ptr")."""
        return self._pack(args, types)[0]

    def _pack(self, args, types=None):
        """(bytes, [(offset, argument) of every pointer])."""
        what = f"lrrt.Kernel.pack({self.name})"
        layout = self.args if self.properties["has_arg_layout"] else None
        if layout is not None and len(args) != len(layout):
            raise Error(1, what, f"kernel {self.name} takes {len(layout)} argument(s), got {len(args)}")
        if types is not None and len(types) != len(args):
            raise Error(1, what, f"{len(types)} types for {len(args)} argument(s)")
        out, pointers = bytearray(), []
        np = _np.loaded()
        for i, a in enumerate(args):
            decl = layout[i] if layout is not None else None
            t = types[i] if types is not None else None
            where = f"{what}: argument {i}" + (f" ({decl['name']})" if decl is not None and decl["name"] else "")
            declared = self._declared[i] if decl is not None else (False, None, 0)
            # By value as bytes: a ctypes.Structure, a numpy structured scalar,
            # bytes, a complex number (docs/python.md).
            agg = None if t == "ptr" else aggregate(a, self._declared_size(i) if decl is not None else None, t, where)
            if agg is not None:
                data, align = agg
                if decl is not None and (decl["kind"] == ARG_GLOBAL_BUFFER or decl["size"] != len(data)):
                    raise Error(1, what, f"argument {i} ({decl['name'] or '?'}) is {len(data)} bytes by value but the "
                                f"kernel's is {'a pointer' if decl['kind'] == ARG_GLOBAL_BUFFER else str(decl['size']) + ' bytes'}")
                off = decl["offset"] if decl is not None else (len(out) + align - 1) // align * align
                if len(out) < off + len(data):
                    out.extend(b"\0" * (off + len(data) - len(out)))
                out[off:off + len(data)] = data
                continue
            if t == "ptr":
                pointer = True
            elif t is not None:
                pointer = False
            elif decl is not None and decl["kind"] in (ARG_GLOBAL_BUFFER,) + ((0,) if declared[1] else ()):
                pointer = decl["kind"] == ARG_GLOBAL_BUFFER
            else:
                pointer = not isinstance(a, (int, float)) and not (np is not None and isinstance(a, np.generic))
            if pointer:
                if isinstance(a, float) or (np is not None and isinstance(a, np.generic)):
                    raise Error(1, what, f"argument {i} is a value but the kernel's is a pointer")
                if declared[0]:
                    check_pointee(a, declared[1:], where)
                data = address_of(a).to_bytes(8, "little")
            else:
                if t not in (None, "value"):
                    code = scalar_code(t)
                    if code is None:
                        raise Error(1, what, f"argument {i}: unknown type {t!r} (f16, bf16, f32, f64, i8..i64, u8..u64)")
                    check_scalar(a, t, where)
                    if declared[1] is not None and not declared[0] and parse_type(t)[1] != declared[1]:
                        raise ArgumentError(1, where, f"given as {t} but the kernel's is {decl['type_name']}")
                elif declared[1] is not None and not declared[0]:
                    check_scalar(a, decl["type_name"], where)
                    code = scalar_code(decl["type_name"])
                else:
                    t = _numpy_scalar_type(a)
                    if t is None:
                        raise Error(1, what, f"argument {i}: give a numpy scalar (np.float32(2)) or `types`, "
                                             f"not {type(a).__name__}")
                    code = scalar_code(t)
                data = pack_value(a, code, where)
            if decl is not None:
                if decl["kind"] != ARG_OTHER and (decl["kind"] == ARG_GLOBAL_BUFFER) != pointer:
                    raise Error(1, what, f"argument {i} ({decl['name'] or '?'}) is a {'pointer' if pointer else 'value'} "
                                f"but the kernel's is a {'pointer' if decl['kind'] == ARG_GLOBAL_BUFFER else 'value'}")
                if decl["size"] != len(data):
                    raise Error(1, what, f"argument {i} ({decl['name'] or '?'}) is {len(data)} bytes but the kernel's "
                                f"is {decl['size']} bytes")
                off = decl["offset"]
            else:
                off = (len(out) + len(data) - 1) // len(data) * len(data)
            if len(out) < off + len(data):
                out.extend(b"\0" * (off + len(data) - len(out)))
            out[off:off + len(data)] = data
            if pointer:
                pointers.append((off, a))
        need = self.properties["explicit_kernarg_size"]
        if len(out) < need:
            out.extend(b"\0" * (need - len(out)))
        return bytes(out), pointers

    def launch(self, grid, block, args, shared=0, queue=None, types=None):
        """One dispatch. On a host device, numpy arrays (and other foreign
        host memory) among the pointers are staged: copied into guarded lrrt
        allocations, the launch waits, and the results are copied back, so a
        kernel that runs past an array's end faults instead of writing over
        Python's heap. Elsewhere foreign host arrays are refused."""
        _require_live(self.module, "lrrt.Kernel.launch")
        cfg = launch_config(grid, block, shared)
        if isinstance(args, (bytes, bytearray)):
            data, pointers = bytes(args), []
        else:
            data, pointers = self._pack(args, types)
        host = self._host
        foreign = [(off, a, arr) for off, a in pointers if (arr := _host_array(a)) is not None]
        if host:
            for off, a in pointers:
                if isinstance(a, int) and a and not inside_allocation(a):
                    raise ArgumentError(1, f"lrrt.Kernel.launch({self.name})",
                                        f"raw address {a:#x} is not inside an lrrt allocation: on the host backend lrrt "
                                        f"guards only its own memory; pass the array itself (it is staged) or an lrrt "
                                        f"buffer")
        if foreign and not host:
            raise TypeError(f"lrrt.Kernel.launch({self.name}): a {type(foreign[0][1]).__name__} is host memory, "
                            f"which a {self.module.device.backend} kernel cannot use: copy it with dev.buffer_from()")
        if foreign:
            with Staging(self.module.device, foreign, data) as st:
                self._submit(cfg, st.data, queue)
                st.finish(queue, self.name)
            return
        self._submit(cfg, data, queue)

    def _submit(self, cfg, data, queue):
        buf = ctypes.create_string_buffer(data, len(data)) if data else None
        if queue is None:
            check(lib.lr_launch(self._h, ctypes.byref(cfg), buf, len(data)), "lr_launch")
        else:
            check(lib.lr_launch_on_queue(queue._h, self._h, ctypes.byref(cfg), buf, len(data)), "lr_launch_on_queue")


class Queue:
    def __init__(self, device):
        self._h, self._generation = None, _Runtime.generation
        q = ctypes.c_void_p()
        check(lib.lr_queue_create(device._h, ctypes.byref(q)), "lr_queue_create")
        self._h, self.device = q, device

    def synchronize(self):
        _require_live(self, "lrrt.Queue.synchronize")
        check(lib.lr_queue_synchronize(self._h), "lr_queue_synchronize")

    def __del__(self):
        try:
            if self._h and not _stale(self):
                lib.lr_queue_destroy(self._h)
                self._h = None
        except Exception:
            pass


class Event:
    def __init__(self, device):
        self._h, self._generation = None, _Runtime.generation
        e = ctypes.c_void_p()
        check(lib.lr_event_create(device._h, ctypes.byref(e)), "lr_event_create")
        self._h = e

    def record(self, queue=None):
        _require_live(self, "lrrt.Event.record")
        if queue is None:
            check(lib.lr_event_record(self._h), "lr_event_record")
        else:
            check(lib.lr_event_record_on_queue(self._h, queue._h), "lr_event_record_on_queue")

    def synchronize(self):
        _require_live(self, "lrrt.Event.synchronize")
        check(lib.lr_event_synchronize(self._h), "lr_event_synchronize")

    def elapsed_ns(self, end):
        ns = ctypes.c_uint64()
        check(lib.lr_event_elapsed_time_ns(self._h, end._h, ctypes.byref(ns)), "lr_event_elapsed_time_ns")
        return ns.value

    def __del__(self):
        try:
            if self._h and not _stale(self):
                lib.lr_event_destroy(self._h)
                self._h = None
        except Exception:
            pass


def _c_name(name, what):
    """A name for the C ABI: a str without NUL (which would cut it short)."""
    if not isinstance(name, str):
        raise TypeError(f"{what}: give a str, not {type(name).__name__}")
    if "\0" in name:
        raise ValueError(f"{what}: {name!r} holds a NUL character")
    return name.encode()
