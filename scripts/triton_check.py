#!/usr/bin/env python3
"""Compiles small Triton kernels on the NVIDIA machine, saves each cubin with
its metadata JSON, writes an lrrt manifest for it, runs `lrrt run` on it and
compares with a reference computed by torch (the manifest's expected .npy).

Used by scripts/triton-check; needs torch and triton (3.x) and a CUDA GPU.

Triton's launcher passes parameters beyond the kernel's own: recent versions
append a global-scratch pointer and a profile-scratch pointer. Which ones a
kernel takes is read from its PTX (.entry parameter list), not guessed from
the Triton version: parameters past the user's arguments become u64 scalars
(0, or the address of a scratch buffer when global_scratch_size > 0).
"""
import argparse
import json
import os
import re
import subprocess
import sys


def ptx_params(ptx, name):
    """[(type, size_bytes, is_pointer)] of .entry `name`."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", ptx, re.S)
    if not m:
        raise SystemExit(f"no .entry {name} in the PTX")
    params = []
    for decl in m.group(1).split(","):
        decl = decl.strip()
        if not decl:
            continue
        t = re.search(r"\.(u|s|b|f)(8|16|32|64)\b", decl)
        size = int(t.group(2)) // 8 if t else 8
        arr = re.search(r"\[(\d+)\]", decl)
        if arr:
            size *= int(arr.group(1))
        params.append((t.group(0) if t else "?", size, ".ptr" in decl))
    return params


def metadata_dict(kernel):
    md = kernel.metadata
    if hasattr(md, "_asdict"):
        md = md._asdict()
    elif not isinstance(md, dict):
        md = {k: getattr(md, k) for k in dir(md) if not k.startswith("_")}
    out = {}
    for k, v in md.items():
        try:
            json.dumps(v)
            out[k] = v
        except TypeError:
            out[k] = repr(v)
    return out


def run_case(args, tag, kernel, user_args, buffers, grid, expected_buffer, expected, rtol, atol):
    import numpy as np

    out_dir = args.out
    md = metadata_dict(kernel)
    name = md.get("name") or kernel.name
    num_warps = int(md.get("num_warps", 4))
    shared = int(md.get("shared", 0))
    cubin = kernel.asm["cubin"]
    ptx = kernel.asm["ptx"]
    with open(os.path.join(out_dir, f"{tag}.cubin"), "wb") as f:
        f.write(cubin)
    with open(os.path.join(out_dir, f"{tag}.ptx"), "w") as f:
        f.write(ptx)
    with open(os.path.join(out_dir, f"{tag}.metadata.json"), "w") as f:
        json.dump(md, f, indent=1, sort_keys=True)

    params = ptx_params(ptx, name)
    manifest_args = list(user_args)
    extra = params[len(user_args):]
    scratch_note = []
    gsz = int(md.get("global_scratch_size", 0) or 0)
    for i, (ptype, size, is_ptr) in enumerate(extra):
        if i == 0 and gsz > 0:
            programs = grid[0] * grid[1] * grid[2]
            buffers.append({"name": "global_scratch", "type": "u8", "count": gsz * programs,
                            "init": "zeros"})
            manifest_args.append({"buffer": "global_scratch"})
            scratch_note.append(f"param {len(user_args) + i}: global scratch buffer of {gsz * programs} bytes")
        else:
            manifest_args.append({"name": f"triton_extra_{i}", "type": "u64" if size == 8 else "u32", "value": 0})
            scratch_note.append(f"param {len(user_args) + i}: {ptype} passed as 0")

    for b in buffers:
        if isinstance(b.get("init"), dict) and "npy_array" in b["init"]:
            fn = f"{tag}.{b['name']}.npy"
            np.save(os.path.join(out_dir, fn), b["init"].pop("npy_array"))
            b["init"]["npy"] = fn
    np.save(os.path.join(out_dir, f"{tag}.expected.npy"), expected)

    manifest = {
        "lrrt_manifest": 1,
        "name": f"triton {tag} ({name})",
        "description": f"compiled by Triton {args.triton_version}; num_warps {num_warps}, shared {shared}",
        "code_object": {"cuda": f"{tag}.cubin"},
        "kernel": name,
        "buffers": buffers,
        "args": manifest_args,
        "launch": {"workgroup_size": [32 * num_warps], "workgroup_count": list(grid[:1]) if grid[1] == grid[2] == 1 else list(grid),
                   "dynamic_shared_bytes": shared},
        "warmup": 2,
        "iterations": 10,
        "verify": [{"buffer": expected_buffer, "expected": {"npy": f"{tag}.expected.npy"}, "rtol": rtol, "atol": atol}],
    }
    if len(manifest["launch"]["workgroup_count"]) != 1:
        manifest["launch"]["workgroup_size"] = [32 * num_warps, 1, 1]
    mpath = os.path.join(out_dir, f"{tag}.manifest.json")
    with open(mpath, "w") as f:
        json.dump(manifest, f, indent=1)

    report = [f"### {tag}: kernel `{name}`", "",
              f"- num_warps {num_warps}, shared {shared} bytes, grid {grid}, PTX params {len(params)} "
              f"(user {len(user_args)}, extra {len(extra)})"]
    report += [f"- {n}" for n in scratch_note]
    if args.lrrt and os.path.exists(args.lrrt):
        for cmd in ([args.lrrt, "inspect", os.path.join(out_dir, f"{tag}.cubin")],
                    [args.lrrt, "run", mpath, "--backend", "cuda"]):
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            log = os.path.join(out_dir, f"{tag}.{cmd[1]}.log")
            with open(log, "w") as f:
                f.write(p.stdout + p.stderr)
            report.append(f"- `lrrt {cmd[1]}` exit {p.returncode}")
            report.append("")
            report.append("```")
            report += (p.stdout + p.stderr).strip().splitlines()[-25:]
            report.append("```")
            if cmd[1] == "run":
                args.failures += p.returncode != 0
    else:
        report.append("- lrrt binary not found: not run")
        args.failures += 1
    return report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--lrrt", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    args.failures = 0

    import numpy as np
    import torch
    import triton
    import triton.language as tl

    args.triton_version = triton.__version__
    report = ["# Triton kernels through lrrt", "",
              f"- triton {triton.__version__}, torch {torch.__version__}, device {torch.cuda.get_device_name(0)}", ""]

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=mask)

    torch.manual_seed(0)
    # vector add
    n = 1_000_003
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    block = 1024
    grid = ((n + block - 1) // block, 1, 1)
    k = add_kernel[(grid[0],)](x, y, out, n, BLOCK=block)
    torch.cuda.synchronize()
    ref = (x + y).cpu().numpy()
    assert np.array_equal(out.cpu().numpy(), ref)
    report += run_case(args, "triton_add", k,
                       [{"buffer": "x"}, {"buffer": "y"}, {"buffer": "out"}, {"name": "n", "type": "i32", "value": n}],
                       [{"name": "x", "type": "f32", "count": n, "init": {"npy_array": x.cpu().numpy()}},
                        {"name": "y", "type": "f32", "count": n, "init": {"npy_array": y.cpu().numpy()}},
                        {"name": "out", "type": "f32", "count": n, "init": "poison"}],
                       grid, "out", ref, 0.0, 0.0)

    # softmax over rows (reductions through shared memory)
    rows, cols = 4096, 781
    inp = torch.randn(rows, cols, device="cuda")
    sm_out = torch.empty_like(inp)
    sblock = triton.next_power_of_2(cols)
    k = softmax_kernel[(rows,)](sm_out, inp, inp.stride(0), sm_out.stride(0), cols, BLOCK=sblock, num_warps=8)
    torch.cuda.synchronize()
    ref = torch.softmax(inp, dim=1).cpu().numpy()
    report += run_case(args, "triton_softmax", k,
                       [{"buffer": "out"}, {"buffer": "inp"},
                        {"name": "in_stride", "type": "i32", "value": cols},
                        {"name": "out_stride", "type": "i32", "value": cols},
                        {"name": "n_cols", "type": "i32", "value": cols}],
                       [{"name": "out", "type": "f32", "shape": [rows, cols], "init": "poison"},
                        {"name": "inp", "type": "f32", "shape": [rows, cols], "init": {"npy_array": inp.cpu().numpy()}}],
                       (rows, 1, 1), "out", ref, 1e-5, 1e-6)

    report += ["", f"failures: {args.failures}"]
    with open(os.path.join(args.out, "triton-check.md"), "w") as f:
        f.write("\n".join(report) + "\n")
    print("\n".join(report))
    return 1 if args.failures else 0


if __name__ == "__main__":
    sys.exit(main())
