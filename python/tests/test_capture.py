"""lrrt.triton.capture on the host backend (docs/python.md, "Capture").

No GPU and (in CI) no Triton here: a stand-in launcher class with Triton's
launcher signature runs the host kernel vector_add_f32 (what Triton's
add_kernel computes, out = x + y) eagerly, and the lrrt kernel the capture
records is an lrrt.triton.TritonKernel over the sm_90 add_kernel fixture's
description whose code is that host kernel. So the capture's real code runs:
the hook on the launcher class, the constexpr filtering, TritonKernel.record
(packing, registration of foreign memory), the refusals, the removal of the
hooks. Where Triton is installed, the same runs through Triton 3.6's own
CudaLauncher and CompiledKernel classes."""
import os
import threading
import types
import weakref
from pathlib import Path

import numpy as np
import pytest

import lrrt
import lrrt.capture as cap_mod
import lrrt.triton

KERNELS = Path(os.environ.get("LRRT_KERNEL_DIR", Path(__file__).resolve().parents[2] / "build" / "kernels"))
ENTRY = Path(__file__).resolve().parents[2] / "tests" / "triton" / "entries" / "sm_90" / "add_kernel"
# add_kernel's source signature, as Triton passes it to its launcher: BLOCK is a constexpr.
SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
BLOCK = 128  # the fixture's block: 4 warps of 32
rng = np.random.default_rng()


@pytest.fixture(scope="module")
def dev():
    return lrrt.Device.select("host")


@pytest.fixture(scope="module")
def vadd(dev):
    return lrrt.Module(dev, KERNELS / "vector_add.host.so").kernel("vector_add_f32")


def host_triton_kernel(dev, vadd):
    """A TritonKernel described by the add_kernel fixture whose code is the
    host vector_add_f32 (no scratch pointers: the host kernel takes none)."""
    k = lrrt.triton.TritonKernel.__new__(lrrt.triton.TritonKernel)
    k.device, k.desc = dev, dict(lrrt.triton.describe(ENTRY))
    k.desc["hidden"] = []
    assert k.desc["block"] == BLOCK
    k.module, k.kernel = vadd.module, vadd
    k.params, k._scratch = k.desc["params"], {}
    k._build_packer()
    return k


def eager_add(dev, vadd, grid, args):
    kargs = [a for a, t in zip(args, SIG.values()) if t != "constexpr"]
    vadd.launch(grid=grid, block=BLOCK, args=[kargs[0], kargs[1], kargs[2], np.uint32(kargs[3])])
    dev.synchronize()


class FakeLauncher:
    """Triton's launcher signature: (gridX, gridY, gridZ, stream, function,
    packed_metadata, launch_metadata, enter_hook, exit_hook, *args)."""
    calls = 0

    def __init__(self, dev, vadd):
        self.dev, self.vadd = dev, vadd

    def __call__(self, gx, gy, gz, stream, function, packed, launch_md, enter, exit_, *args):
        FakeLauncher.calls += 1
        eager_add(self.dev, self.vadd, (gx, gy, gz), args)


class FakeCompiled:
    """A CompiledKernel's shape: metadata.name, src.signature, the launcher
    behind the `run` property."""

    def __init__(self, launcher):
        self.metadata = types.SimpleNamespace(name="add_kernel")
        self.src = types.SimpleNamespace(signature=dict(SIG))
        self._run = launcher

    @property
    def run(self):
        return self._run

    def launch(self, n, x, y, out):  # CompiledKernel[grid](x, y, out, n, BLOCK)
        self.run((n + BLOCK - 1) // BLOCK, 1, 1, 0, 1, None, None, None, None, x, y, out, n, BLOCK)


@pytest.fixture()
def fake(dev, vadd, monkeypatch):
    """The capture hooks FakeLauncher and FakeCompiled instead of Triton's
    classes, and loads the host stand-in for every compiled kernel."""
    monkeypatch.setattr(cap_mod, "_launcher_classes", lambda: [FakeLauncher])
    monkeypatch.setattr(cap_mod, "_compiled_kernel_class", lambda: FakeCompiled)
    loaded = []

    def load(device, compiled):
        loaded.append(compiled)
        return host_triton_kernel(device, vadd)
    monkeypatch.setattr(cap_mod, "_load_kernel", load)
    ck = FakeCompiled(FakeLauncher(dev, vadd))
    ck.loaded = loaded
    return ck


# The tensors: lrrt buffers on the host device (lrrt's Triton path refuses
# bare numpy arrays: host memory no guard covers). A is their contents.
def _host_buffer(a):
    return lrrt.Device.select("host").buffer_from(a)


def ints(n):
    return _host_buffer(rng.integers(-1000, 1000, n).astype(np.float32))  # sums exact in f32


def nans(n):
    return _host_buffer(np.full(n, np.nan, np.float32))


def zeros(n):
    return _host_buffer(np.zeros(n, np.float32))


def A(b):
    return np.asarray(b)


def test_capture_records_and_replays_the_program(dev, fake):
    n = int(rng.integers(1000, 3000))
    x, y = ints(n), ints(n)
    t, u, v, w = (nans(n) for _ in range(4))
    original_call = FakeLauncher.__call__
    with lrrt.triton.capture(dev, check=False) as g:
        fake.launch(n, x, y, t)        # t = A(x) + A(y)
        fake.launch(n, t, x, u)        # u = A(t) + A(x)
        fake.launch(n, u, t, v)        # v = A(u) + A(t)
        fake.run((n + BLOCK - 1) // BLOCK, 1, 1, 0, 1, None, None, None, None, v, y, w, n, BLOCK)  # w = A(v) + A(y)
    assert FakeLauncher.__call__ is original_call  # the hook is gone
    # The block's eager run produced the results.
    tt = A(x) + A(y)
    uu = tt + A(x)
    vv = uu + tt
    ww = vv + A(y)
    for got, want in ((t, tt), (u, uu), (v, vv), (w, ww)):
        assert np.array_equal(got, want)
    grid = ((n + BLOCK - 1) // BLOCK, 1, 1)
    assert g.launches == [("add_kernel", grid)] * 4
    assert len(set(g.nodes)) == 4
    assert len(fake.loaded) == 1  # one lrrt kernel per compiled kernel
    ex = g.instantiate()
    for _ in range(2):
        for a in (t, u, v, w):
            a.numpy()[:] = np.nan
        ex.replay()
        for got, want in ((t, tt), (u, uu), (v, vv), (w, ww)):
            assert np.array_equal(got, want)
    # After the capture, launches run and are not recorded.
    before = FakeLauncher.calls
    fake.launch(n, x, x, t)
    assert FakeLauncher.calls == before + 1 and len(g.launches) == 4
    assert np.array_equal(t, A(x) + A(x))


def test_capture_finds_a_launcher_bound_before_it(dev, fake):
    """Inductor binds `binary.run` once and calls the launcher directly: the
    compiled kernel is found among live objects."""
    n = 777
    x, y, out = ints(n), ints(n), nans(n)
    runner = fake.run  # bound before the capture, as Inductor's launchers are
    with lrrt.triton.capture(dev, check=False) as g:
        runner(7, 1, 1, 0, 1, None, None, None, None, x, y, out, n, BLOCK)
    assert np.array_equal(out, A(x) + A(y))
    out.numpy()[:] = np.nan
    g.instantiate().replay()
    assert np.array_equal(out, A(x) + A(y))
    assert g.launches == [("add_kernel", (7, 1, 1))]


class Reporting:
    """A watcher that saw work the capture did not record."""

    def __init__(self, what):
        self.what, self.entered, self.exited = what, False, False

    def __enter__(self):
        self.entered = True
        return self

    def __exit__(self, *exc):
        self.exited = True

    def foreign(self):
        return [self.what]


def test_capture_refuses_work_a_watcher_saw(dev, fake, monkeypatch):
    n = 500
    x, y, out = ints(n), ints(n), zeros(n)
    w = Reporting("Memcpy HtoD (Pageable -> Device) (x1) ran on the device but is not a recorded Triton launch")
    monkeypatch.setattr(cap_mod.Capture, "_make_watchers", lambda self: [w])
    with pytest.raises(lrrt.triton.CaptureError, match=r"refused: Memcpy HtoD"):
        with lrrt.triton.capture(dev) as g:
            fake.launch(n, x, y, out)
    assert w.entered and w.exited
    with pytest.raises(lrrt.triton.CaptureError, match="did not complete"):
        g.instantiate()
    assert cap_mod._active is None


def test_compare_device_work():
    from collections import Counter
    assert cap_mod.compare_device_work(Counter(add_kernel=3, softmax=1), Counter(add_kernel=3, softmax=1)) == []
    extra = cap_mod.compare_device_work(Counter({"add_kernel": 3, "Memset (Device)": 1, "ampere_sgemm": 2}),
                                        Counter(add_kernel=3))
    assert extra == ["Memset (Device) (x1) ran on the device but is not a recorded Triton launch",
                     "ampere_sgemm (x2) ran on the device but is not a recorded Triton launch"]
    # A fourth add_kernel ran that was not recorded (a launch another way, same name).
    assert cap_mod.compare_device_work(Counter(add_kernel=4), Counter(add_kernel=3))[0].startswith("add_kernel (x1)")
    # Recorded launches the check did not see: it proves nothing, refused.
    unseen = cap_mod.compare_device_work(Counter(), Counter(add_kernel=2))
    assert len(unseen) == 1 and "cannot be verified" in unseen[0]


def test_block_error_restores_the_hooks_and_leaves_no_graph(dev, fake):
    original_call = FakeLauncher.__call__
    original_run = FakeCompiled.__dict__["run"]
    with pytest.raises(ValueError, match="in the block"):
        with lrrt.triton.capture(dev, check=False) as g:
            assert FakeLauncher.__call__ is not original_call
            assert FakeCompiled.__dict__["run"] is not original_run
            raise ValueError("in the block")
    assert FakeLauncher.__call__ is original_call and FakeCompiled.__dict__["run"] is original_run
    assert cap_mod._active is None
    with pytest.raises(lrrt.triton.CaptureError, match="did not complete"):
        g.instantiate()


def test_captures_do_not_nest(dev, fake):
    with lrrt.triton.capture(dev, check=False):
        with pytest.raises(lrrt.triton.CaptureError, match="already open"):
            with lrrt.triton.capture(dev, check=False):
                pass
    with lrrt.triton.capture(dev, check=False):  # and the first one's close freed the slot
        pass


def test_launch_from_another_thread_refused(dev, fake):
    n = 300
    x, y, out = ints(n), ints(n), zeros(n)
    errors = []

    def other():
        try:
            fake.launch(n, x, y, out)
        except lrrt.triton.CaptureError as e:
            errors.append(str(e))
    with pytest.raises(lrrt.triton.CaptureError, match="another thread"):
        with lrrt.triton.capture(dev, check=False):
            th = threading.Thread(target=other)
            th.start()
            th.join()
    assert errors and "another thread" in errors[0]


def test_kernel_args_drop_constexprs_and_keep_descriptors(dev):
    c = cap_mod.Capture(dev)
    ck = types.SimpleNamespace(metadata=types.SimpleNamespace(name="k"),
                               src=types.SimpleNamespace(signature={"a": "*fp32", "B": "constexpr", "n": "i32",
                                                                    "one": "constexpr"}))
    assert c.kernel_args(ck, (10, 64, 5, 1)) == [10, 5]
    with pytest.raises(lrrt.triton.CaptureError, match="got 3 argument"):
        c.kernel_args(ck, (10, 64, 5))
    # A descriptor is passed on as Triton's launcher got it (lrrt's kernel
    # encodes its tensor map when recording; tests/test_triton_tensordesc.py).
    ck.src.signature = {"desc": "tensordesc<fp16[64, 64]>", "B": "constexpr", "n": "i32"}
    desc = object()
    assert c.kernel_args(ck, (desc, 64, 5)) == [desc, 5]


def test_static_cuda_launcher_refused(dev, fake, monkeypatch):
    """A launch through Inductor's static CUDA launcher (module stood in for
    here: the capture only hooks it when torch already imported it) is
    refused at the call, naming the kernel and the setting."""
    import sys
    ran = []

    class StaticallyLaunchedCudaKernel:
        name = "triton_poi_fused_add_0"

        def run(self, *args):
            ran.append(args)
    mod = types.ModuleType("torch._inductor.runtime.static_cuda_launcher")
    mod.StaticallyLaunchedCudaKernel = StaticallyLaunchedCudaKernel
    monkeypatch.setitem(sys.modules, "torch._inductor.runtime.static_cuda_launcher", mod)
    original = StaticallyLaunchedCudaKernel.run
    with pytest.raises(lrrt.triton.CaptureError, match="triton_poi_fused_add_0.*use_static_cuda_launcher = False"):
        with lrrt.triton.capture(dev, check=False):
            StaticallyLaunchedCudaKernel().run(1, 1, 1, 0)
    assert ran == [] and StaticallyLaunchedCudaKernel.run is original
    StaticallyLaunchedCudaKernel().run(1, 1, 1, 0)  # outside a capture: untouched
    assert len(ran) == 1


def test_record_derives_each_pointers_access_from_the_ir(dev, vadd):
    # No accesses given: x and y as read, out as written, as lrrt's Triton IR
    # analysis proves them for add_kernel (a wider mode is safe, a narrower
    # one would drop a fence: the replay test above checks the chain).
    assert cap_mod.derived_accesses(None, []) is None  # capture records k.record's default
    k = host_triton_kernel(dev, vadd)
    assert [(p["name"], p.get("access")) for p in k.params if p["pointer"]] == \
        [("x_ptr", "read"), ("y_ptr", "read"), ("out_ptr", "write")]
    n = int(rng.integers(100, 300))
    x, y, out = ints(n), ints(n), nans(n)
    seen = []

    class Spy:
        def use(self, a):
            pass

        def add_kernel(self, kernel, grid, block, data, accesses=(), shared=0):
            seen.extend((a[0], a[1]) for a in accesses)
            return 0
    k.record(Spy(), ((n + BLOCK - 1) // BLOCK,), x, y, out, n)
    addr = lrrt.address_of
    assert seen == [(addr(x), lrrt.READ), (addr(y), lrrt.READ), (addr(out), lrrt.WRITE)]
    # Unproven parameters stay read-write.
    assert lrrt.triton.derived_mode({"pointer": True}) == lrrt.READ_WRITE
    assert lrrt.triton.derived_mode({"pointer": True, "access": "read_write"}) == lrrt.READ_WRITE


def test_through_triton_launcher_classes(dev, vadd, monkeypatch):
    """Triton 3.6's own CudaLauncher.__call__ and CompiledKernel.run (the
    fixture's CompiledKernel, its launcher a CudaLauncher whose C launch is
    the host kernel): hooked while the capture is open, put back after."""
    pytest.importorskip("triton")
    from triton.backends.nvidia.driver import CudaLauncher
    from triton.compiler.compiler import CompiledKernel
    group = {p.name: str(p) for p in ENTRY.iterdir() if not p.name.startswith("__grp__")}
    ck = CompiledKernel(types.SimpleNamespace(signature=dict(SIG)), group, "fixture")
    launches = []

    def c_launch(gx, gy, gz, stream, function, coop, pdl, gscratch, pscratch, *args):
        launches.append((gx, gy, gz))
        eager_add(dev, vadd, (gx, gy, gz), args[4:])
    launcher = CudaLauncher.__new__(CudaLauncher)
    launcher.__dict__.update(num_ctas=1, launch=c_launch, global_scratch_size=0, global_scratch_align=1,
                             profile_scratch_size=0, profile_scratch_align=1, launch_cooperative_grid=False,
                             launch_pdl=False)
    ck._run, ck.module, ck.function = launcher, object(), 1
    monkeypatch.setattr(cap_mod, "_load_kernel", lambda device, compiled: host_triton_kernel(device, vadd))
    call, run = CudaLauncher.__dict__["__call__"], CompiledKernel.__dict__["run"]
    n = int(rng.integers(2000, 4000))
    x, y, t, u = ints(n), ints(n), nans(n), nans(n)
    grid = ((n + BLOCK - 1) // BLOCK, 1, 1)
    with lrrt.triton.capture(dev, check=False) as g:
        ck[grid](x, y, t, n, BLOCK, stream=0)
        ck[grid](t, y, u, n, BLOCK, stream=0)
    assert CudaLauncher.__dict__["__call__"] is call and CompiledKernel.__dict__["run"] is run
    assert launches == [grid, grid] and g.launches == [("add_kernel", grid)] * 2
    assert np.array_equal(u, A(x) + A(y) + A(y))
    t.numpy()[:], u.numpy()[:] = np.nan, np.nan
    g.instantiate().replay()
    assert np.array_equal(t, A(x) + A(y)) and np.array_equal(u, A(x) + A(y) + A(y))
    assert isinstance(getattr(launcher, "_lrrt_compiled", None), weakref.ref)


def test_kernel_args_match_lrrts_description_of_a_real_compile():
    """Triton 3.6 compiled for sm_90 here (no GPU: its ptxas): the launcher's
    arguments less the signature's constexprs (BLOCK, and the stride equal to
    1 that Triton's JIT turns into one) are exactly the parameters lrrt's
    description of the compiled kernel takes, in order."""
    triton = pytest.importorskip("triton")
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    @triton.jit
    def strided_axpb(x_ptr, out_ptr, stride, n, a, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=m) * a, mask=m)
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "constexpr", "n": "i32", "a": "fp32", "BLOCK": "constexpr"}
    src = ASTSource(strided_axpb, sig, {(2,): 1, (5,): 256})
    ck = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    d = lrrt.triton.describe(ck)
    assert [p["name"] for p in d["params"]] == ["x_ptr", "out_ptr", "n", "a"]
    launcher_args = ["X", "OUT", 1, 4099, 0.5, 256]
    assert cap_mod.Capture(None).kernel_args(ck, launcher_args) == ["X", "OUT", 4099, 0.5]


def test_which_torch_operations_are_refused():
    """The TorchDispatchMode's rule (torch is not here: tensors stood in for
    by objects with a .device): ops that queue device work on a device
    tensor, or make one, are refused; views, empty allocations and CPU work
    are not."""
    def t(kind):
        return types.SimpleNamespace(device=types.SimpleNamespace(type=kind))
    cuda, cpu, meta = t("cuda"), t("cpu"), t("meta")
    refused = cap_mod.queues_device_work
    assert refused("add", [cuda, cuda, 1.0])
    assert refused("fill_", [cuda, float("nan")])
    assert refused("copy_", [cuda, cpu])  # a host-to-device copy
    assert refused("mm", [cpu, cuda])
    assert refused("_to_copy", [cpu], "cuda:0")  # x.to("cuda")
    assert refused("zeros", [], types.SimpleNamespace(type="cuda"))
    assert refused("_local_scalar_dense", [cuda])  # .item()
    for view in ("view", "t", "permute", "as_strided", "slice", "select", "expand", "detach", "stride"):
        assert not refused(view, [cuda, 3])
    assert not refused("empty", [], "cuda")
    assert not refused("empty_strided", [], types.SimpleNamespace(type="cuda"))
    assert not refused("add", [cpu, cpu])
    assert not refused("add", [meta, meta])
    assert not refused("zeros", [], "cpu")


def test_plot_triton_capture(tmp_path):
    """scripts/plot-triton-capture charts a triton-capture-check result (random
    timings here; a failed check's entry is left out) and refuses a file
    without timings, with exit 2 and no chart."""
    import json
    import subprocess
    import sys
    pytest.importorskip("matplotlib")
    script = Path(__file__).resolve().parents[2] / "scripts" / "plot-triton-capture"
    us = {k: float(rng.uniform(0.5, 20)) for k in ("triton_launcher", "lrrt_replay", "torch_cuda_graph")}
    us["replay_vs_cuda_graph"] = us["lrrt_replay"] / us["torch_cuda_graph"]
    doc = {"provenance": {"card": "H100", "driver": "580", "lrrt_commit": "0" * 12, "date": "2026-12-06"},
           "block": {"ok": True, "launches_per_pass": 56, "target_replay_vs_cuda_graph": 0.85, "us_per_dispatch": us},
           "dag": {"ok": False, "error": "RuntimeError: x"}}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "r.json"), str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    png = tmp_path / "out" / "triton-capture.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    del doc["block"]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "bad.json"), str(tmp_path / "out2")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no timings" in r.stderr and not (tmp_path / "out2").exists()


def test_launch_on_another_device_refused(dev, fake, monkeypatch):
    """A Triton launch on another device than the capture's would replay on
    the wrong one: refused at the launch, nothing run."""
    n = 256
    x, y, out = ints(n), ints(n), zeros(n)
    monkeypatch.setattr(cap_mod, "_launch_device", lambda: dev.properties["backend_ordinal"] + 1)
    before = FakeLauncher.calls
    with pytest.raises(lrrt.triton.CaptureError, match=r"on device 1, not the capture's device 0"):
        with lrrt.triton.capture(dev, check=False):
            fake.launch(n, x, y, out)
    assert FakeLauncher.calls == before and not A(out).any()
    monkeypatch.setattr(cap_mod, "_launch_device", lambda: dev.properties["backend_ordinal"])
    with lrrt.triton.capture(dev, check=False) as g:
        fake.launch(n, x, y, out)
    assert len(g.launches) == 1 and np.array_equal(out, A(x) + A(y))


def test_triton_interpreter_refused(dev, monkeypatch):
    """Under TRITON_INTERPRET no launch reaches a launcher: a capture would
    hold nothing while the block's work ran on the host, so it is refused."""
    pytest.importorskip("triton")
    from triton import knobs
    monkeypatch.setattr(knobs.runtime, "interpret", True)
    with pytest.raises(lrrt.triton.CaptureError, match="TRITON_INTERPRET"):
        with lrrt.triton.capture(dev, check=False):
            pass
    assert cap_mod._active is None
    monkeypatch.setattr(knobs.runtime, "interpret", False)
    with lrrt.triton.capture(dev, check=False) as g:
        pass
    assert g.launches == []
