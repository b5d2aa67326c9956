"""Kernel arguments from Python values: range-checked integers (no silent
ctypes wrap), the kernel's declared types (a float64 array is not a float*,
np.int32 is not a float), addresses of foreign memory."""
import collections.abc
import ctypes
import operator
import struct

from . import _np
from ._lib import ArgumentError, ArgumentRangeError, Dim3, LaunchConfig

U32_MAX = 2**32 - 1


def whole(value, what, lo=0, hi=2**64 - 1):
    """value as an int in [lo, hi], else TypeError (not a whole number),
    ValueError (below lo) or OverflowError (above hi), naming what."""
    if isinstance(value, bool):
        raise TypeError(f"{what}: give a whole number, not a bool")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{what}: give a whole number, not {type(value).__name__}") from None
    if v < lo:
        raise ValueError(f"{what}: {v} is below {lo}")
    if v > hi:
        raise OverflowError(f"{what}: {v} does not fit (at most {hi})")
    return v


def unordered_dims(value):
    """True for a value tuple() would take apart but that is no list of
    dimensions: a str or bytes (b"ab" is (97, 98)), a mapping (its keys) or
    a set (no order)."""
    return isinstance(value, (str, bytes, bytearray, memoryview, collections.abc.Mapping, collections.abc.Set))


def dim3(value, what):
    """(x, y, z) from an int or a sequence of 1 to 3 ints, each 1 to 2^32-1."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    if unordered_dims(value):
        raise TypeError(f"{what}: give an int or a tuple of 1 to 3 ints, not {type(value).__name__}")
    try:
        dims = tuple(value)
    except TypeError:
        raise TypeError(f"{what}: give an int or a tuple of 1 to 3 ints, not {type(value).__name__}") from None
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{what}: {len(dims)} dimensions; lrrt launches take 1 to 3")
    dims = tuple(whole(d, f"{what}[{i}]", 1, U32_MAX) for i, d in enumerate(dims))
    return dims + (1,) * (3 - len(dims))


# C type names (strip const/volatile/spaces, lower case) and Triton's: (family, bytes)
_C_TYPES = {}
for _names, _fam, _size in (
        (("float", "f32", "fp32"), "f", 4), (("double", "f64", "fp64"), "f", 8),
        (("half", "_float16", "__half", "f16", "fp16"), "f", 2),
        (("__bf16", "bfloat16", "__nv_bfloat16", "hip_bfloat16", "bf16"), "bf", 2),
        (("int", "signed", "signedint", "int32_t", "s32", "i32"), "i", 4),
        (("unsigned", "unsignedint", "uint32_t", "u32"), "i", 4),
        (("long", "signedlong", "unsignedlong", "longint", "longlong", "unsignedlonglong", "int64_t", "uint64_t",
          "size_t", "ptrdiff_t", "s64", "u64", "i64"), "i", 8),
        (("short", "unsignedshort", "int16_t", "uint16_t", "s16", "u16", "i16"), "i", 2),
        (("char", "signedchar", "unsignedchar", "int8_t", "uint8_t", "s8", "u8", "i8", "bool", "_bool", "i1"), "i", 1)):
    for _n in _names:
        _C_TYPES[_n] = (_fam, _size)


def parse_type(type_name):
    """(pointer, family, bytes) of a declared type name ('const float*',
    'uint32_t', Triton's 'f32'); family None when lrrt does not know it."""
    t = "".join(type_name.split()).lower()
    for q in ("const", "volatile", "__restrict__", "restrict"):
        t = t.replace(q, "")
    pointer = t.endswith("*") or t.endswith("&")
    t = t.rstrip("*&")
    fam, size = _C_TYPES.get(t, (None, 0))
    return pointer, fam, size


_FAMILY_WORDS = {"f": "floating-point", "i": "integer", "bf": "bfloat16"}


def array_family(dtype):
    """(family, bytes) of a numpy/torch dtype, or None if unknown."""
    np = _np.loaded()
    if np is not None and isinstance(dtype, np.dtype):
        kind = {"f": "f", "i": "i", "u": "i", "b": "i"}.get(dtype.kind)
        return (kind, dtype.itemsize) if kind else None
    # torch.dtype: is_floating_point, itemsize
    try:
        size = int(dtype.itemsize)
        if str(dtype) == "torch.bfloat16":
            return "bf", 2
        return ("f" if dtype.is_floating_point else "i"), size
    except (AttributeError, TypeError, ValueError):
        return None


def check_pointee(value, declared, where):
    """Refuses an array/tensor/typed buffer whose element type is not the
    pointer's declared one (a float64 array for a float*). declared: (family,
    bytes) or family None (unknown: not checked)."""
    fam, size = declared
    if fam is None:
        return
    dtype = getattr(value, "dtype", None)
    if dtype is None or getattr(value, "_untyped", False):
        return
    got = array_family(dtype)
    if got is None or got == (fam, size):
        return
    raise ArgumentError(1, where, f"the kernel's pointer is to {size}-byte {_FAMILY_WORDS[fam]} elements, "
                    f"but the argument's elements are {dtype} ({got[1]}-byte {_FAMILY_WORDS.get(got[0], got[0])})")


_STRUCT = {("f", 2): "e", ("f", 4): "f", ("f", 8): "d", ("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q"}
_UNSIGNED = {"uint32_t", "unsigned", "unsignedint", "u32", "uint64_t", "unsignedlong", "unsignedlonglong", "size_t",
             "u64", "uint16_t", "unsignedshort", "u16", "uint8_t", "unsignedchar", "u8", "bool", "_bool", "i1"}


def scalar_code(type_name):
    """The struct code of a declared scalar type, or None."""
    pointer, fam, size = parse_type(type_name)
    if pointer or fam is None:
        return None
    if fam == "bf":
        return "bf16"
    code = _STRUCT[(fam, size)]
    t = "".join(type_name.split()).lower().replace("const", "").replace("volatile", "")
    return code.upper() if t in _UNSIGNED else code


def check_scalar(value, type_name, where):
    """Refuses a scalar of the wrong kind for a declared scalar type: a numpy
    integer or a bool for a float, any float for an integer, a numpy scalar of
    another size. Python ints are taken for floats (exact numbers)."""
    _, fam, size = parse_type(type_name)
    if fam is None:
        return
    np = _np.loaded()
    if isinstance(value, bool):
        if fam != "i" or size != 1:
            raise ArgumentError(1, where, f"a bool for the kernel's {type_name}")
        return
    if np is not None and isinstance(value, np.generic):
        got = array_family(value.dtype)
        want = ("f", 2) if fam == "bf" else (fam, size)
        if got != want and not (fam == "f" and got is not None and got[0] == "f" and got[1] < size):
            raise ArgumentError(1, where, f"a {value.dtype} scalar for the kernel's {type_name}: give "
                            f"{'a Python number' if fam != 'bf' else 'a Python float'} or a scalar of its type")
        return
    if isinstance(value, float) and fam == "i":
        raise ArgumentError(1, where, f"a float ({value!r}) for the kernel's integer {type_name}")
    if not isinstance(value, (int, float)):
        raise ArgumentError(1, where, f"a {type(value).__name__} for the kernel's {type_name}")


def bf16_bits(value):
    f = struct.unpack("<I", struct.pack("<f", float(value)))[0]
    f += 0x7FFF + ((f >> 16) & 1)  # round to nearest even
    return (f >> 16) & 0xFFFF


def pack_value(value, code, where):
    """struct.pack of one scalar, OverflowError/TypeError naming where."""
    try:
        if code == "bf16":
            return struct.pack("<H", bf16_bits(value))
        return struct.pack("<" + code, value if code not in "efd" else float(value))
    except (struct.error, OverflowError) as e:
        if isinstance(value, (int, float)) or hasattr(value, "__index__"):
            raise ArgumentRangeError(1, where, f"{value!r} does not fit the kernel's type ({e})") from None
        raise ArgumentError(1, where, f"cannot take {type(value).__name__}: {e}") from None


def natural_alignment(size):
    """Raw bytes have no type to align by: the largest power of two up to 8
    that divides their length (as a manifest's "bytes" argument)."""
    a = 1
    while a < 8 and size % (a * 2) == 0:
        a *= 2
    return a


def aggregate(value, declared, type_name, where):
    """(bytes, alignment) of an argument passed by value as a block of bytes,
    or None when value is not one: a ctypes.Structure or Union (its bytes), a
    numpy structured scalar (np.void), bytes, a complex number (numpy
    complex64/complex128 as they are; a Python complex as c128, or c64 where
    the type given is "c64" or the kernel's argument is 8 bytes). declared:
    (pointer, family, bytes) of the kernel's declared type, family None when
    unknown, or None without a layout."""
    np = _np.loaded()
    if isinstance(value, (ctypes.Structure, ctypes.Union)):
        return bytes(value), ctypes.alignment(value)
    if np is not None and isinstance(value, np.void):
        return value.tobytes(), value.dtype.alignment
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if not data:
            raise ArgumentError(1, where, "empty bytes: a by-value argument has at least one byte")
        return data, natural_alignment(len(data))
    is_np_complex = np is not None and isinstance(value, np.complexfloating)
    if not (is_np_complex or isinstance(value, complex)):
        return None
    if declared is not None and declared[1] is not None and not declared[0]:
        # A complex number for a real scalar would pass a size check by luck
        # (c64 and double are both 8 bytes).
        raise ArgumentError(1, where, f"a complex number for the kernel's real {declared[1]}-family scalar")
    if is_np_complex:
        if type_name not in (None, "value") and {"c64": 8, "c128": 16}.get(type_name) != value.itemsize:
            raise ArgumentError(1, where, f"a {value.dtype} scalar given as {type_name}")
        return value.tobytes(), value.itemsize // 2
    single = type_name == "c64" or (type_name in (None, "value") and declared is not None and declared[2] == 8)
    if type_name not in (None, "value", "c64", "c128"):
        raise ArgumentError(1, where, f"a complex number given as {type_name} (c64 or c128)")
    try:
        return struct.pack("<ff" if single else "<dd", value.real, value.imag), 4 if single else 8
    except OverflowError as e:
        raise ArgumentRangeError(1, where, f"{value!r} does not fit c64 ({e})") from None


def launch_config(grid, block, shared=0):
    """The lr_launch_config_t, every field range-checked (no silent wrap)."""
    return LaunchConfig(Dim3(*dim3(grid, "grid")), Dim3(*dim3(block, "block")),
                        whole(shared, "shared memory bytes", 0, U32_MAX))


# Triton's scalar types as lrrt's, and their struct codes in a launch block
# (lrrt.triton, its C launcher's layout and tensor descriptors' parts).
TRITON_TYPES = {"i1": "u8", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "u8": "u8", "u16": "u16", "u32": "u32",
                "u64": "u64", "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}
# struct codes of the argument block, by Triton type ("H": bf16 as its bits)
TRITON_CODES = {"u8": "B", "u16": "H", "u32": "I", "u64": "Q", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "f16": "e",
                "bf16": "H", "f32": "f", "f64": "d"}
