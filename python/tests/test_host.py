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


def test_graph_over_foreign_memory(dev, saxpy):
    """numpy arrays stand for torch's memory on the host backend: the graph
    registers their allocations itself, replays a diamond over them, and
    unregisters them when it and its exec are gone."""
    n = int(rng.integers(1000, 4000))
    x = rng.integers(-64, 64, n).astype(np.float32)
    y0 = rng.integers(-1000, 1000, n).astype(np.float32)
    z0 = rng.integers(-1000, 1000, n).astype(np.float32)
    y, z = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    g = dev.graph()
    grid = (n + 255) // 256
    # y += 2x and z += 3x are independent (both only read x); then y += z joins them.
    a = g.add_kernel(saxpy, grid, 256, [np.float32(2), x, y, np.uint32(n)],
                     accesses=[lrrt.access(x, lrrt.READ), lrrt.access(y, lrrt.READ_WRITE)])
    b = g.add_kernel(saxpy, grid, 256, [np.float32(3), x, z, np.uint32(n)],
                     accesses=[lrrt.access(x, lrrt.READ), lrrt.access(z, lrrt.READ_WRITE)])
    g.add_kernel(saxpy, grid, 256, [np.float32(1), z, y, np.uint32(n)],
                 accesses=[lrrt.access(z, lrrt.READ), lrrt.access(y, lrrt.READ_WRITE)])
    ex = g.instantiate()
    for _ in range(2):
        y[:], z[:] = y0, z0
        ex.replay()
        zz = np.float32(3) * x + z0
        assert np.array_equal(z, zz)
        assert np.array_equal(y, zz + (np.float32(2) * x + y0))
    assert a != b
    # A raw address is not registered by itself: instantiation names the way out.
    g2 = dev.graph()
    w = np.zeros(n, np.float32)
    g2.add_kernel(saxpy, grid, 256, [np.float32(1), x, w.ctypes.data, np.uint32(n)],
                  accesses=[lrrt.access(x, lrrt.READ), (w.ctypes.data, lrrt.READ_WRITE, 0, 0)])
    with pytest.raises(lrrt.Error) as e:
        g2.instantiate()
    assert "lr_memory_register" in str(e.value)
    with dev.register(w):
        w[:] = y0
        g2.instantiate().replay()
        assert np.array_equal(w, x + y0)
    # While a graph holds x's allocation, a different range inside it is refused;
    # the graphs' registrations go with them, and then it is accepted.
    with pytest.raises(lrrt.Error) as e:
        dev.register(x.ctypes.data + 40, nbytes=40)
    assert "overlaps the registered range" in str(e.value)
    del ex, g, g2
    import gc
    gc.collect()
    with dev.register(x.ctypes.data + 40, nbytes=40) as r:
        assert r.nbytes == 40


def test_triton_entries_describe():
    for target in ("sm_90", "gfx942", "gfx1100"):
        d = lrrt.triton.describe(ENTRIES / target / "add_kernel")
        assert d["signature"] == "*fp32:16, *fp32:16, *fp32:16, i32"
        assert d["block"] == d["warp_size"] * 4
        assert [h["name"] for h in d["hidden"]] == ["global_scratch", "profile_scratch"]
    with pytest.raises(lrrt.Error) as e:
        lrrt.triton.describe(ENTRIES / "no_such")
    assert e.value.status_name == "LR_ERROR_INVALID_IMAGE"


def _packer(entry):
    """A TritonKernel's argument packer without a device (its module is
    loaded only to launch)."""
    k = lrrt.triton.TritonKernel.__new__(lrrt.triton.TritonKernel)
    k.device, k.desc = None, lrrt.triton.describe(entry)
    k.params, k._scratch = k.desc["params"], {}
    k._build_packer()
    return k


_ENCODE = {"f16": "<e", "f32": "<f", "f64": "<d", "i8": "<b", "i16": "<h", "i32": "<i", "i64": "<q", "i1": "<B"}


def test_triton_packer_matches_each_binarys_own_layout():
    """The eager path's argument block (one struct.Struct) against the layout
    the binary itself declares (`lrrt inspect`: AMD metadata, cubin
    parameter info): every argument's bytes at its offset, the hidden
    scratch pointers 0, nothing past the explicit size. Fresh random values."""
    import json
    import struct
    import subprocess
    cli = os.environ.get("LRRT_CLI")
    if not cli:
        pytest.skip("LRRT_CLI (the lrrt binary) not set: run through ctest")
    checked = 0
    for entry in sorted(p for p in ENTRIES.glob("*/*") if p.is_dir()):
        if any("tensordesc" in p for p in lrrt.triton.describe(entry)["params"]):
            continue  # packed at the kernel's offsets: tests/test_triton_tensordesc.py
        k = _packer(entry)
        out = subprocess.run([cli, "inspect", str(entry), "--format", "json"], capture_output=True, text=True, check=True)
        kernel = json.loads(out.stdout)["objects"][0]["targets"][0]["kernels"][0]
        layout = [a for a in kernel["args"] if a["kind"] != "hidden"]
        assert len(layout) == len(k.params) + len(k.desc["hidden"]), entry
        args, expect = [], []
        for p, a in zip(k.params, layout):
            if p["pointer"]:
                v = int(rng.integers(1, 2**63)) & ~0xF
                args.append(v)
                expect.append(struct.pack("<Q", v))
            elif p["type"] in ("f16", "f32", "f64"):
                v = float(np.float16(rng.uniform(-100, 100)))  # exact in every float type
                args.append(v)
                expect.append(struct.pack(_ENCODE[p["type"]], v))
            else:
                v = int(rng.integers(0, 100))
                args.append(v)
                expect.append(struct.pack(_ENCODE[p["type"]], v))
            assert a["size"] == len(expect[-1]), (entry, p)
        data = k.pack((1,), args)
        explicit = max(a["offset"] + a["size"] for a in layout)
        assert len(data) == explicit, entry
        for a, want in zip(layout, expect):
            assert data[a["offset"]:a["offset"] + a["size"]] == want, (entry, a)
        for a in layout[len(k.params):]:
            assert data[a["offset"]:a["offset"] + a["size"]] == bytes(8), (entry, a)
        checked += 1
        with pytest.raises(TypeError, match="takes"):
            k.pack((1,), args[:-1])
        scalar = next((i for i, p in enumerate(k.params) if not p["pointer"] and p["type"].startswith("i")), None)
        if scalar is not None:
            bad = list(args)
            bad[scalar] = 2.5
            with pytest.raises(TypeError, match=k.params[scalar]["name"]):
                k.pack((1,), bad)
    assert checked >= 9


def test_pip_install_offline(tmp_path):
    """`pip install ./python` needs nothing from an index (python/_build has
    no requirements), and the installed package, not the source, loads."""
    import subprocess
    import sys
    pytest.importorskip("pip")
    src = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "-q",
                        "--prefix", str(tmp_path / "prefix"), str(src)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    installed = list((tmp_path / "prefix").rglob("lrrt/__init__.py"))
    assert len(installed) == 1, installed
    site = installed[0].parents[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    probe = ("import lrrt, lrrt.triton, numpy as np; print(lrrt.__file__); d = lrrt.Device.select('host'); "
             "b = d.buffer_from(np.arange(7, dtype=np.int32)); print(b.to_numpy().tolist(), lrrt.version())")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0].startswith(str(site))
    assert out[1].startswith("[0, 1, 2, 3, 4, 5, 6] ")
