"""By-value aggregate arguments from Python on the host backend: a
ctypes.Structure, a numpy structured scalar, complex numbers and bytes. Fresh
random inputs, outputs poisoned (NaN), every element checked."""
import ctypes
import os
import struct
from pathlib import Path

import numpy as np
import pytest

import lrrt

KERNELS = Path(os.environ.get("LRRT_KERNEL_DIR", Path(__file__).resolve().parents[2] / "build" / "kernels"))
rng = np.random.default_rng()


class Inner(ctypes.Structure):
    _fields_ = [("scale", ctypes.c_double), ("n", ctypes.c_uint32)]


class Params(ctypes.Structure):
    _fields_ = [("x", ctypes.c_void_p), ("y", ctypes.c_void_p), ("bias", ctypes.c_float), ("inner", Inner)]


@pytest.fixture(scope="module")
def dev():
    return lrrt.Device.select("host")


@pytest.fixture(scope="module")
def struct_kernel(dev):
    return lrrt.Module(dev, KERNELS / "struct_args.host.so").kernel("struct_args")


@pytest.fixture(scope="module")
def complex_module(dev):
    return lrrt.Module(dev, KERNELS / "axpy_complex.host.so")


def inputs(dev, n):
    x = rng.uniform(-4, 4, n).astype(np.float32)
    bx = dev.buffer_from(x)
    by = dev.buffer_from(np.full(n, np.nan, dtype=np.float32))  # poisoned
    return x, bx, by


def expected(x, scale, bias):
    return (x.astype(np.float64) * scale).astype(np.float32) + np.float32(bias)


def test_ctypes_structure(dev, struct_kernel):
    n = int(rng.integers(1000, 5000))
    x, bx, by = inputs(dev, n)
    scale, bias = float(rng.uniform(-3, 3)), float(np.float32(rng.uniform(-1, 1)))
    assert ctypes.sizeof(Params) == 40
    p = Params(bx.ptr, by.ptr, bias, Inner(scale, n))
    struct_kernel.launch(grid=(n + 255) // 256, block=256, args=[p])
    dev.synchronize()
    assert np.array_equal(by.to_numpy(), expected(x, scale, bias))
    assert struct_kernel.pack([p]) == bytes(p)


def test_numpy_structured_scalar(dev, struct_kernel):
    n = int(rng.integers(1000, 5000))
    x, bx, by = inputs(dev, n)
    inner = np.dtype([("scale", "<f8"), ("n", "<u4")], align=True)
    dt = np.dtype([("x", "<u8"), ("y", "<u8"), ("bias", "<f4"), ("inner", inner)], align=True)
    assert dt.itemsize == 40
    rec = np.zeros(1, dtype=dt)
    scale, bias = float(rng.uniform(-3, 3)), np.float32(rng.uniform(-1, 1))
    rec[0] = (bx.ptr, by.ptr, bias, (scale, n))
    assert isinstance(rec[0], np.void)
    struct_kernel.launch(grid=(n + 255) // 256, block=256, args=[rec[0]])
    dev.synchronize()
    assert np.array_equal(by.to_numpy(), expected(x, scale, bias))


@pytest.mark.parametrize("kernel,dtype", [("axpy_c64", np.complex64), ("axpy_c128", np.complex128)])
@pytest.mark.parametrize("form", ["python", "numpy", "bytes"])
def test_complex_axpy(dev, complex_module, kernel, dtype, form):
    k = complex_module.kernel(kernel)
    n = int(rng.integers(1000, 5000))
    x = (rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)).astype(dtype)
    y = (rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)).astype(dtype)
    a = complex(rng.uniform(-2, 2), rng.uniform(-2, 2))
    a_typed = dtype(a)
    arg = {"python": a, "numpy": a_typed, "bytes": a_typed.tobytes()}[form]
    bx, by = dev.buffer_from(x), dev.buffer_from(y)
    k.launch(grid=(n + 255) // 256, block=256, args=[arg, bx, by, np.uint32(n)])
    dev.synchronize()
    got = by.to_numpy().view(dtype)
    want = a_typed * x + y
    tol = 1e-5 if dtype == np.complex64 else 1e-13
    assert np.allclose(got.real, want.real, rtol=tol, atol=tol)
    assert np.allclose(got.imag, want.imag, rtol=tol, atol=tol)
    assert not np.allclose(got, y)


def test_python_complex_packs_by_the_kernels_size(complex_module):
    c64 = complex_module.kernel("axpy_c64")
    c128 = complex_module.kernel("axpy_c128")
    assert c64.pack([1.5 - 2j, 0, 0, np.uint32(1)])[:8] == struct.pack("<ff", 1.5, -2)
    assert c128.pack([1.5 - 2j, 0, 0, np.uint32(1)])[:16] == struct.pack("<dd", 1.5, -2)


def test_aggregate_errors(dev, struct_kernel, complex_module):
    saxpy = lrrt.Module(dev, KERNELS / "saxpy.host.so").kernel("saxpy")
    with pytest.raises(lrrt.ArgumentError, match="complex number for the kernel's real"):
        saxpy.pack([1 + 2j, 0, 0, np.uint32(1)])
    with pytest.raises(lrrt.Error, match="is 39 bytes by value but the kernel's is 40 bytes"):
        struct_kernel.pack([b"\0" * 39])
    with pytest.raises(lrrt.Error, match="is 16 bytes by value but the kernel's is 8 bytes"):
        complex_module.kernel("axpy_c64").pack([np.complex128(1), 0, 0, np.uint32(1)])
