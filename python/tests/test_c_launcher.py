"""lrrt.triton's C launcher (python/lrrt/_fastlaunch.c): it writes every
argument kind exactly as the ctypes launcher's struct.pack does, sends
everything its guards do not pass to the checked path, and launches the same
results as the ctypes launcher. The launch function is a ctypes callback
here that keeps each block it is given, so the bytes themselves are checked."""
import ctypes
import gc
import math
import os
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import lrrt
import lrrt.triton
from lrrt import _launcher
from lrrt._args import bf16_bits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_misuse import F32, F64, _TorchLikeTensor, fake_triton  # noqa: E402

fast, why_not = _launcher._c_launcher_module()
needs_c = pytest.mark.skipif(fast is None, reason=f"no C launcher: {why_not}")
rng = np.random.default_rng()


def test_the_c_launcher_is_used_where_built():
    """ctest sets LRRT_TEST_EXPECT_C_LAUNCHER when the build made the module:
    then the package must find and load it (not fall back to ctypes)."""
    if os.environ.get("LRRT_TEST_EXPECT_C_LAUNCHER") != "1":
        pytest.skip("the build has no C launcher")
    assert fast is not None, why_not
    if os.environ.get("LRRT_PYTHON_LAUNCHER", "auto") == "auto":
        assert _launcher.launcher_choice() == "c"

# (code, struct code, size): every kind the C launcher writes
KINDS = [("b", "b", 1), ("h", "h", 2), ("i", "i", 4), ("q", "q", 8), ("B", "B", 1), ("H", "H", 2), ("I", "I", 4),
         ("Q", "Q", 8), ("f", "f", 4), ("d", "d", 8), ("bf16", "H", 2), ("ptr", "Q", 8)]
RANGES = {"b": (-2**7, 2**7 - 1), "h": (-2**15, 2**15 - 1), "i": (-2**31, 2**31 - 1), "q": (-2**63, 2**63 - 1),
          "B": (0, 2**8 - 1), "H": (0, 2**16 - 1), "I": (0, 2**32 - 1), "Q": (0, 2**64 - 1), "ptr": (0, 2**64 - 1)}


class Tensor:
    """A pointer argument: data_ptr() and a dtype object."""

    def __init__(self, address, dtype=F32):
        self.address, self.dtype = address, dtype

    def data_ptr(self):
        return self.address


class Recorder:
    """A launch function (ctypes callback) keeping each block it gets."""

    def __init__(self, size, status=0):
        self.blocks, self.status, self.size = [], status, size
        self.fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(self._call)
        self.address = ctypes.cast(self.fn, ctypes.c_void_p).value

    def _call(self, address):
        self.blocks.append(ctypes.string_at(address, self.size))
        return self.status


def layout_of(kinds):
    """Natural alignment after the 32-byte header, as lrrt.triton packs."""
    out, offset = [], 32
    for code, _, size in kinds:
        offset += -offset % size
        out.append((code, offset))
        offset += size
    return out, offset + 8  # 8 trailing bytes: a hidden pointer's place, kept from the template


def expected_block(template, kinds, layout, values):
    block = bytearray(template)
    for (code, sc, size), (_, offset), v in zip(kinds, layout, values):
        if code == "ptr":
            v = v.data_ptr()
        elif code == "bf16":
            v = bf16_bits(v)
        block[offset:offset + size] = struct.pack("<" + sc, v)
    return bytes(block)


def make(kinds, status=0):
    layout, size = layout_of(kinds)
    template = rng.integers(0, 256, size, dtype=np.uint8).tobytes()  # poison where the arguments go
    rec = Recorder(size, status)
    slow_calls = []

    def slow(*args, **kwargs):
        slow_calls.append((args, kwargs))

    def fail(status):
        raise lrrt.Error(status, "launch", f"status {status}")
    run = fast.Launcher(rec.address, template, layout, slow, fail, rec)
    return run, rec, template, layout, slow_calls


def random_value(code):
    if code in RANGES:
        lo, hi = RANGES[code]
        v = int(rng.integers(lo, hi, endpoint=True, dtype=np.int64 if lo < 0 else np.uint64))
        return Tensor(v) if code == "ptr" else v
    if code == "d":
        return float(rng.standard_normal() * 10.0 ** rng.integers(-300, 300))
    return float(np.float32(rng.standard_normal() * 10.0 ** rng.integers(-30, 30)))


def learn_all(run, values):
    for i, v in enumerate(values):
        run.learn(i, v.__class__, getattr(v, "dtype", None))


@needs_c
def test_every_kind_is_written_as_struct_writes_it():
    run, rec, template, layout, slow_calls = make(KINDS)
    for trial in range(200):
        values = [random_value(code) for code, _, _ in KINDS]
        if trial == 0:  # the bounds, exactly
            values = [Tensor(RANGES["ptr"][trial % 2]) if c == "ptr" else RANGES[c][0] if c in RANGES else 0.0
                      for c, _, _ in KINDS]
        learn_all(run, values)
        run(*values)
        assert not slow_calls, slow_calls
        assert rec.blocks[-1] == expected_block(template, KINDS, layout, values)
    assert len(rec.blocks) == 200


@pytest.mark.parametrize("value", [0.0, -0.0, math.inf, -math.inf, math.nan, 3.4028234663852886e38, 1e-45, 1e-50,
                                   1.0000001, 65504.0, 3.3895313892515355e38])
@needs_c
def test_floats_at_the_edges_as_struct(value):
    kinds = [("f", "f", 4), ("bf16", "H", 2), ("d", "d", 8)]
    run, rec, template, layout, slow_calls = make(kinds)
    learn_all(run, [value] * 3)
    run(value, value, value)
    assert not slow_calls
    assert rec.blocks[-1] == expected_block(template, kinds, layout, [value] * 3)


@needs_c
@pytest.mark.parametrize("code", [c for c in RANGES if c != "ptr"])
def test_integers_that_do_not_fit_take_the_checked_path(code):
    kinds = [k for k in KINDS if k[0] == code]
    run, rec, template, layout, slow_calls = make(kinds)
    run.learn(0, int, None)
    lo, hi = RANGES[code]
    for v in (lo - 1, hi + 1, lo - int(rng.integers(2, 2**20)), hi + int(rng.integers(2, 2**20))):
        run(v)
    assert rec.blocks == [] and [a for a, _ in slow_calls] == [(lo - 1,), (hi + 1,), slow_calls[2][0], slow_calls[3][0]]
    run(hi)
    assert rec.blocks == [expected_block(template, kinds, layout, [hi])]


@needs_c
def test_what_struct_refuses_takes_the_checked_path():
    kinds = [("f", "f", 4), ("bf16", "H", 2), ("i", "i", 4)]
    run, rec, _, _, slow_calls = make(kinds)
    run.learn(0, float, None)
    run.learn(1, float, None)
    run.learn(2, int, None)
    with pytest.raises(OverflowError):  # what the ctypes launcher's pack does with each
        struct.pack("<f", 1e39)
    with pytest.raises(OverflowError):
        bf16_bits(-1e300)
    with pytest.raises(struct.error):
        struct.pack("<i", 2**31)
    for args in ((1e39, 1.0, 1), (1.0, -1e300, 1), (1.0, 1.0, 2**31)):
        run(*args)
    assert rec.blocks == [] and len(slow_calls) == 3


@needs_c
def test_guards():
    t = Tensor(0x1000, F32)
    run, rec, _, _, slow_calls = make([("ptr", "Q", 8), ("i", "i", 4)])
    run(t, 5)  # nothing learnt yet
    assert len(slow_calls) == 1 and not rec.blocks
    run.learn(0, Tensor, F32)
    run.learn(1, int, None)
    run(t, 5)
    assert len(rec.blocks) == 1
    for args, kwargs in (((Tensor(0x1000, F64), 5), {}),  # another dtype
                         ((t, True), {}),  # another class (bool is not int)
                         ((t, 5.0), {}),
                         ((t,), {}), ((t, 5, 6), {}),  # another count
                         ((t, 5), {"queue": None})):  # a keyword
        run(*args, **kwargs)
        assert slow_calls[-1] == (args, kwargs)
    assert len(rec.blocks) == 1 and len(slow_calls) == 7

    class NoPointer(Tensor):
        def data_ptr(self):
            raise RuntimeError("freed")
    run.learn(0, NoPointer, F32)
    run(NoPointer(1, F32), 5)  # data_ptr() raising: the checked path raises it in its words
    assert len(slow_calls) == 8 and len(rec.blocks) == 1
    assert run.guards() == ((NoPointer, F32), (int, None))
    run.disarm()
    run.learn(0, Tensor, F32)
    run(t, 5)
    assert len(slow_calls) == 9 and len(rec.blocks) == 1


@needs_c
def test_a_failed_launch_raises_through_fail():
    run, rec, _, _, _ = make([("i", "i", 4)], status=5)
    run.learn(0, int, None)
    with pytest.raises(lrrt.Error, match="status 5"):
        run(3)
    assert len(rec.blocks) == 1


@needs_c
def test_bad_construction_is_refused():
    rec = Recorder(48)
    ok = bytes(48)

    def noop(*a):
        pass
    for args, error, words in (
            ((0, ok, [], noop, noop, None), ValueError, "launch_address is 0"),
            ((rec.address, bytes(16), [], noop, noop, None), ValueError, "fewer than the 32-byte header"),
            ((rec.address, ok, [("x", 32)], noop, noop, None), ValueError, "unknown code 'x'"),
            ((rec.address, ok, [("q", 16)], noop, noop, None), ValueError, "offset 16"),
            ((rec.address, ok, [("q", 41)], noop, noop, None), ValueError, "offset 41"),
            ((rec.address, ok, [("q", 32)], 5, noop, None), TypeError, "callable"),
            ((rec.address, ok, [5], noop, noop, None), TypeError, r"layout\[0\] is not a \(code, offset\) tuple"),
            ((rec.address, ok, [("q",)], noop, noop, None), TypeError, "")):
        with pytest.raises(error, match=words):
            fast.Launcher(*args)


@needs_c
def test_launchers_in_cycles_are_collected():
    import weakref
    refs = []
    for _ in range(50):
        run, rec, *_ = make([("i", "i", 4)])
        run.me = run  # a cycle through the instance's __dict__
        refs.append(weakref.ref(run))
        del run
    gc.collect()
    assert all(r() is None for r in refs)


@pytest.fixture(scope="module")
def dev():
    return lrrt.Device.select("host")


@pytest.fixture(scope="module")
def saxpy(dev):
    return lrrt.Module(dev, Path(__import__("os").environ["LRRT_KERNEL_DIR"]) / "saxpy.host.so").kernel("saxpy")


@pytest.mark.parametrize("choice", ["c", "ctypes"])
def test_both_launchers_compute_the_same(dev, saxpy, choice, monkeypatch):
    if choice == "c" and fast is None:
        pytest.skip(f"no C launcher: {why_not}")
    monkeypatch.setenv("LRRT_PYTHON_LAUNCHER", choice)
    k = fake_triton(dev, saxpy)

    class GpuLike:
        backend = "cuda"
    k.device = GpuLike()
    k._build_packer()
    n = int(rng.integers(300, 3000))
    x = rng.standard_normal(n).astype(np.float32)
    y0 = rng.standard_normal(n).astype(np.float32)
    ty = _TorchLikeTensor(dev.buffer_from(np.full(n, np.nan, np.float32)), F32)  # poisoned
    tx = _TorchLikeTensor(dev.buffer_from(x), F32)
    ty.buf.copy_from(y0)
    run = k.bind(((n + 255) // 256,))
    assert run.implementation == choice
    expect = y0.copy()
    for _ in range(8):
        a = float(np.float32(rng.standard_normal()))
        run(a, tx, ty, n)
        expect = np.float32(a) * x + expect
    dev.synchronize()
    assert np.array_equal(ty.buf.to_numpy(np.float32), expect)


def test_the_choice_is_checked(dev, saxpy, monkeypatch):
    k = fake_triton(dev, saxpy)
    monkeypatch.setenv("LRRT_PYTHON_LAUNCHER", "fastest")
    with pytest.raises(ValueError, match="LRRT_PYTHON_LAUNCHER='fastest'"):
        k.bind((1,))
    monkeypatch.setenv("LRRT_PYTHON_LAUNCHER", "c")
    monkeypatch.setattr(_launcher, "_c_module", (None, "not built here"))
    with pytest.raises(ImportError, match="LRRT_PYTHON_LAUNCHER=c.*not built here"):
        k.bind((2,))
    monkeypatch.setenv("LRRT_PYTHON_LAUNCHER", "auto")
    assert k.bind((3,)).implementation == "ctypes"
