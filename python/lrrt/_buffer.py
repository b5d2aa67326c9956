"""lrrt allocations from Python (Buffer, PinnedBuffer) and their lifetime:
a freed buffer refuses every use, a numpy view keeps its buffer's memory
alive (free() waits for the last view), and lrrt.shutdown() is refused
while a view lives, so no view ever points at memory lrrt gave back."""
import ctypes
import weakref

from . import _np
from ._args import whole
from ._lib import Error, check, lib

H2D, D2H, D2D = 0, 1, 2
LR_ERROR_INVALID_ARGUMENT, LR_ERROR_NOT_INITIALIZED, LR_ERROR_BUSY = 1, 2, 13


def _plain_dtype(np, dtype, what):
    """A numpy dtype of plain data: object dtypes hold pointers, which bytes
    from a device would forge."""
    dt = np.dtype(dtype)
    if dt.hasobject:
        raise TypeError(f"lrrt.{what}: dtype {dt} holds Python objects; lrrt buffers hold plain data")
    return dt


class _Runtime:
    """Which lr_init the Python objects belong to: shutdown() moves on, and
    a buffer of an earlier one refuses every use (its pointer is gone)."""
    generation = 0
    views = {}  # id -> weakref of the ctypes arrays under live numpy views
    allocations = {}  # start -> bytes of every live Buffer: the host memory lrrt guards
    launchers = weakref.WeakSet()  # lrrt.triton's bound launchers: disarmed by shutdown


def inside_allocation(address):
    """True if address lies in a live lrrt allocation made from Python."""
    for start, nbytes in list(_Runtime.allocations.items()):
        if start <= address < start + max(nbytes, 1):
            return True
    return False


def live_views():
    return len(_Runtime.views)


def _track(table, obj, on_empty=None):
    """Adds obj to an id -> weakref table that forgets it when it dies
    (ctypes arrays are not hashable, so no WeakSet); on_empty() runs when
    the table becomes empty that way."""
    key = id(obj)

    def forget(_):
        table.pop(key, None)
        if on_empty is not None and not table:
            on_empty()
    table[key] = weakref.ref(obj, forget)


def _release_if_freed(buffer_ref):
    b = buffer_ref()
    if b is not None and b._freed:
        b._release()


class Buffer:
    """Device memory (lr_malloc). numpy copies both ways; on a host device a
    numpy view (`.numpy()`), on cuda `__cuda_array_interface__`. dtype None:
    untyped bytes (passed to any pointer)."""

    _alloc, _free, _what = "lr_malloc", "lr_free", "lr_malloc"

    def __init__(self, device, nbytes, dtype=None, shape=None):
        self.device = device
        self.ptr = 0
        self.nbytes = whole(nbytes, f"lrrt.{type(self).__name__}: nbytes", 0, 2**63 - 1)
        self._untyped = dtype is None
        np = _np.loaded() if dtype is None else _np.numpy("a Buffer with a dtype")
        self.dtype = _plain_dtype(np, dtype if dtype is not None else "u1", type(self).__name__) if np is not None \
            else None
        item = self.dtype.itemsize if self.dtype is not None else 1
        if shape is None:
            self.shape = (self.nbytes // item,)
        else:
            self.shape = tuple(whole(d, f"lrrt.{type(self).__name__}: shape", 0, 2**63 - 1) for d in
                               ((shape,) if isinstance(shape, int) else shape))
            count = 1
            for d in self.shape:
                count *= d
            if count * item > self.nbytes:
                raise ValueError(f"lrrt.{type(self).__name__}: shape {self.shape} of {item}-byte elements needs "
                                 f"{count * item} bytes, more than the buffer's {self.nbytes}")
        self._views = {}
        self._freed = False
        self._generation = _Runtime.generation
        p = ctypes.c_void_p()
        check(getattr(lib, self._alloc)(device._h, ctypes.c_size_t(self.nbytes), ctypes.byref(p)), self._what)
        self.ptr = p.value or 0
        if self.ptr:
            _Runtime.allocations[self.ptr] = self.nbytes

    def _dtype(self, np):
        """The element type: bytes for a buffer made before numpy was imported."""
        return self.dtype if self.dtype is not None else np.dtype("u1")

    def _live(self, what):
        """The pointer, or Error if the buffer was freed or its runtime shut down."""
        if self._freed:
            raise Error(LR_ERROR_INVALID_ARGUMENT, f"lrrt.Buffer.{what}", "the buffer was freed")
        if self._generation != _Runtime.generation:
            raise Error(LR_ERROR_NOT_INITIALIZED, f"lrrt.Buffer.{what}",
                        "the buffer belongs to an lrrt runtime that was shut down")
        return self.ptr

    def free(self):
        """Gives the memory back now, or, while numpy views of it live, when
        the last of them goes. Either way the buffer refuses every use after."""
        self._freed = True
        if not len(self._views):
            self._release()

    def _release(self):
        ptr, self.ptr = self.ptr, 0
        if ptr and self._generation == _Runtime.generation:
            _Runtime.allocations.pop(ptr, None)
            getattr(lib, self._free)(self.device._h, ctypes.c_void_p(ptr))

    def __del__(self):
        try:
            self._release()
        except Exception:
            pass

    def data_ptr(self):
        return self._live("data_ptr")

    def _offset(self, what, offset):
        offset = whole(offset, f"lrrt.Buffer.{what}: offset", 0, 2**63 - 1)
        if offset > self.nbytes:
            raise ValueError(f"lrrt.Buffer.{what}: offset {offset} is past the buffer's end ({self.nbytes} bytes)")
        return offset

    def _range(self, what, nbytes, offset):
        offset = self._offset(what, offset)
        if offset + nbytes > self.nbytes:
            raise ValueError(f"lrrt.Buffer.{what}: {nbytes} bytes at offset {offset} run past the buffer's end "
                             f"({self.nbytes} bytes)")
        return offset

    def copy_from(self, array, offset=0):
        """Copies a numpy array (or any bytes-like object) in, at a byte offset."""
        ptr = self._live("copy_from")
        np = _np.loaded()
        if isinstance(array, str):
            raise TypeError("lrrt.Buffer.copy_from: give an array or bytes, not a str")
        if np is not None and not isinstance(array, (bytes, bytearray, memoryview)):
            a = np.ascontiguousarray(array)
            _plain_dtype(np, a.dtype, "Buffer.copy_from")
            src, n, keep = a.ctypes.data, a.nbytes, a
        else:
            mv = memoryview(array).cast("B")
            n = mv.nbytes
            keep = (ctypes.c_char * n).from_buffer_copy(mv) if n else None
            src = ctypes.addressof(keep) if n else 0
        offset = self._range("copy_from", n, offset)
        if n:
            check(lib.lr_memcpy(self.device._h, ctypes.c_void_p(ptr + offset), ctypes.c_void_p(src),
                                ctypes.c_size_t(n), H2D), "lr_memcpy")
        del keep

    def to_bytes(self, nbytes=None, offset=0):
        """The buffer's bytes (a copy), without numpy."""
        ptr = self._live("to_bytes")
        n = self.nbytes if nbytes is None else whole(nbytes, "lrrt.Buffer.to_bytes: nbytes", 0, 2**63 - 1)
        if nbytes is None:
            n -= self._offset("to_bytes", offset)
        offset = self._range("to_bytes", n, offset)
        out = ctypes.create_string_buffer(n)
        if n:
            check(lib.lr_memcpy(self.device._h, out, ctypes.c_void_p(ptr + offset), ctypes.c_size_t(n), D2H),
                  "lr_memcpy")
        return out.raw

    def to_numpy(self, dtype=None, shape=None, offset=0):
        np = _np.numpy("Buffer.to_numpy")
        ptr = self._live("to_numpy")
        dt = _plain_dtype(np, dtype, "Buffer.to_numpy") if dtype is not None else self._dtype(np)
        if shape is None:
            shape = ((self.nbytes - self._offset("to_numpy", offset)) // dt.itemsize,)
        elif isinstance(shape, int):
            shape = (shape,)
        shape = tuple(whole(d, "lrrt.Buffer.to_numpy: shape", 0, 2**63 - 1) for d in shape)
        count = 1
        for d in shape:
            count *= d
        offset = self._range("to_numpy", count * dt.itemsize, offset)
        out = np.empty(shape, dtype=dt)
        if out.nbytes:
            check(lib.lr_memcpy(self.device._h, ctypes.c_void_p(out.ctypes.data), ctypes.c_void_p(ptr + offset),
                                ctypes.c_size_t(out.nbytes), D2H), "lr_memcpy")
        return out

    def _host_view(self):
        np = _np.numpy("Buffer.numpy")
        ptr = self._live("numpy")
        count = 1
        for d in self.shape:
            count *= d
        if not ptr or not self.nbytes:
            return np.empty(self.shape, dtype=self._dtype(np))
        raw = (ctypes.c_uint8 * self.nbytes).from_address(ptr)
        # The view's base is raw, and raw holds the buffer: its memory lives
        # as long as any view does (free() waits for them, shutdown refuses).
        raw._lrrt_owner = self
        _track(self._views, raw, lambda ref=weakref.ref(self): _release_if_freed(ref))
        _track(_Runtime.views, raw)
        return np.frombuffer(raw, dtype=self._dtype(np), count=count).reshape(self.shape)

    def numpy(self):
        """A view without a copy: host devices only (their memory is host memory)."""
        self._live("numpy")
        if self.device.backend != "host":
            raise Error(4, "lrrt.Buffer.numpy", f"a {self.device.backend} buffer is not host memory: use to_numpy()")
        return self._host_view()

    def __array__(self, dtype=None, copy=None):
        if copy:
            a = self.to_numpy()
        else:
            a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    @property
    def __cuda_array_interface__(self):
        if self.device.backend != "cuda":
            raise AttributeError("__cuda_array_interface__: only cuda buffers have one")
        ptr = self._live("__cuda_array_interface__")
        return {"shape": self.shape, "typestr": self.dtype.str if self.dtype is not None else "|u1", "data": (ptr, False), "version": 3,
                "strides": None}


class PinnedBuffer(Buffer):
    _alloc, _free, _what = "lr_host_malloc", "lr_host_free", "lr_host_malloc"

    def numpy(self):
        return self._host_view()


def shutdown():
    """lr_shutdown, refused while a numpy view of lrrt memory lives (it
    would point at memory lrrt gives back). Every Buffer, Module, Kernel,
    Queue, Event and Graph of the runtime becomes unusable; lrrt starts
    again on the next Device.select/open."""
    check(_guarded_lr_shutdown(), "lr_shutdown")


def _guarded_lr_shutdown():
    """lr_shutdown's status, after the same check: what lrrt._lib.lib.lr_shutdown
    is, so that a direct call cannot leave a view over freed memory."""
    n = live_views()
    if n:
        raise Error(LR_ERROR_BUSY, "lr_shutdown", f"{n} numpy view(s) of lrrt memory are alive; drop them (del) "
                    f"before shutting down, or copy with to_numpy()")
    _Runtime.generation += 1
    _Runtime.allocations.clear()
    for run in list(_Runtime.launchers):  # their kernel handles are gone: every later call raises
        run.namespace["call"] = _after_shutdown
        if hasattr(run, "disarm"):  # a C launcher: every call takes the checked path, which raises
            run.disarm()
    return _raw_shutdown()


def _after_shutdown(*_):
    raise Error(LR_ERROR_NOT_INITIALIZED, "lrrt.triton launcher",
                "the kernel belongs to an lrrt runtime that was shut down; load it again")


_raw_shutdown = lib.lr_shutdown
lib.lr_shutdown = _guarded_lr_shutdown
