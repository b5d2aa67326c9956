"""The pre-bound launcher of a Triton kernel over one grid: what Python adds
to lr_launch, cut to what changes per launch (docs/python.md).

Bound once: the grid (range-checked), the launch configuration, the scratch
pointers, the kernel handle, one struct.Struct of the whole block.
Per call: a class guard per argument, one struct pack of the launch block
(lr_launch_block_t's header, bound once, then the arguments: a fresh bytes
object, since ctypes releases the GIL during the call and a block shared
between calls could be repacked by another thread while lr_launch_block
reads it), and one ctypes call of lr_launch_block with argtypes=None and the
one bytes object as its argument: ctypes' cost grows with each argument it
passes, so the kernel, configuration and queue ride in the block.

The guard is what keeps the checks of the checked path (element types,
scalar kinds, freed buffers, host arrays on a GPU) off the fast path without
dropping them: an argument whose class (and dtype, for a pointer) is not the
one an earlier call checked goes through the checked path first, which
refuses it or learns it. Ranges are checked by struct itself: a value that
does not fit fails the pack and goes through the checked path for its error.

Where the C launcher (_fastlaunch.c, built beside liblrrt.so) loads, a bound
launcher is its Launcher instead: the same guards and packing in C and no
ctypes call, with this module's checked path behind it for anything its
guards do not pass. LRRT_PYTHON_LAUNCHER chooses: auto (the C launcher where
it loads, else ctypes), c (the C launcher, else ImportError at bind), ctypes.
"""
import ctypes
import importlib.machinery
import importlib.util
import os
import struct
from pathlib import Path

from . import Queue
from ._args import TRITON_CODES, TRITON_TYPES, bf16_bits
from ._buffer import Buffer, _Runtime
from ._foreign import _stale
from ._lib import Error, check, lib


def _prepared(name):
    f = lib._FuncPtr((name, lib))  # a fresh function object: argtypes None, no per-argument conversion
    f.restype = ctypes.c_int
    return f


_LAUNCH_BLOCK = _prepared("lr_launch_block")
_HEADER = "QQQQ"  # lr_launch_block_t: kernel, config, queue, args_size (32 bytes; the arguments follow)


_C_ABI = 1  # _fastlaunch.c's ABI constant this module speaks
_C_CODES = {"b", "h", "i", "q", "B", "H", "I", "Q", "f", "d"}  # struct codes the C launcher writes as struct does
_c_module = None  # (module or None, why not) once looked for


def _c_launcher_module():
    """(_fastlaunch module or None, why it is not used)."""
    global _c_module
    if _c_module is None:
        _c_module = _find_c_launcher()
    return _c_module


def _find_c_launcher():
    places = [Path(__file__).resolve().parent]
    if os.path.sep in lib._name:  # the folder of the liblrrt.so ctypes loaded
        places.append(Path(lib._name).resolve().parent)
    tried = []
    for place in places:
        path = place / "_fastlaunch.abi3.so"
        if not path.is_file():
            tried.append(str(path))
            continue
        try:
            loader = importlib.machinery.ExtensionFileLoader("lrrt._fastlaunch", str(path))
            module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
            loader.exec_module(module)
        except (ImportError, OSError) as e:
            return None, f"{path} does not load: {e}"
        if getattr(module, "ABI", None) != _C_ABI:
            return None, f"{path} speaks ABI {getattr(module, 'ABI', None)}, this package {_C_ABI}: rebuild lrrt"
        return module, ""
    return None, "no _fastlaunch.abi3.so (tried " + ", ".join(tried) + "; built beside liblrrt.so with Python's headers)"


def launcher_choice():
    """'c' or 'ctypes': what LRRT_PYTHON_LAUNCHER asks (auto: c where it loads)."""
    mode = os.environ.get("LRRT_PYTHON_LAUNCHER", "auto")
    if mode not in ("auto", "c", "ctypes"):
        raise ValueError(f"LRRT_PYTHON_LAUNCHER={mode!r}: takes auto, c or ctypes")
    if mode == "ctypes":
        return "ctypes"
    module, why = _c_launcher_module()
    if module is None:
        if mode == "c":
            raise ImportError(f"LRRT_PYTHON_LAUNCHER=c: lrrt's C launcher is not available: {why}")
        return "ctypes"
    return "c"


def _c_layout(kernel):
    """(code, block offset) per argument for the C launcher, or None where it
    cannot take the kernel (a tensor descriptor, an f16 scalar)."""
    if kernel.has_descriptors:
        return None
    layout = []
    for p, offset in zip(kernel.user_params, kernel._offsets):
        if p["pointer"]:
            code = "ptr"
        elif p["type"] == "bf16":
            code = "bf16"
        else:
            code = TRITON_CODES[TRITON_TYPES[p["type"]]]
            if code not in _C_CODES:
                return None
        layout.append((code, 32 + offset))
    return layout


def learnt(run, i):
    """(class, dtype) the guard of argument i passes (tests)."""
    if hasattr(run, "guards"):
        cls, dtype = run.guards()[i]
        return cls if cls is not None else _Unseen, dtype
    return run.namespace[f"C{i}"], run.namespace[f"D{i}"]


class _Unseen:
    """The class no argument has: every guard fails until a checked call
    has learnt the argument's class."""


def bound_launcher(kernel, grid, queue=None):
    """A function run(*args) launching kernel (a TritonKernel) over grid."""
    if queue is not None and not isinstance(queue, Queue):
        raise TypeError(f"lrrt.triton: bind: queue is an lrrt.Queue or None, not {type(queue).__name__}")
    if queue is not None and not getattr(queue._h, "value", None):
        raise Error(1, "lrrt.triton: bind", "the queue was destroyed")  # 0 in the block means the default queue
    # A handle of a runtime lrrt.shutdown() ended may name a new object by
    # now (the C side looks addresses up): refused here, by generation.
    for obj, what in ((queue, "queue"), (getattr(kernel, "module", None), "kernel's module")):
        if obj is not None and _stale(obj):
            raise Error(2, "lrrt.triton: bind", f"the {what} belongs to an lrrt runtime that was shut down")
    cfg, hidden, keep = kernel._config_for(grid)
    params = kernel.user_params
    n = len(params)
    host = kernel.device is not None and kernel.device.backend == "host"
    op = "lr_launch_block"
    args_format = kernel._struct.format
    args_format = args_format.decode() if isinstance(args_format, bytes) else args_format
    block = struct.Struct("<" + _HEADER + args_format.lstrip("<"))
    # The header's values, bound once: the handles as addresses (the C side
    # checks each is live), the configuration kept alive by this launcher.
    header = (getattr(kernel.kernel._h, "value", None) or 0, ctypes.addressof(cfg) if cfg is not None else 0,
              queue._h.value if queue is not None else 0, kernel._struct.size)
    ns = {"pack": block.pack, "call": _LAUNCH_BLOCK, "cfg": cfg, "keep": keep, "queue": queue, "fast": None}
    for j, v in enumerate(header):
        ns[f"B{j}"] = v
    for j, ptr in enumerate(hidden):
        ns[f"H{j}"] = ptr
    for i in range(n):
        ns[f"C{i}"], ns[f"D{i}"] = _Unseen, None

    def fail(status):
        check(status, op)

    def learn(args):
        fast = ns["fast"]
        for i, (p, a) in enumerate(zip(params, args)):
            if p["pointer"]:
                if callable(getattr(a, "data_ptr", None)) and hasattr(a, "dtype") and \
                        (not host or isinstance(a, Buffer)):
                    ns[f"C{i}"], ns[f"D{i}"] = a.__class__, a.dtype
                    if fast is not None:
                        fast.learn(i, a.__class__, a.dtype)
            else:
                ns[f"C{i}"] = a.__class__
                if fast is not None:
                    fast.learn(i, a.__class__, None)

    def slow(*args):
        """The checked path: every check, then the launch, then the guards
        learn these arguments' kinds."""
        values = kernel._values(args)
        try:
            data = block.pack(*header, *values, *hidden)
        except struct.error:
            kernel._pack(values, hidden, args)  # raises naming the argument that does not fit
            raise
        if cfg is None:  # a grid of 0 programs: nothing to launch
            return
        status = ns["call"](data)
        if status:
            fail(status)
        learn(args)

    ns["slow"], ns["fail"] = slow, fail
    if kernel.has_descriptors:
        # A tensor map is encoded per launch (its address and shape are the
        # descriptor's): every call takes the checked path.
        def run(*args):
            return slow(*args)
        run.kernel, run.grid, run.queue, run.checked = kernel, grid, queue, slow
        run.namespace, run.implementation = ns, "ctypes"
        _Runtime.launchers.add(run)
        return run
    names = [f"a{i}" for i in range(n)]
    guard = " and ".join(f"{a}.__class__ is C{i}" + (f" and {a}.dtype is D{i}" if p["pointer"] else "")
                         for i, (a, p) in enumerate(zip(names, params))) or "True"
    packed = ", ".join([f"B{j}" for j in range(len(header))] + [f"{a}.data_ptr()" if p["pointer"] else (f"bf({a})" if p["type"] == "bf16" else a)
                        for a, p in zip(names, params)] + [f"H{j}" for j in range(len(hidden))])
    sig = ", ".join(names)
    call = "call(data)"
    fn = "launch_" + kernel.desc["name"] if kernel.desc["name"].isidentifier() else "run"
    if cfg is None:
        src = f"def run({sig}):\n    return slow({sig})\n"
    else:
        src = (f"def {fn}({sig}):\n"
               f"    if {guard}:\n"
               f"        try:\n"
               f"            data = pack({packed})\n"
               f"        except Exception:\n"
               f"            return slow({sig})\n"
               f"        status = {call}\n"
               f"        if status:\n"
               f"            fail(status)\n"
               f"        return None\n"
               f"    return slow({sig})\n")
    ns["bf"] = bf16_bits
    exec(compile(src, f"<lrrt launcher of {kernel.desc['name']}>", "exec"), ns)
    run = ns["run" if cfg is None else fn]
    layout = _c_layout(kernel) if cfg is not None and launcher_choice() == "c" else None
    if layout is not None:
        # The C launcher over the same block: its template holds the header and
        # the hidden pointers; this module's run stays its checked path.
        template = block.pack(*header, *([0] * n), *hidden)
        address = ctypes.cast(_LAUNCH_BLOCK, ctypes.c_void_p).value
        run = _c_launcher_module()[0].Launcher(address, template, layout, slow, fail, (cfg, keep, queue))
        ns["fast"] = run
        run.implementation = "c"
    else:
        run.implementation = "ctypes"
    run.kernel, run.grid, run.queue, run.checked, run.namespace = kernel, grid, queue, slow, ns
    _Runtime.launchers.add(run)
    return run
