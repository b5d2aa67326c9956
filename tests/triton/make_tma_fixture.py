#!/usr/bin/env python3
"""Compiles the Triton tensor-descriptor (TMA) fixture: tma_add_kernel, which
takes two host-side TensorDescriptors (Triton 3.6: `tensordesc<fp32[32, 64]>`
parameters, tensordesc_meta in the metadata), for NVIDIA sm_90 through
triton.compile, without a GPU. Writes OUT_DIR/sm_90/tma_add_kernel/ (the cache
entry) and OUT_DIR/../tma_add/expected.npy (what the GPU check compares with).

Like make_fixtures.py, the kernel source and the cache live under
/triton-fixtures so that the entry's text names no machine.

usage: /usr/bin/python3 make_tma_fixture.py tests/triton/entries
"""
import os
import shutil
import sys

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def tma_add_kernel(a_desc, b_desc, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # out = a + b over an M x N f32 matrix; a and b are read through TMA
    # descriptors (out-of-bounds rows and columns read as zero), out is
    # written with a masked store.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a = a_desc.load([pid_m * BLOCK_M, pid_n * BLOCK_N])
    b = b_desc.load([pid_m * BLOCK_M, pid_n * BLOCK_N])
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], a + b, mask=mask)
'''

# The manifest's sizes (tests/triton/tma_add/manifest.json): not multiples of
# the block, so the edges go through TMA's out-of-bounds fill.
M, N = 100, 200


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = os.path.abspath(sys.argv[1])
    root = "/triton-fixtures"
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "tma_kernels.py"), "w") as f:
        f.write(KERNEL)
    cache = os.path.join(root, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["TRITON_CACHE_DIR"] = cache
    sys.path.insert(0, root)
    import numpy as np
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from tma_kernels import tma_add_kernel

    sig = {"a_desc": "tensordesc<fp32[32, 64]>", "b_desc": "tensordesc<fp32[32, 64]>", "out_ptr": "*fp32",
           "M": "i32", "N": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}
    src = ASTSource(fn=tma_add_kernel, signature=sig, constexprs={"BLOCK_M": 32, "BLOCK_N": 64})
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    assert kernel.metadata.tensordesc_meta, "no tensordesc_meta: the descriptors were not lowered to TMA"
    entry = os.path.dirname(os.path.join(cache, os.listdir(cache)[0], "x"))
    dest = os.path.join(out_dir, "sm_90", "tma_add_kernel")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(entry, dest)
    site = os.path.dirname(os.path.dirname(triton.__file__))
    for name in os.listdir(dest):
        path = os.path.join(dest, name)
        if name.endswith((".json", ".ttir", ".ttgir", ".llir", ".ptx", ".source")):
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write(text.replace(site, "<site-packages>"))
    # a = 0, 1, 2, ...; b = 0.5, 2.5, 4.5, ...: every sum exact in f32.
    i = np.arange(M * N, dtype=np.float64)
    expected = (i + (0.5 + 2 * i)).astype(np.float32).reshape(M, N)
    os.makedirs(os.path.join(out_dir, "..", "tma_add"), exist_ok=True)
    np.save(os.path.join(out_dir, "..", "tma_add", "expected.npy"), expected)
    print("wrote", dest)


if __name__ == "__main__":
    main()
