#!/usr/bin/env python3
"""Compiles the kernels of lrrt's Triton access analysis tests into their
Triton IR (.ttir): tests/triton/access/<target>/<kernel>.ttir, plus
expected.json (what each pointer parameter must at least be: the analysis may
be wider, never narrower; docs/access.md).

Needs only PyPI's triton (no GPU, no torch): triton.compile for a GPUTarget
runs every stage on the CPU; only the .ttir is kept (the stages after it
need the target's assembler, which may be missing, and lrrt's analysis reads
the .ttir). Written like Triton's tutorials (fused softmax, layer norm
forward and backward, matmul with loop-carried pointers, flash attention
forward), not copied from them, plus the negative controls: kernels that
write through a pointer in each way the analysis must not miss.

usage: /tmp/venv/bin/python make_access_fixtures.py OUT_DIR   (OUT_DIR/<target>/<kernel>.ttir)
"""
import json
import os
import sys
import tempfile

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


# ---------------------------------------------------------------- tutorials

@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr):
    start = tl.program_id(0)
    for row in tl.range(start, n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def layer_norm_fwd(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n, other=0.).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n
    var_acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n, other=0.).to(tl.float32)
        d = tl.where(cols < n, x - mean, 0.)
        var_acc += d * d
    rstd = 1 / tl.sqrt(tl.sum(var_acc, axis=0) / n + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        m = cols < n
        x = tl.load(x_row + cols, mask=m, other=0.).to(tl.float32)
        y = (x - mean) * rstd * tl.load(w_ptr + cols, mask=m) + tl.load(b_ptr + cols, mask=m)
        tl.store(y_row + cols, y, mask=m)


@triton.jit
def layer_norm_bwd_dx(dx_ptr, dy_ptr, dw_ptr, db_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, lock_ptr, stride, n,
                      GROUP: tl.constexpr, BLOCK: tl.constexpr):
    # dx per row; partial dw/db summed per group under a spin lock (atomics).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=m, other=0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(m, (x - mean) * rstd, 0.)
    wdy = tl.where(m, w * dy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / n
    c2 = tl.sum(wdy, axis=0) / n
    tl.store(dx_ptr + row * stride + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=m)
    group = row % GROUP
    lock = lock_ptr + group
    count = lock_ptr + GROUP + group
    dw_row = dw_ptr + group * n + cols
    db_row = db_ptr + group * n + cols
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    first = tl.load(count)
    pdw = (dy * xhat).to(w.dtype)
    pdb = dy.to(w.dtype)
    if first == 0:
        tl.atomic_xchg(count, 1)
    else:
        pdw += tl.load(dw_row, mask=m)
        pdb += tl.load(db_row, mask=m)
    tl.store(dw_row, pdw, mask=m)
    tl.store(db_row, pdb, mask=m)
    tl.atomic_xchg(lock, 0)


@triton.jit
def layer_norm_bwd_dwdb(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, rows, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, rows, BLOCK_M):
        r = i + tl.arange(0, BLOCK_M)
        m = (r[:, None] < rows) & (cols[None, :] < n)
        offs = r[:, None] * n + cols[None, :]
        dw += tl.load(dw_part_ptr + offs, mask=m, other=0.)
        db += tl.load(db_part_ptr + offs, mask=m, other=0.)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < n)
    tl.store(db_ptr + cols, tl.sum(db, axis=0), mask=cols < n)


@triton.jit
def matmul_tutorial(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped ordering, pointers advanced in the loop (loop-carried).
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_n
    first_m = (pid // in_group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % size_m)
    pid_n = (pid % in_group) // size_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + stride_cm * cm[:, None] + stride_cn * cn[None, :], acc.to(tl.float16),
             mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, m_ptr, sm_scale, stride_h, stride_m, n_ctx,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD: tl.constexpr):
    # Flash attention forward with block pointers (make_block_ptr/advance,
    # loop-carried), online softmax, the row's logsumexp stored to m_ptr.
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    base = off_h * stride_h
    q_block = tl.make_block_ptr(q_ptr + base, (n_ctx, HEAD), (stride_m, 1), (start_m * BLOCK_M, 0), (BLOCK_M, HEAD), (1, 0))
    k_block = tl.make_block_ptr(k_ptr + base, (HEAD, n_ctx), (1, stride_m), (0, 0), (HEAD, BLOCK_N), (0, 1))
    v_block = tl.make_block_ptr(v_ptr + base, (n_ctx, HEAD), (stride_m, 1), (0, 0), (BLOCK_N, HEAD), (1, 0))
    o_block = tl.make_block_ptr(o_ptr + base, (n_ctx, HEAD), (stride_m, 1), (start_m * BLOCK_M, 0), (BLOCK_M, HEAD), (1, 0))
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD], dtype=tl.float32)
    q = tl.load(q_block)
    for start_n in range(0, n_ctx, BLOCK_N):
        k = tl.load(k_block)
        qk = tl.dot(q, k) * sm_scale
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_block)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
        k_block = tl.advance(k_block, (0, BLOCK_N))
        v_block = tl.advance(v_block, (BLOCK_N, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(m_ptr + off_h * n_ctx + offs_m, m_i + tl.math.log2(l_i))
    tl.store(o_block, (acc / l_i[:, None]).to(tl.float16))


# ---------------------------------------------------------- negative controls
# Each writes through a pointer in a way the analysis must not miss; the
# expected access of that parameter is at least "write".

@triton.jit
def neg_select(a_ptr, b_ptr, out_ptr, flag, n, BLOCK: tl.constexpr):
    # Stores through a pointer selected between a and b: both may be written.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    dst = tl.where(flag != 0, a_ptr, b_ptr)
    tl.store(dst + offs, tl.load(out_ptr + offs, mask=m) + 1.0, mask=m)


@triton.jit
def neg_if_merge(a_ptr, b_ptr, src_ptr, flag, n, BLOCK: tl.constexpr):
    # The same through scf.if results (block arguments merging two parameters).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if flag != 0:
        dst = a_ptr + offs
    else:
        dst = b_ptr + offs
    tl.store(dst, tl.load(src_ptr + offs, mask=m) * 2.0, mask=m)


@triton.jit
def neg_ptr_to_int(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # x's address becomes an integer and a pointer again, then is stored to.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    addr = x_ptr.to(tl.int64)
    p = addr.to(tl.pointer_type(tl.float32))
    tl.store(p + offs, tl.load(out_ptr + offs, mask=m) + 3.0, mask=m)


@triton.jit
def neg_loop_carried(x_ptr, src_ptr, n, steps, BLOCK: tl.constexpr):
    # Writes through a pointer carried around a loop (scf.for block argument).
    p = x_ptr
    q = src_ptr
    for i in range(0, steps):
        offs = i * BLOCK + tl.arange(0, BLOCK)
        tl.store(p + tl.arange(0, BLOCK), tl.load(q + tl.arange(0, BLOCK), mask=offs < n) + 1.0, mask=offs < n)
        p += BLOCK
        q += BLOCK


@triton.jit
def neg_store_pointer(x_ptr, table_ptr, n, BLOCK: tl.constexpr):
    # x's address is stored to memory (as an integer): another kernel may
    # write through it, so x escapes.
    tl.store(table_ptr + tl.program_id(0), x_ptr.to(tl.int64))


@triton.jit
def neg_inline_asm(x_ptr, src_ptr, n, BLOCK: tl.constexpr, ASM: tl.constexpr, CONSTRAINTS: tl.constexpr):
    # The store is in inline assembly: x is written, though no tt.store names it.
    # (The asm stores a constant: Triton broadcasts its operands together,
    # so a pointer operand and a float one cannot be mixed.)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.inline_asm_elementwise(ASM, CONSTRAINTS, [x_ptr + offs], dtype=tl.int32, is_pure=False, pack=1)


NV_ASM = ("st.global.b32 [$1], 1065353216; mov.b32 $0, 0;", "=r,l")
AMD_ASM = ("v_mov_b32 $0, 1.0\n global_store_dword $1, $0, off", "=&v,v")

d16 = [["tt.divisibility", 16]]


def specs(target):
    asm = NV_ASM if target.backend == "cuda" else AMD_ASM
    p32, p16 = "*fp32", "*fp16"
    return [
        # (kernel, signature, constexprs, attrs, num_warps, expected {param: at least})
        (softmax_kernel, {"out_ptr": p32, "in_ptr": p32, "in_stride": "i32", "out_stride": "i32", "n_rows": "i32",
                          "n_cols": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024}, {(0,): d16, (1,): d16}, 4,
         {"out_ptr": "write", "in_ptr": "read"}),
        (layer_norm_fwd, {"x_ptr": p16, "y_ptr": p16, "w_ptr": p16, "b_ptr": p16, "mean_ptr": p32, "rstd_ptr": p32,
                          "stride": "i32", "n": "i32", "eps": "fp32", "BLOCK": "constexpr"}, {"BLOCK": 512},
         {(i,): d16 for i in range(6)}, 4,
         {"x_ptr": "read", "y_ptr": "write", "w_ptr": "read", "b_ptr": "read", "mean_ptr": "write",
          "rstd_ptr": "write"}),
        (layer_norm_bwd_dx, {"dx_ptr": p16, "dy_ptr": p16, "dw_ptr": p16, "db_ptr": p16, "x_ptr": p16, "w_ptr": p16,
                             "mean_ptr": p32, "rstd_ptr": p32, "lock_ptr": "*i32", "stride": "i32", "n": "i32",
                             "GROUP": "constexpr", "BLOCK": "constexpr"}, {"GROUP": 32, "BLOCK": 512},
         {(i,): d16 for i in range(9)}, 4,
         {"dx_ptr": "write", "dy_ptr": "read", "dw_ptr": "read_write", "db_ptr": "read_write", "x_ptr": "read",
          "w_ptr": "read", "mean_ptr": "read", "rstd_ptr": "read", "lock_ptr": "read_write"}),
        (layer_norm_bwd_dwdb, {"dw_part_ptr": p32, "db_part_ptr": p32, "dw_ptr": p32, "db_ptr": p32, "rows": "i32",
                               "n": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"},
         {"BLOCK_M": 32, "BLOCK_N": 128}, {(i,): d16 for i in range(4)}, 4,
         {"dw_part_ptr": "read", "db_part_ptr": "read", "dw_ptr": "write", "db_ptr": "write"}),
        (matmul_tutorial, {"a_ptr": p16, "b_ptr": p16, "c_ptr": p16, "M": "i32", "N": "i32", "K": "i32",
                           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
                           "stride_cm": "i32", "stride_cn": "constexpr", "BLOCK_M": "constexpr",
                           "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr"},
         {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8},
         {(i,): d16 for i in (0, 1, 2, 3, 4, 5, 6, 8, 10)}, 4,
         {"a_ptr": "read", "b_ptr": "read", "c_ptr": "write"}),
        (attention_fwd, {"q_ptr": p16, "k_ptr": p16, "v_ptr": p16, "o_ptr": p16, "m_ptr": p32, "sm_scale": "fp32",
                         "stride_h": "i32", "stride_m": "i32", "n_ctx": "i32", "BLOCK_M": "constexpr",
                         "BLOCK_N": "constexpr", "HEAD": "constexpr"}, {"BLOCK_M": 64, "BLOCK_N": 64, "HEAD": 64},
         {(i,): d16 for i in range(9)}, 4,
         {"q_ptr": "read", "k_ptr": "read", "v_ptr": "read", "o_ptr": "write", "m_ptr": "write"}),
        (neg_select, {"a_ptr": p32, "b_ptr": p32, "out_ptr": p32, "flag": "i32", "n": "i32", "BLOCK": "constexpr"},
         {"BLOCK": 256}, {(0,): d16, (1,): d16, (2,): d16}, 4,
         {"a_ptr": "read_write", "b_ptr": "read_write", "out_ptr": "read"}),
        (neg_if_merge, {"a_ptr": p32, "b_ptr": p32, "src_ptr": p32, "flag": "i32", "n": "i32", "BLOCK": "constexpr"},
         {"BLOCK": 256}, {(0,): d16, (1,): d16, (2,): d16}, 4,
         {"a_ptr": "read_write", "b_ptr": "read_write", "src_ptr": "read"}),
        (neg_ptr_to_int, {"x_ptr": p32, "out_ptr": p32, "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 256},
         {(0,): d16, (1,): d16}, 4, {"x_ptr": "read_write", "out_ptr": "read_write"}),
        (neg_loop_carried, {"x_ptr": p32, "src_ptr": p32, "n": "i32", "steps": "i32", "BLOCK": "constexpr"},
         {"BLOCK": 256}, {(0,): d16, (1,): d16}, 4, {"x_ptr": "write", "src_ptr": "read"}),
        (neg_store_pointer, {"x_ptr": p32, "table_ptr": "*i64", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 256},
         {(0,): d16, (1,): d16}, 4, {"x_ptr": "read_write", "table_ptr": "write"}),
        (neg_inline_asm, {"x_ptr": p32, "src_ptr": p32, "n": "i32", "BLOCK": "constexpr", "ASM": "constexpr",
                          "CONSTRAINTS": "constexpr"}, {"BLOCK": 256, "ASM": asm[0], "CONSTRAINTS": asm[1]},
         {(0,): d16, (1,): d16}, 4, {"x_ptr": "read_write", "src_ptr": "read"}),  # src_ptr unused
    ]


def ttir_of(fn, sig, consts, attrs, warps, target):
    """The .ttir Triton writes for this specialisation (the later stages may fail without their tools)."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        src = ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs)
        try:
            triton.compile(src, target=target, options={"num_warps": warps})
        except Exception as e:  # a later stage (ptxas, lld) may be missing here
            print(f"  note: {fn.__name__} for {target.arch}: {type(e).__name__} after the IR stages", file=sys.stderr)
        for root, _, files in os.walk(cache):
            for f in files:
                if f == fn.__name__ + ".ttir":
                    return open(os.path.join(root, f)).read()
    raise RuntimeError(f"{fn.__name__}: no .ttir written")


def main():
    out = sys.argv[1]
    expected = {}
    for name, target in (("sm_90", GPUTarget("cuda", 90, 32)), ("gfx942", GPUTarget("hip", "gfx942", 64))):
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for fn, sig, consts, attrs, warps, want in specs(target):
            text = ttir_of(fn, sig, consts, attrs, warps, target)
            # Locations name this file's path: keep them machine-neutral.
            text = text.replace(os.path.abspath(__file__), "/triton-fixtures/access_kernels.py")
            with open(os.path.join(out, name, fn.__name__ + ".ttir"), "w") as f:
                f.write(text)
            expected[fn.__name__] = want
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"triton_version": triton.__version__, "kernels": expected}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
