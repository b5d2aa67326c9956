"""liblrrt.so through ctypes: finding it, the C structs, status -> exception."""
import ctypes
import os
from pathlib import Path

c_u32, c_u64, c_size, c_void_p, c_char_p = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p


class Dim3(ctypes.Structure):
    _fields_ = [("x", c_u32), ("y", c_u32), ("z", c_u32)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", Dim3), ("block", Dim3), ("shared_memory_bytes", c_u32)]


class DeviceHandle(ctypes.Structure):
    _fields_ = [("index", c_u32)]


class MemoryStats(ctypes.Structure):
    _fields_ = [(n, c_u64) for n in (
        "live_bytes", "peak_live_bytes", "total_allocated_bytes", "total_freed_bytes", "allocation_count", "free_count",
        "pinned_host_live_bytes", "pinned_host_peak_live_bytes", "pinned_host_total_allocated_bytes",
        "pinned_host_total_freed_bytes", "pinned_host_allocation_count", "pinned_host_free_count",
        "h2d_copy_bytes", "d2h_copy_bytes", "d2d_copy_bytes", "memcpy_count")]


class DeviceProperties(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_char * 16), ("name", ctypes.c_char * 128), ("arch", ctypes.c_char * 128),
                ("backend_ordinal", c_u32), ("compute_units", c_u32), ("wave_size", c_u32),
                ("max_workgroup_size", c_u32), ("max_workgroup_dims", Dim3),
                ("max_shared_memory_per_workgroup", c_u64), ("memory_bytes", c_u64)]


class KernelArg(ctypes.Structure):
    _fields_ = [("offset", c_u32), ("size", c_u32), ("kind", ctypes.c_int), ("value_kind", ctypes.c_char * 48),
                ("name", ctypes.c_char * 64), ("type_name", ctypes.c_char * 64)]


class KernelProperties(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 128), ("has_arg_layout", c_u32), ("arg_count", c_u32),
                ("explicit_arg_count", c_u32), ("kernarg_size", c_u32), ("explicit_kernarg_size", c_u32),
                ("kernarg_align", c_u32), ("group_segment_size", c_u32), ("private_segment_size", c_u32),
                ("max_workgroup_size", c_u32)]


class GraphAccess(ctypes.Structure):
    _fields_ = [("pointer", c_void_p), ("offset", c_u64), ("bytes", c_u64), ("mode", ctypes.c_int)]


class InstantiateOptions(ctypes.Structure):
    _fields_ = [("max_lanes", c_u32), ("flags", c_u32)]


ARG_BY_VALUE, ARG_GLOBAL_BUFFER, ARG_DYNAMIC_SHARED, ARG_HIDDEN, ARG_OTHER = range(5)
STATUS_NAMES = ["LR_SUCCESS", "LR_ERROR_INVALID_ARGUMENT", "LR_ERROR_NOT_INITIALIZED", "LR_ERROR_ALREADY_INITIALIZED",
                "LR_ERROR_NOT_SUPPORTED", "LR_ERROR_RUNTIME", "LR_ERROR_OUT_OF_MEMORY", "LR_ERROR_INVALID_IMAGE",
                "LR_ERROR_NOT_FOUND", "LR_ERROR_KERNEL_FAULT", "LR_ERROR_TIMEOUT", "LR_ERROR_UNAVAILABLE",
                "LR_ERROR_DEVICE_LOST", "LR_ERROR_BUSY"]


class Error(RuntimeError):
    """An lrrt status other than LR_SUCCESS; message is lr_last_error_message()."""

    def __init__(self, status, operation, message):
        self.status = status
        self.status_name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else f"status {status}"
        self.operation = operation
        self.message = message
        super().__init__(f"{operation}: {self.status_name}: {message}")


class ArgumentError(Error, TypeError):
    """A kernel argument of the wrong kind or type (a float64 array for a
    float*): both an lrrt.Error and a TypeError."""


class ArgumentRangeError(Error, OverflowError):
    """A kernel argument that does not fit its declared type: both an
    lrrt.Error and an OverflowError."""


def _candidates():
    env = os.environ.get("LRRT_LIBRARY")
    if env:
        yield Path(env)
        return
    here = Path(__file__).resolve().parent
    yield here / "liblrrt.so"
    # A source checkout: python/lrrt -> <repo>/build/src/runtime/liblrrt.so
    for build in ("build", "build-release", "build-debug"):
        d = here.parent.parent / build / "src" / "runtime"
        if d.is_dir():
            yield from sorted(d.glob("liblrrt.so*"))
    yield Path("liblrrt.so")


def _load():
    tried = []
    for p in _candidates():
        if p.is_absolute() and not p.exists():
            tried.append(str(p))
            continue
        try:
            return ctypes.CDLL(str(p))
        except OSError as e:
            tried.append(f"{p} ({e})")
    raise ImportError("lrrt: cannot find liblrrt.so; set LRRT_LIBRARY to its path (tried: " + "; ".join(tried) + ")")


class TensorMapDesc(ctypes.Structure):
    """lr_tensor_map_desc_t (lrrt.h): CUDA's order, dimension 0 innermost."""
    _fields_ = [("dtype", ctypes.c_uint32), ("rank", ctypes.c_uint32), ("global_address", ctypes.c_void_p),
                ("global_dims", ctypes.c_uint64 * 5), ("global_strides", ctypes.c_uint64 * 4),
                ("box_dims", ctypes.c_uint32 * 5), ("element_strides", ctypes.c_uint32 * 5),
                ("interleave", ctypes.c_uint32), ("swizzle", ctypes.c_uint32), ("l2_promotion", ctypes.c_uint32),
                ("oob_fill", ctypes.c_uint32)]


lib = _load()
lib.lr_last_error_message.restype = c_char_p
lib.lr_status_string.restype = c_char_p
lib.lr_version_string.restype = c_char_p
lib.lr_device_select.argtypes = [c_char_p, c_u32, ctypes.POINTER(DeviceHandle)]
for _name in ("lr_device_get_properties", "lr_malloc", "lr_free", "lr_host_malloc", "lr_host_free", "lr_memcpy",
              "lr_module_load", "lr_queue_create", "lr_event_create", "lr_synchronize", "lr_get_memory_stats",
              "lr_reset_memory_stats", "lr_graph_create"):
    getattr(lib, _name).argtypes = None  # device passed by value as DeviceHandle
lib.lr_malloc.argtypes = [DeviceHandle, c_size, ctypes.POINTER(c_void_p)]
lib.lr_free.argtypes = [DeviceHandle, c_void_p]
lib.lr_host_malloc.argtypes = [DeviceHandle, c_size, ctypes.POINTER(c_void_p)]
lib.lr_host_free.argtypes = [DeviceHandle, c_void_p]
lib.lr_memory_register.argtypes = [DeviceHandle, c_void_p, c_size]
lib.lr_memory_unregister.argtypes = [DeviceHandle, c_void_p]
lib.lr_memcpy.argtypes = [DeviceHandle, c_void_p, c_void_p, c_size, ctypes.c_int]
lib.lr_module_load.argtypes = [DeviceHandle, c_void_p, c_size, ctypes.POINTER(c_void_p)]
lib.lr_device_get_properties.argtypes = [DeviceHandle, ctypes.POINTER(DeviceProperties)]
lib.lr_queue_create.argtypes = [DeviceHandle, ctypes.POINTER(c_void_p)]
lib.lr_event_create.argtypes = [DeviceHandle, ctypes.POINTER(c_void_p)]
lib.lr_synchronize.argtypes = [DeviceHandle]
lib.lr_tensor_map_encode.argtypes = [DeviceHandle, ctypes.POINTER(TensorMapDesc), c_void_p]
lib.lr_get_memory_stats.argtypes = [DeviceHandle, ctypes.POINTER(MemoryStats)]
lib.lr_reset_memory_stats.argtypes = [DeviceHandle]
lib.lr_graph_create.argtypes = [DeviceHandle, ctypes.POINTER(c_void_p)]
lib.lr_kernel_get.argtypes = [c_void_p, c_char_p, ctypes.POINTER(c_void_p)]
lib.lr_kernel_get_properties.argtypes = [c_void_p, ctypes.POINTER(KernelProperties)]
lib.lr_kernel_get_arg.argtypes = [c_void_p, c_u32, ctypes.POINTER(KernelArg)]
lib.lr_module_destroy.argtypes = [c_void_p]
lib.lr_module_kernel_count.argtypes = [c_void_p, ctypes.POINTER(c_u32)]
lib.lr_module_kernel_name.argtypes = [c_void_p, c_u32, ctypes.c_char_p, c_size]
lib.lr_launch.argtypes = [c_void_p, ctypes.POINTER(LaunchConfig), c_void_p, c_size]
lib.lr_launch_on_queue.argtypes = [c_void_p, c_void_p, ctypes.POINTER(LaunchConfig), c_void_p, c_size]
lib.lr_queue_destroy.argtypes = [c_void_p]
lib.lr_queue_synchronize.argtypes = [c_void_p]
lib.lr_event_destroy.argtypes = [c_void_p]
lib.lr_event_record.argtypes = [c_void_p]
lib.lr_event_record_on_queue.argtypes = [c_void_p, c_void_p]
lib.lr_event_synchronize.argtypes = [c_void_p]
lib.lr_event_elapsed_time_ns.argtypes = [c_void_p, c_void_p, ctypes.POINTER(c_u64)]
lib.lr_graph_destroy.argtypes = [c_void_p]
lib.lr_graph_add_kernel.argtypes = [c_void_p, c_void_p, ctypes.POINTER(LaunchConfig), c_void_p, c_size,
                                    ctypes.POINTER(GraphAccess), c_size, ctypes.POINTER(c_u32)]
lib.lr_graph_add_dependency.argtypes = [c_void_p, c_u32, c_u32]
lib.lr_graph_instantiate.argtypes = [c_void_p, ctypes.POINTER(InstantiateOptions), ctypes.POINTER(c_void_p)]
lib.lr_graph_exec_destroy.argtypes = [c_void_p]
lib.lr_graph_exec_launch.argtypes = [c_void_p, c_void_p]
lib.lr_graph_exec_synchronize.argtypes = [c_void_p]
lib.lr_graph_exec_set_kernargs.argtypes = [c_void_p, c_u32, c_size, c_void_p, c_size]
lib.lr_triton_describe.argtypes = [c_char_p, ctypes.c_char_p, ctypes.POINTER(c_size)]
lib.lr_triton_describe_texts.argtypes = [c_char_p, c_char_p, ctypes.c_char_p, ctypes.POINTER(c_size)]


def check(status, operation):
    if status != 0:
        raise Error(status, operation, (lib.lr_last_error_message() or b"").decode(errors="replace"))


def text_call(fn, name, *args):
    """Calls an lr_* function writing text (size query, then the text)."""
    size = c_size(0)
    fn(*args, None, ctypes.byref(size))
    if size.value == 0:
        check(fn(*args, None, ctypes.byref(size)), name)
    buf = ctypes.create_string_buffer(size.value)
    check(fn(*args, buf, ctypes.byref(size)), name)
    return buf.value.decode()
