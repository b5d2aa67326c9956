"""Capture of Triton programs (docs/python.md, "Capture"): `with
lrrt.triton.capture(dev) as g:` runs the block once as usual and records
every Triton launch in it into an lrrt Graph; `g.instantiate().replay()`
repeats them on the same memory.

How launches are seen: while a capture is open, the `__call__` of Triton's
launcher classes (CudaLauncher, HIPLauncher) is wrapped. Every Triton launch
goes through it: JITFunction.run, CompiledKernel[grid](...), the autotuner,
and Inductor's generated launchers (which bind `binary.run` once, ahead of
time, so wrapping the class is the only hook they cannot bypass).

How dropped work is prevented (capture never records a partial program
silently), two watchers, both on by default:
- torch operations: a TorchDispatchMode refuses, at the op, every aten
  operation on a non-CPU tensor except those that launch nothing (views,
  empty allocations): the error names the op;
- device work from anywhere else (cuBLAS outside torch, cupy, lrrt's own
  eager launches, another thread): torch's profiler (CUPTI activity records)
  over the block; every kernel, copy or fill the device ran for launches made
  in the block must be one of the recorded Triton launches, else the capture
  is refused naming what ran. If that cannot be checked (no torch, no CUPTI,
  no kernel seen) the capture is refused too.
Inductor's static CUDA launcher (torch._inductor.runtime.static_cuda_launcher)
launches a Triton cubin without Triton's launcher: such a launch is refused
at once, naming the kernel and the setting that routes it through Triton's
launcher (`torch._inductor.config.use_static_cuda_launcher = False`)."""
import collections
import gc
import threading
import weakref

_lock = threading.Lock()
_active = None  # the open Capture: one per process (the hooks are process-wide)


class CaptureError(RuntimeError):
    """A capture refused: the block did work that the graph would not hold,
    or a launch that cannot be recorded. The message names it."""


def derived_accesses(kernel, args):
    """The accesses a captured launch is recorded with: None = k.record's
    default, each pointer argument's access as lrrt's Triton IR analysis
    proves it (read, write, else read-write; docs/access.md)."""
    return None


def _load_kernel(device, compiled):
    from . import triton as lt
    return lt.load(device, compiled)


# --- the Triton launcher hook -------------------------------------------------

def _launch_device():
    """The device ordinal Triton launches on now, None where Triton has no
    active driver (no GPU)."""
    try:
        from triton.runtime import driver
        return int(driver.active.get_current_device())
    except Exception:
        return None


def _interpreting():
    """Whether Triton runs kernels in its interpreter (TRITON_INTERPRET):
    then no launch reaches a launcher and a capture would record nothing."""
    try:
        from triton import knobs
        return bool(knobs.runtime.interpret)
    except Exception:
        return False


def _launcher_classes():
    """Triton's launcher classes that can be imported here (no GPU needed:
    importing a backend's driver module does not load its driver)."""
    out = []
    for mod, name in (("triton.backends.nvidia.driver", "CudaLauncher"), ("triton.backends.amd.driver", "HIPLauncher")):
        try:
            m = __import__(mod, fromlist=[name])
            out.append(getattr(m, name))
        except Exception:  # backend not installed, or its import needs what is not here
            continue
    return out


def _compiled_kernel_class():
    try:
        from triton.compiler.compiler import CompiledKernel
        return CompiledKernel
    except Exception:
        return None


def _compiled_for(launcher):
    """The CompiledKernel whose launcher this is: noted by the hook on
    CompiledKernel.run, else found once among live objects (Inductor binds
    the launcher before the capture)."""
    ref = getattr(launcher, "_lrrt_compiled", None)
    ck = ref() if ref is not None else None
    if ck is not None:
        return ck
    cls = _compiled_kernel_class()
    if cls is not None:
        for o in gc.get_objects():
            if isinstance(o, cls) and o.__dict__.get("_run") is launcher:
                launcher._lrrt_compiled = weakref.ref(o)
                return o
    raise CaptureError(f"lrrt.triton.capture: a Triton launch ({type(launcher).__name__}) whose compiled kernel "
                       "could not be found: it cannot be recorded")


def _wrap_launcher_call(original):
    def __call__(self, gridX, gridY, gridZ, stream, function, *rest):
        cap = _active
        if cap is not None:
            cap._triton_launch(self, (gridX, gridY, gridZ), rest[4:])
        return original(self, gridX, gridY, gridZ, stream, function, *rest)
    __call__._lrrt_original = original
    return __call__


def _wrap_run_property(original):
    def run(self):
        launcher = original.fget(self)
        if _active is not None:
            try:
                launcher._lrrt_compiled = weakref.ref(self)
            except (AttributeError, TypeError):
                pass
        return launcher
    return property(run)


def _wrap_static_run(original):
    def run(self, *args, **kwargs):
        if _active is not None:
            _active._foreign_launch(
                f"Inductor's static CUDA launcher ran Triton kernel {getattr(self, 'name', '?')} outside Triton's "
                "launcher: set torch._inductor.config.use_static_cuda_launcher = False before compiling")
        return original(self, *args, **kwargs)
    return run


class _Hooks:
    """The class attributes a capture replaces, put back on exit whatever
    happens."""

    def __init__(self):
        self._saved = []

    def _replace(self, owner, name, value):
        self._saved.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, value)

    def install(self):
        try:
            for cls in _launcher_classes():
                if "__call__" in cls.__dict__:
                    self._replace(cls, "__call__", _wrap_launcher_call(cls.__dict__["__call__"]))
            ck = _compiled_kernel_class()
            if ck is not None and isinstance(ck.__dict__.get("run"), property):
                self._replace(ck, "run", _wrap_run_property(ck.__dict__["run"]))
            import sys
            scl = sys.modules.get("torch._inductor.runtime.static_cuda_launcher")  # only if in use: never imported here
            cls = getattr(scl, "StaticallyLaunchedCudaKernel", None)
            if cls is not None and "run" in cls.__dict__:
                self._replace(cls, "run", _wrap_static_run(cls.__dict__["run"]))
        except BaseException:
            self.remove()
            raise

    def remove(self):
        while self._saved:
            owner, name, value = self._saved.pop()
            setattr(owner, name, value)


# --- the watchers -------------------------------------------------------------

# aten operations that queue no device work (views, allocations without a fill,
# metadata): allowed on device tensors inside a capture.
_NO_DEVICE_WORK = frozenset("""
empty empty_strided empty_like new_empty new_empty_strided view _unsafe_view as_strided t transpose permute
expand slice select unsqueeze squeeze detach alias split split_with_sizes unbind _reshape_alias diagonal
view_as_real view_as_complex unfold lift_fresh is_same_size sym_size sym_stride sym_numel sym_storage_offset
size stride numel dim storage_offset is_contiguous record_stream
""".split())


def _on_device(x):
    dev = getattr(x, "device", None)
    return dev is not None and getattr(dev, "type", "cpu") not in ("cpu", "meta")


def queues_device_work(op_name, leaves, device_kw=None):
    """Whether a torch operation (its aten name, the leaves of its
    arguments, its device= keyword) is refused in a capture: it is not one
    that queues nothing, and it touches a non-CPU tensor or makes one."""
    if op_name in _NO_DEVICE_WORK:
        return False
    if device_kw is not None and getattr(device_kw, "type", str(device_kw)).split(":")[0] not in ("cpu", "meta"):
        return True
    return any(_on_device(a) for a in leaves)


class _TorchOps:
    """Refuses, when it is called, every torch operation on a device tensor
    (or creating one) that queues device work."""

    def __init__(self, capture):
        self.capture = capture
        self.mode = None

    def __enter__(self):
        from torch.utils._python_dispatch import TorchDispatchMode
        import torch.utils._pytree as pytree
        cap = self.capture

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if not cap._in_hook and threading.get_ident() == cap._thread and \
                        queues_device_work(func.overloadpacket.__name__, pytree.tree_leaves((args, kwargs)),
                                           kwargs.get("device")):
                    cap._foreign_launch(f"torch operation {func} on the device (only Triton launches are "
                                        "captured: run it before or after the capture, or write it in Triton)")
                return func(*args, **kwargs)

        self.mode = _Mode()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)

    def foreign(self):
        return []


# Profiler bookkeeping reported on the device's timeline that is no work.
_NOT_WORK = frozenset(["Activity Buffer Request"])


class _DeviceWork:
    """Every kernel, copy and fill the device ran for launches made while it
    was open (torch's profiler: CUPTI activity records), against the
    recorded Triton launches."""

    def __init__(self, capture):
        self.capture = capture
        self.prof = None

    def __enter__(self):
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile
        except Exception as e:
            raise CaptureError("lrrt.triton.capture: the device-work check needs torch's profiler "
                               f"({e}); capture(dev, check=False) skips the checks") from None
        torch.cuda.synchronize()
        self.prof = profile(activities=[ProfilerActivity.CUDA])
        self.prof.__enter__()
        return self

    def __exit__(self, *exc):
        import torch
        try:
            torch.cuda.synchronize()
        finally:
            self.prof.__exit__(*exc)

    def foreign(self):
        from torch.autograd import DeviceType
        ran = collections.Counter()
        for e in self.prof.events():
            if e.device_type != DeviceType.CUDA or getattr(e, "is_user_annotation", False) or e.name in _NOT_WORK:
                continue
            ran[e.name] += 1
        return compare_device_work(ran, collections.Counter(name for name, _ in self.capture.launches))


def compare_device_work(ran, recorded):
    """What the device ran (name -> count) but the capture did not record;
    and a refusal when recorded launches were not seen at all (the check
    would then prove nothing)."""
    out = []
    for name, n in sorted(ran.items()):
        extra = n - recorded.get(name, 0)
        if extra > 0:
            out.append(f"{name} (x{extra}) ran on the device but is not a recorded Triton launch")
    unseen = sum(max(0, n - ran.get(name, 0)) for name, n in recorded.items())
    if unseen:
        out.append(f"the device-work check saw {unseen} of the {sum(recorded.values())} recorded launches not run "
                   "(profiler events lost?): the capture cannot be verified")
    return out


# --- the capture --------------------------------------------------------------

class Capture:
    """A capture's result: the lrrt Graph (`.graph`), its launches
    (`.launches`: (kernel name, grid)) and their graph nodes (`.nodes`)."""

    def __init__(self, device, check=True):
        self.device = device
        self.check = check
        self.graph = None
        self.launches = []
        self.nodes = []
        self._kernels = {}  # id(CompiledKernel) -> (CompiledKernel, lrrt TritonKernel)
        self._foreign = []
        self._hooks = None
        self._watchers = []
        self._thread = None
        self._ordinal = None
        self._in_hook = False
        self._complete = False

    def _make_watchers(self):
        return [_TorchOps(self), _DeviceWork(self)] if self.check else []

    def __enter__(self):
        global _active
        from . import Graph
        if _interpreting():
            raise CaptureError("lrrt.triton.capture: Triton runs kernels in its interpreter (TRITON_INTERPRET): "
                               "they run on the host and there is nothing to capture")
        with _lock:
            if _active is not None:
                raise CaptureError("lrrt.triton.capture: a capture is already open in this process "
                                   "(captures do not nest)")
            self.graph = Graph(self.device)
            self._ordinal = self.device.properties["backend_ordinal"]
            self._thread = threading.get_ident()
            self._hooks = _Hooks()
            self._hooks.install()
            _active = self
        entered = []
        self._in_hook = True  # the watchers' own setup is not the block's work
        try:
            for w in self._make_watchers():
                w.__enter__()
                entered.append(w)
        except BaseException:
            self._close(entered, None)
            raise
        self._watchers = entered
        self._in_hook = False
        return self

    def _close(self, watchers, exc):
        global _active
        self._in_hook = True
        try:
            for w in reversed(watchers):
                w.__exit__(*(exc or (None, None, None)))
        finally:
            with _lock:
                self._hooks.remove()
                _active = None

    def __exit__(self, *exc):
        self._close(self._watchers, exc if exc[0] is not None else None)
        if exc[0] is not None:
            return False  # the block's error: the capture is incomplete, it is not for replay
        for w in self._watchers:
            self._foreign.extend(w.foreign())
        if self._foreign:
            raise CaptureError("lrrt.triton.capture refused: " + "; ".join(self._foreign))
        self._complete = True
        return False

    def _foreign_launch(self, what):
        """Work the graph would not hold: refused where it happens."""
        self._foreign.append(what)
        raise CaptureError("lrrt.triton.capture refused: " + what)

    def _triton_launch(self, launcher, grid, args):
        if threading.get_ident() != self._thread:
            self._foreign_launch("a Triton launch from another thread than the capture's")
        ordinal = _launch_device()
        if ordinal is not None and ordinal != self._ordinal:
            self._foreign_launch(f"a Triton launch on device {ordinal}, not the capture's device "
                                 f"{self._ordinal} (one device a capture)")
        self._in_hook = True
        try:
            ck = _compiled_for(launcher)
            self.record(ck, grid, args)
        finally:
            self._in_hook = False

    def kernel_args(self, compiled, args):
        """The launcher's arguments less the constexpr ones (what lrrt's
        kernel takes): Triton passes every parameter of the source
        signature to its launcher."""
        sig = getattr(getattr(compiled, "src", None), "signature", None)
        name = compiled.metadata.name if hasattr(compiled, "metadata") else getattr(compiled, "name", "?")
        if sig is None:
            return list(args)
        types = list(sig.values())
        if len(types) != len(args):
            raise CaptureError(f"lrrt.triton.capture: {name}: the launcher got {len(args)} argument(s) for a "
                               f"signature of {len(types)}")
        # A tensordesc parameter's argument is Triton's TensorDescriptor (its
        # launcher expands it below this hook): lrrt's kernel takes it as is
        # and encodes its tensor map when the launch is recorded.
        return [a for t, a in zip(types, args) if t != "constexpr"]

    def record(self, compiled, grid, args):
        """Records one launch of a CompiledKernel (what the launcher hook
        calls): its lrrt kernel is loaded once per capture."""
        entry = self._kernels.get(id(compiled))
        if entry is None:
            entry = (compiled, _load_kernel(self.device, compiled))
            self._kernels[id(compiled)] = entry
        k = entry[1]
        kargs = self.kernel_args(compiled, args)
        grid = tuple(int(g) for g in grid)
        node = k.record(self.graph, grid, *kargs, accesses=derived_accesses(k, kargs))
        self.nodes.append(node)
        self.launches.append((k.desc["name"], grid))
        return node

    def instantiate(self, **options):
        if not self._complete:
            raise CaptureError("lrrt.triton.capture: the capture did not complete (the block raised or was "
                               "refused): nothing to instantiate")
        return self.graph.instantiate(**options)


def capture(device, check=True):
    """`with capture(dev) as g:` records the block's Triton launches into
    g.graph. check=False turns off both watchers (torch ops and device work):
    then work other than Triton launches in the block is not detected."""
    return Capture(device, check=check)
