#!/usr/bin/env python3
"""scripts/tensormap-check's Python step: the Triton 3.6 tensor-descriptor
fixture (tests/triton/entries/sm_90/tma_add_kernel) launched through
lrrt.triton on an NVIDIA sm_90+ GPU, each case checked element by element
against torch (out = a + b, out poisoned with NaN first):

  entry    the cache entry loaded by lrrt.triton, descriptors built by
           Triton's own triton.tools.tensor_descriptor.TensorDescriptor over
           torch tensors: the fixture's 100 x 200, then random sizes with b a
           strided view (rows padded), padding "zero" and "nan"
  native   lrrt.triton.TensorDescriptor over lrrt buffers (no torch tensors)
  capture  lrrt.triton.capture of Triton's own JIT launch of the same source
           with TensorDescriptors, replayed into a poisoned output

  LRRT_LIBRARY=PACK/src/runtime/liblrrt.so /opt/torch/.venv/bin/python scripts/tensormap_check_python.py

Prints one line per case ("ok" or what failed: the first wrong element, the
count); exit 0 when every case passed, 1 otherwise. A case that raises is
reported with its exception and the others still run."""
import importlib.util
import math
import os
import sys
import tempfile
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
ENTRY = REPO / "tests" / "triton" / "entries" / "sm_90" / "tma_add_kernel"
BLOCK = (32, 64)  # the entry's descriptor block (tensordesc<fp32[32, 64]>)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import lrrt  # noqa: E402
import lrrt.triton  # noqa: E402

rng = np.random.default_rng()


def grid(m, n):
    return (math.ceil(m / BLOCK[0]), math.ceil(n / BLOCK[1]))


def compare(name, got, want):
    """got, want: torch tensors of one shape. A line saying what differs."""
    got, want = got.cpu(), want.cpu()
    bad = ~(got == want)
    count = int(bad.sum())
    if count == 0:
        return True, f"{name}: ok ({want.numel()} elements exact)"
    i = tuple(int(x) for x in bad.nonzero()[0])
    return False, f"{name}: {count} of {want.numel()} elements wrong; first at {i}: got {float(got[i])}, want {float(want[i])}"


def inputs(m, n, pitch):
    a = torch.randn(m, n, device="cuda", dtype=torch.float32)
    b = torch.randn(m, pitch, device="cuda", dtype=torch.float32)[:, :n]  # rows of `pitch` elements
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
    return a, b, out


def case_entry(dev, k, m, n, pitch, padding):
    from triton.tools.tensor_descriptor import TensorDescriptor
    a, b, out = inputs(m, n, pitch)
    da = TensorDescriptor(a, list(a.shape), list(a.stride()), list(BLOCK), padding=padding)
    db = TensorDescriptor(b, list(b.shape), list(b.stride()), list(BLOCK), padding=padding)
    torch.cuda.synchronize()
    k[grid(m, n)](da, db, out, m, n)
    dev.synchronize()
    return compare(f"entry {m}x{n} (b pitch {pitch}, padding {padding})", out, a + b)


def case_native(dev, k, m, n):
    a = rng.standard_normal((m, n)).astype(np.float32)
    b = rng.standard_normal((m, n)).astype(np.float32)
    ba, bb = dev.buffer_from(a), dev.buffer_from(b)
    bo = dev.buffer_from(np.full((m, n), np.nan, np.float32))
    k[grid(m, n)](lrrt.triton.TensorDescriptor(ba, [m, n], None, list(BLOCK)),
                  lrrt.triton.TensorDescriptor(bb, [m, n], None, list(BLOCK)), bo, m, n)
    dev.synchronize()
    got = bo.to_numpy(np.float32).reshape(m, n)
    return compare(f"native {m}x{n} (lrrt buffers)", torch.from_numpy(got), torch.from_numpy(a + b))


def jit_kernel():
    """The fixture's source (make_tma_fixture.KERNEL) as a Triton JIT function."""
    spec = importlib.util.spec_from_file_location("make_tma_fixture", REPO / "tests" / "triton" / "make_tma_fixture.py")
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    d = tempfile.mkdtemp(prefix="tma_kernels_")
    src = Path(d) / "tma_kernels.py"
    src.write_text(fixture.KERNEL)
    spec = importlib.util.spec_from_file_location("tma_kernels", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.tma_add_kernel


def case_capture(dev, m, n, pitch):
    from triton.tools.tensor_descriptor import TensorDescriptor
    kern = jit_kernel()
    a, b, out = inputs(m, n, pitch)
    da = TensorDescriptor(a, list(a.shape), list(a.stride()), list(BLOCK))
    db = TensorDescriptor(b, list(b.shape), list(b.stride()), list(BLOCK))
    kern[grid(m, n)](da, db, out, m, n, BLOCK_M=BLOCK[0], BLOCK_N=BLOCK[1])  # compiled before the capture
    torch.cuda.synchronize()
    ok, line = compare(f"triton's own launch {m}x{n}", out, a + b)
    if not ok:
        return False, "capture: " + line
    out.fill_(float("nan"))
    torch.cuda.synchronize()
    with lrrt.triton.capture(dev) as g:
        kern[grid(m, n)](da, db, out, m, n, BLOCK_M=BLOCK[0], BLOCK_N=BLOCK[1])
    torch.cuda.synchronize()
    ex = g.instantiate()
    out.fill_(float("nan"))
    torch.cuda.synchronize()
    ex.launch()
    dev.synchronize()
    return compare(f"capture {m}x{n} (b pitch {pitch}; {len(g.launches)} launch(es) recorded, replayed)", out, a + b)


def main():
    dev = lrrt.Device.select("cuda")
    print(f"device: {dev}; torch {torch.__version__}")
    results = []

    def run(name, fn, *args):
        try:
            results.append(fn(*args))
        except Exception as e:  # reported, the other cases still run
            results.append((False, f"{name}: raised {type(e).__name__}: {e}\n" + traceback.format_exc()))
        print(results[-1][1], flush=True)

    try:
        k = lrrt.triton.load(dev, ENTRY)
    except Exception as e:
        print(f"load {ENTRY}: raised {type(e).__name__}: {e}")
        return 1
    sizes = [(100, 200, 200)] + [(int(rng.integers(1, 300)), 4 * int(rng.integers(1, 120)), 0) for _ in range(3)]
    for i, (m, n, pitch) in enumerate(sizes):
        pitch = pitch or n + 4 * int(rng.integers(0, 6))  # 16-byte row strides, as TMA needs
        run("entry", case_entry, dev, k, m, n, pitch, "nan" if i % 2 else "zero")
    run("native", case_native, dev, k, int(rng.integers(1, 300)), 4 * int(rng.integers(1, 120)))
    run("capture", case_capture, dev, 100, 200, 204)
    failed = sum(not ok for ok, _ in results)
    print(f"{len(results) - failed} of {len(results)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
