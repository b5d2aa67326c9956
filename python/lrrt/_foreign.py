"""Memory lrrt did not allocate, given to kernels and graphs: its
addresses, its whole allocations (for registration), and on the host
backend the staging of foreign host arrays through lrrt's guarded
allocations for an eager launch."""
import ctypes

from . import _np
from ._args import whole
from ._buffer import Buffer, _Runtime
from ._lib import Error, check, lib


def _stale(obj):
    """True for an object of a runtime that was shut down: its handle is
    gone, and destroying it again could hit a new object at that address."""
    return getattr(obj, "_generation", _Runtime.generation) != _Runtime.generation


class Registration:
    """lr_memory_register of [ptr, ptr + nbytes) on a device, dropped by
    close() or when collected. Holds the object so its memory outlives it."""

    def __init__(self, device, ptr, nbytes, keep=None):
        self.ptr, self._generation = 0, _Runtime.generation
        check(lib.lr_memory_register(device._h, ctypes.c_void_p(ptr), ctypes.c_size_t(nbytes)), "lr_memory_register")
        self.device, self.ptr, self.nbytes, self._keep = device, ptr, nbytes, keep

    def close(self):
        if self.ptr and _stale(self):
            self.ptr, self._keep = 0, None
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


def _host_array(x):
    """A numpy array over the same host memory as x (a numpy array, an
    __array_interface__ object, a CPU torch tensor), or None."""
    np = _np.loaded()
    if np is None or isinstance(x, Buffer):
        return None
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__array_interface__") or (hasattr(x, "device") and getattr(x.device, "type", None) == "cpu"
                                             and hasattr(x, "numpy")):
        a = x.numpy() if hasattr(x, "numpy") and not hasattr(x, "__array_interface__") else np.asarray(x)
        return a
    return None


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
        item = _np.numpy("__cuda_array_interface__").dtype(cai["typestr"]).itemsize
        shape, strides = cai["shape"], cai.get("strides")
        if not shape or 0 in shape:
            return None
        if strides is None:
            nbytes = item
            for d in shape:
                nbytes *= int(d)
        else:
            nbytes = item + sum((n - 1) * st for n, st in zip(shape, strides) if st > 0)
        return (int(cai["data"][0]), int(nbytes))
    np = _np.loaded()
    if np is not None and isinstance(x, np.ndarray):
        base = x
        while isinstance(base.base, np.ndarray):
            base = base.base
        lo, hi = np.byte_bounds(base)
        return (int(lo), int(hi - lo)) if hi > lo else None
    return None


def address_of(x):
    """The device address of a kernel argument: lrrt buffers, torch tensors
    (data_ptr), objects with __cuda_array_interface__, numpy arrays (host
    memory: for the host backend), raw int addresses (0 to 2^64-1)."""
    if isinstance(x, Buffer):
        return x._live("data_ptr")
    if hasattr(x, "data_ptr") and callable(x.data_ptr):
        return int(x.data_ptr())
    if hasattr(x, "__cuda_array_interface__"):
        return int(x.__cuda_array_interface__["data"][0])
    np = _np.loaded()
    if np is not None and isinstance(x, np.ndarray):
        if not x.flags["C_CONTIGUOUS"]:
            raise ValueError("a numpy array passed as a pointer must be C-contiguous")
        return int(x.ctypes.data)
    if isinstance(x, int) and not isinstance(x, bool):
        return whole(x, "a raw address", 0, 2**64 - 1)
    raise TypeError(f"cannot pass {type(x).__name__} as a pointer")


class Staging:
    """Foreign host arrays of one host-device launch, each whole allocation
    (numpy base) copied once into a guarded lrrt buffer, so that arguments
    sharing memory still share it; copied back after the kernel."""

    def __init__(self, device, foreign, data):
        np = _np.numpy("numpy arrays as kernel arguments")
        self.device, self.blocks, out = device, {}, bytearray(data)
        for off, _, arr in foreign:
            if arr.size and not arr.flags["C_CONTIGUOUS"]:
                raise ValueError("a numpy array passed as a pointer must be C-contiguous")
            base = arr
            while isinstance(base.base, np.ndarray):
                base = base.base
            lo, hi = np.byte_bounds(base)
            block = self.blocks.get((lo, hi))
            if block is None:
                buf = Buffer(device, max(hi - lo, 1))
                if hi > lo:
                    check(lib.lr_memcpy(device._h, ctypes.c_void_p(buf.ptr), ctypes.c_void_p(lo),
                                        ctypes.c_size_t(hi - lo), 0), "lr_memcpy")
                block = self.blocks[(lo, hi)] = (buf, base)
            out[off:off + 8] = (block[0].ptr + (int(arr.ctypes.data) - lo)).to_bytes(8, "little")
        self.data = bytes(out)

    def finish(self, queue, name):
        (queue.synchronize if queue is not None else self.device.synchronize)()
        for (lo, hi), (buf, base) in self.blocks.items():
            if hi <= lo:
                continue
            if base.flags["WRITEABLE"]:
                check(lib.lr_memcpy(self.device._h, ctypes.c_void_p(lo), ctypes.c_void_p(buf.ptr),
                                    ctypes.c_size_t(hi - lo), 1), "lr_memcpy")
            elif buf.to_bytes() != ctypes.string_at(lo, hi - lo):
                raise Error(9, f"lrrt.Kernel.launch({name})", "the kernel wrote to a read-only numpy array "
                            "(its result is dropped)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for buf, _ in self.blocks.values():
            buf.free()


def _require_live(obj, what):
    """Error for an object of a runtime that lrrt.shutdown() ended: its
    handle is gone (and might name a new object by now)."""
    if _stale(obj):
        raise Error(2, what, "the object belongs to an lrrt runtime that was shut down")
