"""Misuse of the Python package raises, never crashes or corrupts (issue 38,
"3. Python package"). Cases that crashed the process before the fix run in
a child Python, so that a crash fails its test instead of the whole run."""
import gc
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lrrt
from lrrt import _launcher
import lrrt.triton

KERNELS = Path(os.environ.get("LRRT_KERNEL_DIR", Path(__file__).resolve().parents[2] / "build" / "kernels"))
ENTRIES = Path(__file__).resolve().parents[2] / "tests" / "triton" / "entries"
rng = np.random.default_rng()


def child(code, python=None, block_numpy=False, timeout=120):
    """Runs code in a fresh Python (this one unless python is given); the
    package from this checkout, numpy hidden when block_numpy. Returns the
    CompletedProcess (a crash shows as a negative returncode)."""
    prelude = ""
    if block_numpy:
        prelude = textwrap.dedent("""\
            import sys
            class _NoNumpy:
                def find_spec(self, name, path=None, target=None):
                    if name == "numpy" or name.startswith("numpy."):
                        raise ImportError("numpy is blocked for this test")
            sys.meta_path.insert(0, _NoNumpy())
            """)
    env = {**os.environ, "PYTHONPATH": str(Path(lrrt.__file__).resolve().parents[1]), "TESTS": str(Path(__file__).parent),
           "LRRT_KERNEL_DIR": str(KERNELS)}
    return subprocess.run([python or sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env)


def assert_ok(r, expect_last=None):
    assert r.returncode == 0, f"rc {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    if expect_last is not None:
        assert r.stdout.strip().splitlines()[-1] == expect_last, r.stdout


@pytest.fixture(scope="module")
def dev():
    return lrrt.Device.select("host")


@pytest.fixture(scope="module")
def saxpy(dev):
    return lrrt.Module(dev, KERNELS / "saxpy.host.so").kernel("saxpy")


def test_to_numpy_and_copy_from_stay_inside_the_buffer():
    r = child("""
        import numpy as np, lrrt
        d = lrrt.Device.select("host")
        a = np.random.default_rng().random(16, dtype=np.float32)
        b = d.buffer_from(a)
        for bad in (dict(shape=(17,)), dict(shape=(1 << 26,)), dict(dtype=np.float64, shape=(9,)),
                    dict(shape=(16,), offset=4), dict(offset=65)):
            try:
                b.to_numpy(**bad)
                print("accepted", bad)
            except ValueError as e:
                assert "past the buffer's end" in str(e) or "above" in str(e) or "does not fit" in str(e), e
        for bad in ((np.zeros(16, np.float32), 4), (np.zeros(1, np.float32), 64), (np.zeros(1 << 20, np.uint8), 0)):
            try:
                b.copy_from(bad[0], offset=bad[1])
                print("accepted copy", bad[1])
            except ValueError as e:
                assert "past the buffer's end" in str(e), e
        assert np.array_equal(b.to_numpy(), a)                       # nothing written by the refused copies
        assert np.array_equal(b.to_numpy(shape=(4,), offset=48), a[12:])
        c = np.random.default_rng().random(6, dtype=np.float32)
        b.copy_from(c, offset=40)
        want = a.copy(); want[10:16] = c
        assert np.array_equal(b.to_numpy(), want)
        for bad in (-1, 2**64):
            try:
                b.copy_from(c, offset=bad); print("accepted offset", bad)
            except (ValueError, OverflowError):
                pass
        print("ok")
        """)
    assert_ok(r, "ok")


def test_buffer_shape_and_size_are_checked(dev):
    with pytest.raises(ValueError, match="below 0"):
        dev.buffer(-1)
    with pytest.raises(OverflowError):
        dev.buffer(2**64)
    with pytest.raises(ValueError, match="more than the buffer"):
        lrrt.Buffer(dev, 16, np.float32, shape=(5,))


def test_numpy_view_keeps_its_buffer_alive(dev):
    a = rng.random(256, dtype=np.float32)
    b = dev.buffer_from(a)
    v = b.numpy()[10:]
    freed = dev.memory_stats()["free_count"]
    del b
    gc.collect()
    assert dev.memory_stats()["free_count"] == freed  # the view holds the memory
    fresh = rng.random(246, dtype=np.float32)
    v[:] = fresh
    assert np.array_equal(v, fresh)
    del v
    gc.collect()
    assert dev.memory_stats()["free_count"] == freed + 1


def test_free_waits_for_views_and_refuses_every_use(dev, saxpy):
    b = dev.buffer_from(rng.random(64, dtype=np.float32))
    v = np.asarray(b)
    freed = dev.memory_stats()["free_count"]
    b.free()
    for use in (b.numpy, b.to_numpy, b.to_bytes, b.data_ptr, lambda: b.copy_from(np.zeros(1, np.float32)),
                lambda: saxpy.launch(1, 64, [np.float32(1), b, b, np.uint32(64)])):
        with pytest.raises(lrrt.Error, match="freed"):
            use()
    assert dev.memory_stats()["free_count"] == freed  # a view lives: not yet given back
    v[:] = 3.0  # still its memory
    assert np.all(v == 3.0)
    del v
    gc.collect()
    assert dev.memory_stats()["free_count"] == freed + 1
    c = dev.buffer(64)
    c.free()
    with pytest.raises(lrrt.Error, match="freed"):
        c.numpy()


def test_shutdown_refused_while_a_view_lives():
    r = child("""
        import gc, numpy as np, lrrt
        import lrrt._lib
        d = lrrt.Device.select("host")
        b = d.buffer_from(np.arange(1024, dtype=np.float32))
        v = b.numpy()
        for shut in (lrrt.shutdown, lrrt._lib.lib.lr_shutdown):
            try:
                shut(); print("shut down under a view")
            except lrrt.Error as e:
                assert e.status_name == "LR_ERROR_BUSY" and "view" in e.message, e
        v[:] = 5                      # the view's memory is still lrrt's
        assert np.all(b.to_numpy() == 5)
        del v; gc.collect()
        lrrt.shutdown()
        try:
            b.to_numpy(); print("used after shutdown")
        except lrrt.Error as e:
            assert "shut down" in e.message
        d2 = lrrt.Device.select("host")   # a new runtime; b's pointer is not freed into it
        c = d2.buffer_from(np.arange(8, dtype=np.int32))
        del b; gc.collect()
        assert c.to_numpy().tolist() == list(range(8))
        print("ok")
        """)
    assert_ok(r, "ok")


def test_arrays_shorter_than_the_launch_are_not_overrun():
    """A numpy array of 8 elements as a 1M-element saxpy's x and y: the
    arrays are staged into guarded lrrt memory, the kernel faults there, and
    neither array nor Python's heap is written."""
    r = child("""
        import os, numpy as np, lrrt
        d = lrrt.Device.select("host")
        k = lrrt.Module(d, os.environ["LRRT_KERNEL_DIR"] + "/saxpy.host.so").kernel("saxpy")
        rng = np.random.default_rng()
        x, y = rng.random(8, dtype=np.float32), rng.random(8, dtype=np.float32)
        x0, y0 = x.copy(), y.copy()
        n = 1 << 20
        try:
            k.launch((n + 255) // 256, 256, [np.float32(2), x, y, np.uint32(n)])
            print("no error")
        except lrrt.Error as e:
            assert e.status_name == "LR_ERROR_KERNEL_FAULT", e
        assert np.array_equal(x, x0) and np.array_equal(y, y0)   # no half-written result
        # Fitting arrays still work, aliasing kept (x and y one array), and the device is usable.
        z = rng.integers(-100, 100, 1000).astype(np.float32)
        z0 = z.copy()
        k.launch(4, 256, [np.float32(3), z, z, np.uint32(1000)])
        assert np.array_equal(z, np.float32(3) * z0 + z0)
        # A read-only array the kernel writes: refused, not silently dropped.
        ro = np.ones(1000, np.float32); ro.flags.writeable = False
        try:
            k.launch(4, 256, [np.float32(1), x0, ro, np.uint32(8)]); print("wrote a read-only array")
        except lrrt.Error as e:
            assert "read-only" in e.message
        assert np.all(ro == 1)
        print("ok")
        """)
    assert_ok(r, "ok")


def test_integers_never_wrap(dev, saxpy):
    with pytest.raises(OverflowError):
        lrrt.Device.open(2**32)
    with pytest.raises(ValueError):
        lrrt.Device.open(-1)
    with pytest.raises(OverflowError):
        lrrt.Device.select("host", 2**32)
    b = dev.buffer(1024, np.float32)
    args = [np.float32(1), b, b, np.uint32(256)]
    for grid, err in ((2**32 + 1, OverflowError), ((1, 2**32), OverflowError), ((1, 1, 1, 2), ValueError),
                      (0, ValueError), (-1, ValueError), ((), ValueError)):
        with pytest.raises(err):
            saxpy.launch(grid, 256, args)
    with pytest.raises(OverflowError):
        saxpy.launch(1, 2**32, args)
    with pytest.raises(ValueError):
        saxpy.launch(1, 256, args, shared=-1)
    with pytest.raises(OverflowError):
        saxpy.pack([np.float32(1), b, b, 2**32])
    with pytest.raises(OverflowError):
        saxpy.pack([np.float32(1), b, b, -1])
    with pytest.raises(OverflowError):
        lrrt.pack_scalar(2**31, "i32")


def fake_triton(dev, kernel):
    """A TritonKernel over host saxpy (its layout is Triton's for (f32, *f32,
    *f32, i32)): the lrrt.triton launch path, run on the host backend."""
    k = lrrt.triton.TritonKernel.__new__(lrrt.triton.TritonKernel)
    k.device = dev
    k.desc = {"name": "saxpy", "hidden": [], "block": 256, "shared": 0, "params": [
        {"name": "a", "pointer": False, "type": "f32"}, {"name": "x", "pointer": True, "type": "f32"},
        {"name": "y", "pointer": True, "type": "f32"}, {"name": "n", "pointer": False, "type": "i32"}]}
    k.params, k._scratch, k.kernel, k.module = k.desc["params"], {}, kernel, kernel.module
    k._build_packer()
    return k


def test_triton_grid_never_cut_or_wrapped(dev, saxpy):
    k = fake_triton(dev, saxpy)
    b = dev.buffer(64, np.float32)
    with pytest.raises(ValueError, match="dimensions"):
        k[(1, 1, 1, 2)](1.0, b, b, 16)
    with pytest.raises(OverflowError):
        k[(2**32 + 1,)](1.0, b, b, 16)
    with pytest.raises(OverflowError):
        k.launch((1, 2**32), 1.0, b, b, 16)


def test_declared_types_are_checked(dev, saxpy):
    n = 300
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    bx, by = dev.buffer_from(x), dev.buffer_from(y)
    bad = [
        [np.float32(2), x.astype(np.float64), y, np.uint32(n)],     # float64 array for const float*
        [np.float32(2), x.view(np.int32), y, np.uint32(n)],         # int32 array for float*
        [np.int32(2), x, y, np.uint32(n)],                           # np.int32 for float
        [np.float64(2), x, y, np.uint32(n)],                         # np.float64 for float
        [np.float32(2), x, y, np.float32(n)],                        # np.float32 for uint32_t
        [np.float32(2), x, y, float(n)],                             # a Python float for uint32_t
        [np.float32(2), dev.buffer(4 * n, np.float64), by, n],       # a float64 buffer for float*
        [np.float32(2), x, y, True],                                 # a bool for uint32_t
    ]
    for args in bad:
        with pytest.raises(TypeError) as e:
            saxpy.launch(2, 256, args)
        assert isinstance(e.value, lrrt.Error) and "saxpy" in str(e.value)
    assert np.array_equal(by.to_numpy(), y)
    # Python numbers where the kernel declares the type, and an untyped buffer.
    raw_y = dev.buffer(4 * n)
    raw_y.copy_from(y)
    saxpy.launch(2, 256, [2.5, bx, raw_y, n])
    dev.synchronize()
    assert np.array_equal(raw_y.to_numpy(np.float32), np.float32(2.5) * x + y)


def test_triton_types_checked_on_every_path(dev, saxpy):
    """The bound launcher's fast path skips the checks only for argument
    kinds a checked call accepted: anything else is checked, every time."""
    k = fake_triton(dev, saxpy)
    n = 500
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    bx, by = dev.buffer_from(x), dev.buffer_from(y)
    run = k.bind((2,))
    run(2.0, bx, by, n)  # learnt: float, float32 buffers, int
    for args, err in (((np.int32(2), bx, by, n), TypeError), ((2.0, dev.buffer(4 * n, np.float64), by, n), TypeError),
                      ((2.0, x, by, n), TypeError), ((2.0, bx, by, 2**31), OverflowError),
                      ((2.0, bx, by, 2.5), TypeError), ((2.0, bx, by), TypeError)):
        with pytest.raises(err):
            run(*args)
    gone = dev.buffer_from(x)
    run(2.0, gone, by, n)
    gone.free()
    with pytest.raises(lrrt.Error, match="freed"):
        run(2.0, gone, by, n)
    dev.synchronize()
    assert np.array_equal(by.to_numpy(), np.float32(2) * x + (np.float32(2) * x + y))


def test_bound_launcher_results(dev, saxpy):
    """k.bind(grid) and k[grid] over fresh data, every element checked,
    on the default queue and on a queue; grid 0 launches nothing."""
    k = fake_triton(dev, saxpy)
    q = dev.queue()
    for queue in (None, q):
        n = int(rng.integers(1000, 3000))
        grid = ((n + 255) // 256,)
        x = rng.integers(-50, 50, n).astype(np.float32)
        y = rng.integers(-50, 50, n).astype(np.float32)
        bx, by = dev.buffer_from(x), dev.buffer_from(y)
        run = k.bind(grid, queue=queue)
        expect = y.copy()
        for i in range(20):
            a = float(rng.integers(-4, 5))
            (run if i % 2 else (lambda *v: k.launch(grid, *v, queue=queue)))(a, bx, by, n)
            expect = np.float32(a) * x + expect
        (q.synchronize if queue else dev.synchronize)()
        assert np.array_equal(by.to_numpy(), expect)
    before = by.to_numpy()
    k[(0,)](1.0, bx, by, n)
    dev.synchronize()
    assert np.array_equal(by.to_numpy(), before)


def test_triton_describe_refuses_deep_nesting(tmp_path):
    """A metadata field nested 200,000 deep: an lrrt.Error naming the field,
    short, from a compiled kernel's metadata and from an entry on disk."""
    r = child(f"""
        import json, shutil, lrrt, lrrt.triton
        src = {str(ENTRIES / "sm_90" / "add_kernel")!r}
        md = json.load(open(src + "/add_kernel.json"))
        v = []
        for _ in range(200000):
            v = [v]
        class Compiled:
            metadata = dict(md, deep_field=v)
            asm = {{"ttir": open(src + "/add_kernel.ttir").read()}}
        try:
            lrrt.triton.describe(Compiled()); print("accepted")
        except lrrt.Error as e:
            assert "deep_field" in str(e) and "nested more than" in str(e) and len(str(e)) < 400, str(e)[:500]
        dst = {str(tmp_path / "deep")!r}
        shutil.copytree(src, dst)
        text = json.dumps(md)[:-1] + ', "deep_field": ' + "[" * 200000 + "]" * 200000 + "}}"
        open(dst + "/add_kernel.json", "w").write(text)
        try:
            lrrt.triton.describe(dst); print("accepted file")
        except lrrt.Error as e:
            assert "nested more than" in str(e) and len(str(e)) < 400, str(e)[:500]
        print("ok")
        """)
    assert_ok(r, "ok")
    assert "RecursionError" not in r.stderr


CORE_WITHOUT_NUMPY = """
    import os, struct, sys
    import lrrt, lrrt.triton
    assert "numpy" not in sys.modules
    d = lrrt.Device.select("host")
    k = lrrt.Module(d, os.environ["LRRT_KERNEL_DIR"] + "/saxpy.host.so").kernel("saxpy")
    n = 100
    xs = [float(i % 13) for i in range(n)]
    ys = [float(i % 7) for i in range(n)]
    x, y = d.buffer(4 * n), d.buffer(4 * n)
    x.copy_from(struct.pack(f"<{n}f", *xs))
    y.copy_from(struct.pack(f"<{n}f", *ys))
    k.launch(1, 256, [2.0, x, y, n])
    d.synchronize()
    got = struct.unpack(f"<{n}f", y.to_bytes())
    assert list(got) == [2.0 * a + b for a, b in zip(xs, ys)], got[:8]
    assert lrrt.triton.describe(os.environ["ENTRY"])["signature"].startswith("*fp32")
    try:
        x.to_numpy(); print("to_numpy without numpy")
    except ImportError as e:
        assert "numpy" in str(e)
    print("ok")
"""


def test_core_works_without_numpy():
    env_entry = str(ENTRIES / "sm_90" / "add_kernel")
    os.environ["ENTRY"] = env_entry
    r = child(CORE_WITHOUT_NUMPY, block_numpy=True)
    assert_ok(r, "ok")
    # A Python with no numpy at all (the machine's default python3 is one), when there is one.
    plain = shutil.which("python3")
    if plain and subprocess.run([plain, "-c", "import numpy"], capture_output=True).returncode != 0:
        r = child(CORE_WITHOUT_NUMPY, python=plain)
        assert_ok(r, "ok")


def test_other_hostile_arguments_are_refused(dev, saxpy):
    """Probed beyond the issue's list: object dtypes (bytes read into
    object pointers), NUL in names, wrapping node ids, offsets and modes."""
    b = dev.buffer_from(rng.random(16, dtype=np.float32))
    with pytest.raises(TypeError, match="Python objects"):
        b.to_numpy(dtype=object)
    with pytest.raises(TypeError, match="Python objects"):
        dev.buffer_from(np.array([object()]))
    with pytest.raises(TypeError, match="Python objects"):
        b.copy_from(np.array([object()] * 2))
    with pytest.raises(TypeError):
        b.copy_from("text")
    with pytest.raises(ValueError, match="NUL"):
        saxpy.module.kernel("saxpy\0junk")
    with pytest.raises(ValueError, match="NUL"):
        lrrt.Device.select("host\0cuda")
    with pytest.raises(TypeError):
        lrrt.Module(dev, 1 << 40)  # bytes(n) would be n zero bytes
    with pytest.raises(ValueError):
        lrrt.access(b, 7)
    with pytest.raises(ValueError):
        lrrt.access(b, lrrt.READ, nbytes=-1)
    g = dev.graph()
    node = g.add_kernel(saxpy, 1, 16, [np.float32(1), b, b, np.uint32(16)],
                        accesses=[lrrt.access(b, lrrt.READ_WRITE)])
    with pytest.raises(OverflowError):
        g.add_dependency(node, 2**32 + node)
    with pytest.raises(OverflowError):
        g.instantiate(max_lanes=2**32)
    ex = g.instantiate()
    with pytest.raises(ValueError):
        ex.set_kernargs(node, -1, b"\0\0\0\0")
    with pytest.raises(OverflowError):
        ex.set_kernargs(2**32 + node, 0, b"\0\0\0\0")
    with pytest.raises(TypeError):
        ex.set_kernargs(node, 0, 4)  # bytes(4) would be four zero bytes


def test_raw_addresses_on_the_host_must_be_lrrt_memory(dev, saxpy):
    """A raw int address in an eager host launch must lie in an lrrt
    allocation (guarded); any other host address is refused, not run."""
    n = 256
    x = rng.random(n, dtype=np.float32)
    bx, by = dev.buffer_from(x), dev.buffer_from(np.zeros(n, np.float32))
    saxpy.launch(1, 256, [np.float32(2), bx.ptr, by.ptr + 0, np.uint32(n)])
    dev.synchronize()
    assert np.array_equal(by.to_numpy(), np.float32(2) * x)
    outside = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="not inside an lrrt allocation"):
        saxpy.launch(1, 256, [np.float32(2), bx, outside.ctypes.data, np.uint32(n)])
    assert np.all(outside == 0)
    with pytest.raises(ValueError, match="unknown type"):
        lrrt.pack_scalar(1, "f128")
    with pytest.raises(TypeError, match="compiled kernel"):
        lrrt.triton.describe(5)


class _TorchLikeDtype:
    def __init__(self, name, size, floating):
        self.name, self.itemsize, self.is_floating_point = name, size, floating

    def __str__(self):
        return "torch." + self.name


F32, F64, I32 = _TorchLikeDtype("float32", 4, True), _TorchLikeDtype("float64", 8, True), _TorchLikeDtype("int32", 4, False)


class _TorchLikeTensor:
    """What the launch path sees of a CUDA torch tensor: data_ptr() and a
    dtype object (here over an lrrt buffer, so that a host kernel runs)."""

    def __init__(self, buf, dtype):
        self.buf, self.dtype = buf, dtype

    def data_ptr(self):
        return self.buf.ptr


def test_bound_launcher_with_tensors_as_on_a_gpu(dev, saxpy):
    """The GPU fast path (tensors learnt by class and dtype object) run on
    the host: results checked, a tensor of another dtype refused on the
    fast path, numpy arrays refused, the learnt kinds relearnt when they change."""
    k = fake_triton(dev, saxpy)

    class GpuLike:  # what the launcher asks of a device
        backend = "cuda"
    k.device = GpuLike()
    k._build_packer()
    n = 777
    x = rng.integers(-9, 9, n).astype(np.float32)
    y = rng.integers(-9, 9, n).astype(np.float32)
    tx, ty = _TorchLikeTensor(dev.buffer_from(x), F32), _TorchLikeTensor(dev.buffer_from(y), F32)
    grid = ((n + 255) // 256,)
    expect = y.copy()
    for i in range(10):
        a = float(rng.integers(-3, 4))
        k[grid](a, tx, ty, n)
        expect = np.float32(a) * x + expect
    assert _launcher.learnt(k[grid], 1) == (_TorchLikeTensor, F32)  # learnt
    for bad in (_TorchLikeTensor(tx.buf, F64), _TorchLikeTensor(tx.buf, I32), x):
        with pytest.raises(TypeError):
            k[grid](1.0, bad, ty, n)
    k[grid](np.float32(1), tx.buf, ty, n)  # another class (an lrrt buffer) and scalar kind: checked, then learnt
    expect = x + expect
    dev.synchronize()
    assert np.array_equal(ty.buf.to_numpy(np.float32), expect)


def test_objects_of_a_shut_down_runtime_refuse_use():
    r = child("""
        import os, lrrt, lrrt.triton, sys
        sys.path.insert(0, os.environ["TESTS"])
        from test_misuse import fake_triton
        d = lrrt.Device.select("host")
        k = lrrt.Module(d, os.environ["LRRT_KERNEL_DIR"] + "/saxpy.host.so").kernel("saxpy")
        t = fake_triton(d, k)
        b = d.buffer(64)
        run = t.bind((1,))
        run(1.0, b, b, 16)
        q, e, g = d.queue(), d.event(), d.graph()
        d.synchronize()
        lrrt.shutdown()
        d2 = lrrt.Device.select("host")
        b2 = d2.buffer(64)
        for use in (lambda: run(1.0, b2, b2, 16), lambda: k.launch(1, 16, [1.0, b2, b2, 16]), q.synchronize,
                    e.record, lambda: g.add_kernel(k, 1, 16, [1.0, b2, b2, 16])):
            try:
                use(); print("used after shutdown")
            except lrrt.Error as x:
                assert "shut down" in x.message, x
        print("ok")
        """)
    assert_ok(r, "ok")


def test_bound_launcher_shared_by_threads(dev, saxpy):
    """Threads sharing one bound launcher: each launch keeps its own
    arguments (ctypes lets other threads run during lr_launch)."""
    import threading
    k = fake_triton(dev, saxpy)
    n, reps = 256, 1000
    run = k.bind((2,))
    x = rng.integers(1, 5, n).astype(np.float32)
    bx = dev.buffer_from(x)
    outs = [dev.buffer_from(np.zeros(n, np.float32)) for _ in range(3)]

    def work(t):
        for _ in range(reps):
            run(float(t + 1), bx, outs[t], n)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dev.synchronize()
    for t, b in enumerate(outs):
        assert np.array_equal(b.to_numpy(), np.float32(reps * (t + 1)) * x), t


def test_buffer_made_before_numpy_is_bytes():
    r = child("""
        import sys, lrrt
        d = lrrt.Device.select("host")
        b = d.buffer(8)
        b.copy_from(bytes(range(8)))
        assert "numpy" not in sys.modules
        import numpy as np
        a = b.to_numpy()
        assert a.dtype == np.uint8 and a.tolist() == list(range(8)), a
        assert np.asarray(b).tolist() == list(range(8))
        print("ok")
        """)
    assert_ok(r, "ok")
