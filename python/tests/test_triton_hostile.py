"""Hostile input to lrrt.triton's launchers and describe (issue 38's rule:
bad input raises naming what is wrong, never crashes, never launches
something else): queues that are gone or are no queue, grids that tuple()
would take apart, compiled-kernel objects missing their parts. The launch
path runs on the host backend through test_misuse's fake_triton (host
saxpy with Triton's layout)."""
import json
import types
from pathlib import Path

import numpy as np
import pytest

import lrrt
import lrrt.triton
from test_misuse import KERNELS, assert_ok, child, fake_triton

ENTRY = Path(__file__).resolve().parents[2] / "tests" / "triton" / "entries" / "gfx942" / "add_kernel"


@pytest.fixture(scope="module")
def dev():
    return lrrt.Device.select("host")


@pytest.fixture(scope="module")
def saxpy(dev):
    return lrrt.Module(dev, KERNELS / "saxpy.host.so").kernel("saxpy")


def test_bind_refuses_a_destroyed_queue(dev, saxpy):
    """A queue whose handle was destroyed: bind (and launch, which binds)
    refuses it, rather than binding 0, which the launch block reads as the
    default queue; a launcher bound before the destroy is refused by
    lr_launch_block's handle lookup. The default queue still works."""
    k = fake_triton(dev, saxpy)
    n = 64
    x = np.arange(n, dtype=np.float32)
    bx, by = dev.buffer_from(x), dev.buffer_from(np.zeros(n, np.float32))
    q = dev.queue()
    early = k.bind((1,), queue=q)
    early(np.float32(1), bx, by, n)
    q.synchronize()
    q.__del__()  # the handle is destroyed; the Python object lives on
    assert not q._h
    for bind in (lambda: k.bind((1,), queue=q), lambda: k.launch((1,), np.float32(1), bx, by, n, queue=q)):
        with pytest.raises(lrrt.Error) as e:
            bind()
        assert e.value.operation == "lrrt.triton: bind" and "the queue was destroyed" in e.value.message
    with pytest.raises(lrrt.Error, match="destroyed queue handle"):
        early(np.float32(1), bx, by, n)
    dev.synchronize()
    assert np.array_equal(by.to_numpy(np.float32), x)  # only the launch before the destroy ran
    k[(1,)](np.float32(1), bx, by, n)
    dev.synchronize()
    assert np.array_equal(by.to_numpy(np.float32), 2 * x)


def test_bind_refuses_what_is_not_a_queue(dev, saxpy):
    k = fake_triton(dev, saxpy)
    for queue in (5, object(), dev, "q"):
        with pytest.raises(TypeError, match="queue is an lrrt.Queue or None, not"):
            k.bind((1,), queue=queue)


def test_bind_refuses_a_queue_or_kernel_of_a_shut_down_runtime():
    """After lrrt.shutdown() a handle's address may name a new object of the
    next runtime: bind refuses by generation, as every other use does."""
    r = child("""
        import os, sys, lrrt, lrrt.triton
        sys.path.insert(0, os.environ["TESTS"])
        from test_misuse import fake_triton
        d = lrrt.Device.select("host")
        k = lrrt.Module(d, os.environ["LRRT_KERNEL_DIR"] + "/saxpy.host.so").kernel("saxpy")
        t, q = fake_triton(d, k), d.queue()
        d.synchronize()
        lrrt.shutdown()
        d2 = lrrt.Device.select("host")
        k2 = lrrt.Module(d2, os.environ["LRRT_KERNEL_DIR"] + "/saxpy.host.so").kernel("saxpy")
        for bind, what in ((lambda: fake_triton(d2, k2).bind((1,), queue=q), "queue"), (lambda: t.bind((1,)), "module"),
                           (lambda: t.launch((2,), 1.0, 0, 0, 0), "module")):
            try:
                bind(); print("bound after shutdown")
            except lrrt.Error as x:
                assert "shut down" in x.message and what in x.message, x
        print("ok")
        """)
    assert_ok(r, "ok")


def test_grid_that_tuple_would_take_apart_is_refused(dev, saxpy):
    """bytes, strings, mappings and sets are iterable: tuple(b"ab") is a
    97 x 98 grid, a dict's keys or a set's arbitrary order launched."""
    k = fake_triton(dev, saxpy)
    b = dev.buffer(64 * 4, np.float32)
    for grid in (b"ab", bytearray(b"\x02"), "2", {2: 1}, {2, 3}, frozenset({4})):
        with pytest.raises(TypeError, match="give the grid as an int or a tuple"):
            k[grid](1.0, b, b, 16)
        with pytest.raises(TypeError, match="give the grid as an int or a tuple"):
            k.launch(grid, 1.0, b, b, 16)
        with pytest.raises(TypeError, match="give the grid as an int or a tuple"):
            k.bind(grid)
        # lrrt.Kernel.launch's grid (dim3) likewise.
        with pytest.raises(TypeError, match="grid: give an int or a tuple"):
            saxpy.launch(grid, 64, [np.float32(1), b, b, np.uint32(16)])
    dev.synchronize()
    # Lists, tuples and numpy arrays of whole numbers are grids.
    for grid in ([1], (1, 1), np.array([1, 1])):
        k[tuple(grid) if isinstance(grid, np.ndarray) else grid](1.0, b, b, 16)
        saxpy.launch(grid, 64, [np.float32(1), b, b, np.uint32(16)])
    dev.synchronize()


def _compiled(metadata=None, asm=None):
    md = json.loads((ENTRY / "add_kernel.json").read_text()) if metadata is None else metadata
    return types.SimpleNamespace(metadata=md, asm={"ttir": (ENTRY / "add_kernel.ttir").read_text()} if asm is None else asm)


def test_describe_of_a_compiled_kernel_missing_its_parts(dev):
    """A compiled-kernel object (duck-typed: metadata and asm) whose parts
    are missing or of the wrong kind: TypeError naming the part, not an
    AttributeError from inside lrrt."""
    assert lrrt.triton.describe(_compiled())["name"] == "add_kernel"
    md = json.loads((ENTRY / "add_kernel.json").read_text())
    cases = [
        (_compiled(asm={}), "asm has no Triton IR"),
        (_compiled(asm={"ttir": b"bytes"}), "asm has no Triton IR"),
        (_compiled(asm=[("ttir", "x")]), "asm is a list, not a mapping"),
        (types.SimpleNamespace(metadata=md, asm=None), "asm is a NoneType, not a mapping"),
        (_compiled(metadata=[1, 2]), "metadata is a list, not a mapping"),
        (_compiled(metadata={**md, "target": 5}), "field \"target\" is a int without backend, arch, warp_size"),
    ]
    for obj, match in cases:
        with pytest.raises(TypeError) as e:
            lrrt.triton.describe(obj)
        assert match in str(e.value), str(e.value)
    # Described, but no code object for its backend: load names it.
    with pytest.raises(TypeError, match="asm has no \"hsaco\" bytes"):
        lrrt.triton.load(dev, _compiled())


def test_describe_refuses_a_path_with_a_nul(tmp_path):
    """C reads a path only up to a NUL: "entry\\0x" would describe "entry"."""
    (tmp_path / "entry").symlink_to(ENTRY, target_is_directory=True)
    assert lrrt.triton.describe(tmp_path / "entry")["name"] == "add_kernel"
    for path in (str(tmp_path / "entry") + "\0x", str(tmp_path / "entry") + "\0"):
        with pytest.raises(ValueError, match="NUL"):
            lrrt.triton.describe(path)
