"""Triton 3.6 tensor descriptors through lrrt.triton (docs/python.md#triton).

Triton desugars a `tensordesc` parameter into a 128-byte CUtensorMap, then
the tensor's shape (i32 each) and strides (i64 each, in elements), all
outermost first (src/formats/triton_signature.cpp; lr_triton_describe lists
the parts as "<name>.shape<k>" / "<name>.stride<k>" with "part_of"). The map
is encoded by lr_tensor_map_encode with the box, swizzle and element type of
the entry's tensordesc_meta and L2 promotion 128B, exactly as a manifest's
Triton tensor_map is (src/bundle/manifest_triton.cpp); the arguments are
placed at the kernel's declared offsets (a CUtensorMap's alignment is of the
constant bank's address, which only the code object's offsets account for).
"""
import operator
import struct

from ._args import TRITON_CODES, TRITON_TYPES, check_pointee, parse_type, whole
from ._buffer import Buffer, _Runtime
from ._foreign import address_of, foreign_extent
from ._lib import ArgumentError, Error

_SWIZZLES = ("none", "32B", "64B", "128B")
_I32_MAX = 2**31 - 1
_I64_MAX = 2**63 - 1
# struct codes of the scalar parts and the map
_PART_CODES = {"i32": "i", "i64": "q"}


class TensorDescriptor:
    """lrrt's form of Triton 3.6's triton.tools.tensor_descriptor.TensorDescriptor:
    base (an lrrt buffer, a device tensor or a device address), shape and
    strides (in elements, outermost first, the last stride 1; strides None:
    dense), block_shape (the kernel's block) and padding ("zero" or "nan":
    what a load past the edge reads). lrrt.triton takes this or Triton's own
    object (the same attributes)."""

    def __init__(self, base, shape, strides=None, block_shape=(), padding="zero"):
        where = "lrrt.triton.TensorDescriptor"
        shape = _ints(shape, "shape", where, TypeError)
        if strides is None:
            strides = [1] * len(shape)
            for i in range(len(shape) - 2, -1, -1):
                strides[i] = strides[i + 1] * shape[i + 1]
        self.base, self.shape, self.strides = base, shape, _ints(strides, "strides", where, TypeError)
        self.block_shape, self.padding = _ints(block_shape, "block_shape", where, TypeError), padding

    def __repr__(self):
        return (f"lrrt.triton.TensorDescriptor(shape={self.shape}, strides={self.strides}, "
                f"block_shape={self.block_shape}, padding={self.padding!r})")


def _ints(value, what, where, error=None):
    """value as a list of ints: whole numbers only (operator.index, as a
    tensor's shape holds them), never a float cut to an int (64.7 is not a
    stride of 64), a string read as a number or a bool. error: the exception
    class (default: ArgumentError naming where)."""
    def refuse(message):
        if error is None:
            return ArgumentError(1, where, message)
        return error(f"{where}: {message}")
    if isinstance(value, (str, bytes)):
        raise refuse(f"{what} must be a sequence of integers, not {value!r}")
    try:
        items = list(value)
    except TypeError:
        raise refuse(f"{what} must be a sequence of integers, not {value!r}") from None
    out = []
    for k, v in enumerate(items):
        if isinstance(v, bool):
            raise refuse(f"{what}[{k}] is {v!r}: give a whole number, not a bool")
        try:
            out.append(operator.index(v))
        except TypeError:
            raise refuse(f"{what}[{k}] is {v!r}: give a whole number, not {type(v).__name__}") from None
    return out


def _allocation_end(base, address):
    """The end address of the allocation holding the descriptor's base at
    address, when lrrt knows it: an lrrt buffer, a foreign tensor or array
    (its whole storage), or a raw address inside a live lrrt buffer. None
    otherwise (memory lrrt knows nothing of)."""
    if isinstance(base, Buffer):
        return base.ptr + base.nbytes
    extent = foreign_extent(base)
    if extent is not None:
        return extent[0] + extent[1]
    if isinstance(base, int):
        for start, nbytes in list(_Runtime.allocations.items()):
            if start <= address < start + max(nbytes, 1):
                return start + nbytes
    return None


def check_view_inside(p, base, address, shape, strides, where):
    """Refuses a view whose last element lies past the end of its base's
    allocation (the manifest path refuses the same, src/bundle/
    manifest_tensor_map.cpp): a TMA copy through it would read or write
    memory the tensor does not own."""
    end = _allocation_end(base, address)
    if end is None:
        return
    esize = p["tensordesc"].get("elem_size") or 1
    reach = (sum((n - 1) * st for n, st in zip(shape, strides)) + 1) * esize
    if address + reach > end:
        raise ArgumentError(1, where, f"the descriptor's view (shape {shape}, strides {strides}) reaches byte {reach} "
                            f"from its base, whose allocation has {max(end - address, 0)} bytes from there")


def descriptor_parts(p, d, where):
    """(base, shape, strides, oob_fill) of descriptor d for Triton parameter
    p (its lr_triton_describe entry), every field checked against the
    kernel's descriptor type; errors name the parameter (where)."""
    td = p["tensordesc"]
    missing = [f for f in ("base", "shape", "strides", "block_shape") if not hasattr(d, f)]
    if missing:
        raise ArgumentError(1, where, f"expected a tensor descriptor (Triton's TensorDescriptor or "
                            f"lrrt.triton.TensorDescriptor: base, shape, strides, block_shape), not a "
                            f"{type(d).__name__} (it has no {', '.join(missing)})")
    rank = len(td["block_shape"])
    shape = _ints(d.shape, "shape", where)
    strides = _ints(d.strides, "strides", where)
    block = _ints(d.block_shape, "block_shape", where)
    if len(shape) != rank or len(strides) != rank:
        raise ArgumentError(1, where, f"the kernel's descriptor is {rank}-D ({p['aot']}), the descriptor has "
                            f"{len(shape)} shape and {len(strides)} stride entries")
    if block != list(td["block_shape"]):
        raise ArgumentError(1, where, f"the kernel was compiled for block_shape {list(td['block_shape'])}, the "
                            f"descriptor's is {block}")
    for k, s in enumerate(shape):
        if not 1 <= s <= _I32_MAX:
            raise ArgumentError(1, where, f"shape[{k}] is {s}: the kernel takes it as an i32 from 1 to {_I32_MAX}")
    for k, s in enumerate(strides):
        if not 0 <= s <= _I64_MAX:
            raise ArgumentError(1, where, f"strides[{k}] is {s}: the kernel takes it as an i64 from 0 to {_I64_MAX}")
    if strides[-1] != 1:
        raise ArgumentError(1, where, f"the innermost stride must be 1 (a tensor map's innermost dimension is "
                            f"contiguous), not {strides[-1]}")
    padding = getattr(d, "padding", "zero")
    if padding is None:
        padding = "zero"
    if padding not in ("zero", "nan"):
        raise ArgumentError(1, where, f"padding {padding!r} is not \"zero\" or \"nan\"")
    base = d.base
    if type(base).__name__ == "ndarray" or hasattr(base, "__array_interface__"):
        raise ArgumentError(1, where, f"the descriptor's base is a {type(base).__name__}: host memory a tensor map "
                            f"cannot address; pass an lrrt buffer (dev.buffer_from(array)) or a device tensor")
    check_pointee(base, parse_type(p["type"])[1:], where)
    return base, shape, strides, padding


def encode(device, p, d, where):
    """The packed values of descriptor parameter p: [map bytes, shape..., strides...]."""
    base, shape, strides, padding = descriptor_parts(p, d, where)
    td = p["tensordesc"]
    try:
        address = address_of(base)
    except (TypeError, ValueError, OverflowError) as e:
        raise ArgumentError(1, where, f"the descriptor's base: {e}") from None
    except Error as e:  # a freed buffer
        raise Error(e.status, where, f"the descriptor's base: {e.operation}: {e.message}") from None
    check_view_inside(p, base, address, shape, strides, where)
    try:
        m = device._tensor_map(td["elem_type"], address, shape, td["box"], strides, swizzle=_SWIZZLES[td["swizzle"]],
                               l2_promotion="128B", oob_fill=padding, where=where)
    except Error as e:
        raise Error(e.status, where, f"{e.operation}: {e.message}") from None
    except (ValueError, TypeError, OverflowError) as e:
        raise ArgumentError(1, where, str(e)) from None
    return [m, *shape, *strides]


def unsupported(device, params, kernel):
    """The error for a kernel with descriptors on a device without tensor
    maps (host, hsa), naming the first descriptor parameter; None on cuda."""
    if device.backend == "cuda":
        return None  # an sm below 90 is refused by lr_tensor_map_encode, naming the parameter
    p = next(p for p in params if "tensordesc" in p)
    return Error(4, "lrrt.triton", f"{kernel}: parameter {p['name']} is a tensor descriptor ({p['aot']}): its "
                 f"CUtensorMap needs a cuda sm_90+ device, this one is {device.backend}")


def slot_code(p):
    """The struct code of one kernel parameter's slot (map, part, pointer or
    scalar), or None for a scalar type lrrt cannot pass."""
    if "tensordesc" in p:
        return "128s"
    if "part_of" in p:
        return _PART_CODES[p["type"]]
    if p["pointer"]:
        return "Q"
    t = TRITON_TYPES.get(p["type"])
    return None if t is None else TRITON_CODES[t]


def declared_struct(params, hidden_count, declared, kernel):
    """One struct.Struct placing every parameter (then the hidden scratch
    pointers) at the code object's declared offsets. declared: one
    {"offset", "size"} per parameter, in order (Kernel.args, or `lrrt
    inspect`'s layout of the cubin)."""
    if len(declared) != len(params) + hidden_count:
        raise Error(4, "lrrt.triton", f"{kernel}: the code object declares {len(declared)} parameter(s), the Triton "
                    f"entry has {len(params)} and {hidden_count} hidden scratch pointer(s)")
    fmt, cursor = ["<"], 0
    names = [p["name"] for p in params] + [f"hidden scratch pointer {j}" for j in range(hidden_count)]
    codes = [slot_code(p) for p in params] + ["Q"] * hidden_count
    for name, code, decl in zip(names, codes, declared):
        if code is None:
            raise Error(4, "lrrt.triton", f"{kernel}: parameter {name}: lrrt cannot pass its type")
        size = struct.calcsize("<" + code)
        offset = whole(decl["offset"], f"{kernel}: parameter {name}'s declared offset", 0, 2**32 - 1)
        if decl["size"] != size or offset < cursor:
            raise Error(4, "lrrt.triton", f"{kernel}: parameter {name} is {size} bytes after offset {cursor}; the code "
                        f"object declares {decl['size']} bytes at offset {offset}")
        if offset > cursor:
            fmt.append(f"{offset - cursor}x")
        fmt.append(code)
        cursor = offset + size
    if cursor % 8:
        fmt.append(f"{-cursor % 8}x")
    return struct.Struct("".join(fmt))
