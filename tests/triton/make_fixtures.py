#!/usr/bin/env python3
"""Compiles the Triton test kernels into Triton cache entries: the fixtures of
lrrt's Triton reader (tests/triton/entries/, docs/triton.md).

Run on a machine with Triton (the NVIDIA machine: /opt/torch/.venv), from a
folder whose path says nothing of the machine: every entry records the path
of this file (IR locations, line info) and of the cache (__grp__ files), so
scripts copy it to /triton-fixtures/kernels.py and set the cache to
/triton-fixtures/cache first (see --help).

Each kernel is compiled for NVIDIA sm_90 by launching it through Triton's own
JIT with torch tensors (scalar_types_kernel through triton.compile with an
explicit signature, for fp16 and fp64 scalars, then launched and checked) (the specialisation a user gets: unit strides and
integers equal to 1 become constexprs), and for AMD gfx942 (wave64) and
gfx1100 (wave32) through triton.compile with the same specialisation spelt
out, since no AMD GPU is there. The outputs of the NVIDIA launches are
checked against torch, so the fixtures are known-good kernels.

usage: make_fixtures.py OUT_DIR     (writes OUT_DIR/<target>/<kernel>/..., OUT_DIR/versions.json)
"""
import json
import os
import shutil
import sys

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def mixed_kernel(x_ptr, out_ptr, scale, bias, n, stride, one, BLOCK: tl.constexpr):
    # scale: fp16 scalar, bias: fp64 scalar; stride and one are 1 at the call
    # and are specialised away.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask).to(tl.float32)
    y = x * scale.to(tl.float32) * one + bias.to(tl.float32)
    tl.store(out_ptr + offs * stride, y.to(tl.float16), mask=mask)


@triton.jit
def scalar_types_kernel(x_ptr, out_ptr, scale, bias, n, BLOCK: tl.constexpr):
    # mixed_kernel's scalars without the specialised ones, compiled with an
    # explicit signature so that scale is fp16 and bias fp64 on sm_90 too (the
    # JIT types Python floats fp32).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * scale.to(tl.float32) + bias.to(tl.float32)).to(tl.float16), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def cuda_entries(cache):
    """Launch each kernel through Triton's JIT; check the results."""
    dev = "cuda"
    torch.manual_seed(1)
    n = 1000
    x, y = torch.rand(n, device=dev), torch.rand(n, device=dev)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256, num_warps=4)
    assert torch.equal(out, x + y)

    xh = torch.rand(n, device=dev, dtype=torch.float16)
    outh = torch.empty_like(xh)
    mixed_kernel[(triton.cdiv(n, 128),)](xh, outh, 1.5, 0.25, n, 1, 1, BLOCK=128, num_warps=2)
    ref = (xh.float() * 1.5 + 0.25).half()
    assert torch.allclose(outh.float(), ref.float(), atol=1e-2), "mixed_kernel"

    from triton.compiler import ASTSource
    src = ASTSource(fn=scalar_types_kernel,
                    signature={"x_ptr": "*fp16", "out_ptr": "*fp16", "scale": "fp16", "bias": "fp64", "n": "i32",
                               "BLOCK": "constexpr"},
                    constexprs={"BLOCK": 128}, attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]})
    ck = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    outh.fill_(float("nan"))
    ck[(triton.cdiv(n, 128), 1, 1)](xh, outh, 1.5, 0.25, n)
    torch.cuda.synchronize()
    assert torch.allclose(outh.float(), ref.float(), atol=1e-2), "scalar_types_kernel"

    M, N, K = 64, 64, 64
    a = torch.rand(M, K, device=dev, dtype=torch.float16)
    b = torch.rand(K, N, device=dev, dtype=torch.float16)
    c = torch.empty(M, N, device=dev, dtype=torch.float16)
    matmul_kernel[(M // 32, N // 32)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                     c.stride(0), c.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_warps=8)
    torch.cuda.synchronize()
    assert torch.allclose(c.float(), (a.float() @ b.float()), atol=5e-2, rtol=1e-2), "matmul_kernel"


def amd_entries(arch, warp_size):
    """triton.compile for an AMD target, with the JIT's specialisation spelt out."""
    from triton.compiler import ASTSource
    d16 = [["tt.divisibility", 16]]
    specs = [
        (add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
         {"BLOCK": 256}, {(0,): d16, (1,): d16, (2,): d16}, 4),
        (mixed_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp16", "scale": "fp16", "bias": "fp64", "n": "i32",
                        "stride": "constexpr", "one": "constexpr", "BLOCK": "constexpr"},
         {"stride": 1, "one": 1, "BLOCK": 128}, {(0,): d16, (1,): d16}, 2),
        (matmul_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                         "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
                         "stride_cm": "i32", "stride_cn": "constexpr",
                         "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"},
         {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32},
         {(0,): d16, (1,): d16, (2,): d16, (3,): d16, (4,): d16, (5,): d16, (6,): d16, (8,): d16, (10,): d16}, 8),
    ]
    for fn, sig, consts, attrs, warps in specs:
        src = ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs)
        triton.compile(src, target=GPUTarget("hip", arch, warp_size), options={"num_warps": warps})


def collect(cache, out):
    """Copies every entry of the cache into out/<kernel>/, keeping the files."""
    os.makedirs(out, exist_ok=True)
    for key in sorted(os.listdir(cache)):
        folder = os.path.join(cache, key)
        names = [f for f in os.listdir(folder) if f.endswith(".json") and not f.startswith("__grp__")]
        for meta in names:
            name = meta[:-5]
            dest = os.path.join(out, name)
            shutil.copytree(folder, dest, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__triton_launcher*", "*.so"))
    # Triton's own install path (libdevice, standard.py locations) is a path
    # of that machine: the text files name it as <site-packages>.
    site = os.path.dirname(os.path.dirname(os.path.abspath(triton.__file__))) + "/"
    for folder, _, files in os.walk(out):
        for f in files:
            if f.endswith((".json", ".source", ".ttir", ".ttgir", ".llir", ".ptx", ".amdgcn")):
                path = os.path.join(folder, f)
                with open(path) as fh:
                    text = fh.read()
                if site in text:
                    with open(path, "w") as fh:
                        fh.write(text.replace(site, "<site-packages>/"))


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    out = os.path.abspath(sys.argv[1])
    base = os.environ.get("TRITON_CACHE_DIR", "/triton-fixtures/cache")
    versions = {"triton": triton.__version__, "torch": torch.__version__,
                "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    failures = []
    for target, fn in (("sm_90", lambda: cuda_entries(base)),
                       ("gfx942", lambda: amd_entries("gfx942", 64)),
                       ("gfx1100", lambda: amd_entries("gfx1100", 32))):
        cache = os.path.join(base, target)
        os.environ["TRITON_CACHE_DIR"] = cache
        try:
            triton.knobs.cache.dir = cache
        except AttributeError:  # before 3.4: the variable alone
            pass
        try:
            fn()
            collect(cache, os.path.join(out, target))
            print(f"{target}: ok")
        except Exception as e:  # report and go on: one target failing must not hide the others
            import traceback
            traceback.print_exc()
            failures.append(f"{target}: {e!r}")
    versions["failures"] = failures
    with open(os.path.join(out, "versions.json"), "w") as f:
        json.dump(versions, f, indent=2)
    print(json.dumps(versions, indent=2))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
