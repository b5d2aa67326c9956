"""The pre-bound launcher of a Triton kernel over one grid: what Python adds
to lr_launch, cut to what changes per launch (docs/python.md).

Bound once: the grid (range-checked), the launch configuration, the scratch
pointers, the kernel handle, one struct.Struct of the whole block.
Per call: a class guard per argument, one struct pack of the arguments (a
fresh bytes object: ctypes releases the GIL during the call, and a block
shared between calls could be repacked by another thread while lr_launch
reads it), one ctypes call with argtypes=None and only ctypes objects and
bytes as arguments (ctypes passes them through without converting anything).

The guard is what keeps the checks of the checked path (element types,
scalar kinds, freed buffers, host arrays on a GPU) off the fast path without
dropping them: an argument whose class (and dtype, for a pointer) is not the
one an earlier call checked goes through the checked path first, which
refuses it or learns it. Ranges are checked by struct itself: a value that
does not fit fails the pack and goes through the checked path for its error.
"""
import ctypes

from ._args import bf16_bits
from ._buffer import Buffer, _Runtime
from ._lib import check, lib


def _prepared(name):
    f = lib._FuncPtr((name, lib))  # a fresh function object: argtypes None, no per-argument conversion
    f.restype = ctypes.c_int
    return f


_LAUNCH = _prepared("lr_launch")
_LAUNCH_ON_QUEUE = _prepared("lr_launch_on_queue")


class _Unseen:
    """The class no argument has: every guard fails until a checked call
    has learnt the argument's class."""


def bound_launcher(kernel, grid, queue=None):
    """A function run(*args) launching kernel (a TritonKernel) over grid."""
    cfg, hidden, keep = kernel._config_for(grid)
    params = kernel.user_params
    n = len(params)
    host = kernel.device is not None and kernel.device.backend == "host"
    op = "lr_launch" if queue is None else "lr_launch_on_queue"
    ns = {"pack": kernel._struct.pack, "call": _LAUNCH if queue is None else _LAUNCH_ON_QUEUE, "kh": kernel.kernel._h,
          "cfg": cfg, "cfgp": ctypes.byref(cfg) if cfg is not None else None,
          "size": ctypes.c_size_t(kernel._struct.size), "qh": queue._h if queue is not None else None, "keep": keep}
    for j, ptr in enumerate(hidden):
        ns[f"H{j}"] = ptr
    for i in range(n):
        ns[f"C{i}"], ns[f"D{i}"] = _Unseen, None

    def fail(status):
        check(status, op)

    def learn(args):
        for i, (p, a) in enumerate(zip(params, args)):
            if p["pointer"]:
                if callable(getattr(a, "data_ptr", None)) and hasattr(a, "dtype") and \
                        (not host or isinstance(a, Buffer)):
                    ns[f"C{i}"], ns[f"D{i}"] = a.__class__, a.dtype
            else:
                ns[f"C{i}"] = a.__class__

    def slow(*args):
        """The checked path: every check, then the launch, then the guards
        learn these arguments' kinds."""
        values = kernel._values(args)
        data = kernel._pack(values, hidden, args)
        if cfg is None:  # a grid of 0 programs: nothing to launch
            return
        status = ns["call"](*((ns["qh"],) if queue is not None else ()), ns["kh"], ns["cfgp"], data, ns["size"])
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
        _Runtime.launchers.add(run)
        return run
    names = [f"a{i}" for i in range(n)]
    guard = " and ".join(f"{a}.__class__ is C{i}" + (f" and {a}.dtype is D{i}" if p["pointer"] else "")
                         for i, (a, p) in enumerate(zip(names, params))) or "True"
    packed = ", ".join([f"{a}.data_ptr()" if p["pointer"] else (f"bf({a})" if p["type"] == "bf16" else a)
                        for a, p in zip(names, params)] + [f"H{j}" for j in range(len(hidden))])
    sig = ", ".join(names)
    call = ("call(qh, kh, cfgp, data, size)" if queue is not None else "call(kh, cfgp, data, size)")
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
    run.kernel, run.grid, run.queue, run.checked = kernel, grid, queue, slow
    _Runtime.launchers.add(run)
    return run
