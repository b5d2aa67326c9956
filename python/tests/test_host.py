"""lrrt's Python package on the host backend: fresh random inputs, outputs
poisoned, every element checked. ctest runs it (tests/CMakeLists.txt) with
LRRT_LIBRARY and LRRT_KERNEL_DIR set."""
import os
from pathlib import Path

import numpy as np
import pytest

import lrrt
import lrrt.triton

KERNELS = Path(os.environ.get("LRRT_KERNEL_DIR", Path(__file__).resolve().parents[2] / "build" / "kernels"))
ENTRIES = Path(__file__).resolve().parents[2] / "tests" / "triton" / "entries"
rng = np.random.default_rng()


@pytest.fixture(scope="module")
def dev():
    return lrrt.Device.select("host")


@pytest.fixture(scope="module")
def saxpy(dev):
    return lrrt.Module(dev, KERNELS / "saxpy.host.so").kernel("saxpy")


def test_device_properties_and_stats(dev):
    p = dev.properties
    assert p["backend"] == "host"
    assert p["compute_units"] >= 1
    before = dev.memory_stats()["allocation_count"]
    b = dev.buffer(4096)
    assert dev.memory_stats()["allocation_count"] == before + 1
    b.free()
    assert dev.memory_stats()["free_count"] >= 1


def test_buffer_round_trip_and_view(dev):
    a = rng.random(1000, dtype=np.float32)
    b = dev.buffer_from(a)
    assert np.array_equal(b.to_numpy(), a)
    v = b.numpy()
    v[:] = 7.0
    assert np.all(b.to_numpy() == 7.0)
    assert np.asarray(b).ctypes.data == b.ptr


def test_saxpy_eager(dev, saxpy):
    n = int(rng.integers(1000, 5000))
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    a = np.float32(rng.random() * 4)
    bx, by = dev.buffer_from(x), dev.buffer_from(y)
    saxpy.launch(grid=(n + 255) // 256, block=256, args=[a, bx, by, np.uint32(n)])
    dev.synchronize()
    assert np.array_equal(by.to_numpy(), a * x + y)


def test_numpy_arrays_as_args(dev, saxpy):
    n = 777
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    expect = np.float32(3) * x + y
    saxpy.launch(grid=4, block=256, args=[np.float32(3), x, y, np.uint32(n)])
    dev.synchronize()
    assert np.array_equal(y, expect)


def test_args_checked(dev, saxpy):
    with pytest.raises(lrrt.Error) as e:
        saxpy.pack([np.float32(1), 0, 0])
    assert "takes 4" in str(e.value)
    with pytest.raises(lrrt.Error):
        saxpy.pack([np.float64(1), 0, 0, np.uint32(1)])


def test_errors_carry_last_message(dev):
    with pytest.raises(lrrt.Error) as e:
        lrrt.Module(dev, b"not a code object at all")
    assert e.value.status_name.startswith("LR_ERROR")
    assert e.value.message


def test_queue_events(dev, saxpy):
    n = 4096
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    bx, by = dev.buffer_from(x), dev.buffer_from(y)
    q = dev.queue()
    e0, e1 = dev.event(), dev.event()
    e0.record(q)
    saxpy.launch(16, 256, [np.float32(2), bx, by, np.uint32(n)], queue=q)
    e1.record(q)
    e1.synchronize()
    assert e0.elapsed_ns(e1) >= 0
    assert np.array_equal(by.to_numpy(), np.float32(2) * x + y)


def test_graph_record_replay_patch(dev, saxpy):
    n = 2048
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    bx, by = dev.buffer_from(x), dev.buffer_from(y)
    g = dev.graph()
    node = g.add_kernel(saxpy, 8, 256, [np.float32(2), bx, by, np.uint32(n)],
                        accesses=[lrrt.access(bx, lrrt.READ), lrrt.access(by, lrrt.READ_WRITE)])
    ex = g.instantiate()
    expect = y.copy()
    for _ in range(3):
        ex.replay()
        expect = np.float32(2) * x + expect
    assert np.array_equal(by.to_numpy(), expect)
    # Patch a = 5 (argument 0 at the kernel's declared offset).
    off = saxpy.args[0]["offset"]
    ex.set_kernargs(node, off, np.float32(5).tobytes())
    ex.replay()
    expect = np.float32(5) * x + expect
    assert np.array_equal(by.to_numpy(), expect)


def test_triton_entries_describe():
    for target in ("sm_90", "gfx942", "gfx1100"):
        d = lrrt.triton.describe(ENTRIES / target / "add_kernel")
        assert d["signature"] == "*fp32:16, *fp32:16, *fp32:16, i32"
        assert d["block"] == d["warp_size"] * 4
        assert [h["name"] for h in d["hidden"]] == ["global_scratch", "profile_scratch"]
    with pytest.raises(lrrt.Error) as e:
        lrrt.triton.describe(ENTRIES / "no_such")
    assert e.value.status_name == "LR_ERROR_INVALID_IMAGE"
