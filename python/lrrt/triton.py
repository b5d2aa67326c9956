"""Triton kernels through lrrt (docs/triton.md): a cache entry (folder or
<name>.json) or a compiled kernel object (what `kernel[grid](...)` and
`triton.compile` return), launched like Triton's launcher, `k[grid](*args)`,
eagerly or recorded into an lrrt graph. lrrt appends the hidden scratch
pointers; the signature comes from liblrrt (lr_triton_describe)."""
import ctypes
import json
import struct
from pathlib import Path

import numpy as np

from . import Graph, Module, address_of, launch_config, pack_scalar, READ_WRITE
from ._lib import check, lib, text_call


def describe(entry):
    """The entry's description (lr_triton_describe) from a path, or from a
    compiled kernel object's metadata and IR."""
    if isinstance(entry, (str, Path)):
        return json.loads(text_call(lib.lr_triton_describe, "lr_triton_describe", str(entry).encode()))
    md = entry.metadata
    md = md._asdict() if hasattr(md, "_asdict") else dict(md)
    if "target" in md and not isinstance(md["target"], dict):
        t = md["target"]
        md["target"] = {"backend": t.backend, "arch": t.arch, "warp_size": t.warp_size}
    ir = entry.asm.get("ttir") or entry.asm.get("source")
    return json.loads(text_call(lib.lr_triton_describe_texts, "lr_triton_describe_texts",
                                json.dumps(md, default=str).encode(), ir.encode()))


_TYPES = {"i1": "u8", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "f16": "f16", "bf16": "bf16", "f32": "f32",
          "f64": "f64"}


class TritonKernel:
    def __init__(self, device, entry):
        self.device = device
        self.desc = describe(entry)
        if isinstance(entry, (str, Path)):
            image = Path(self.desc["binary"]).read_bytes()
        else:
            image = entry.asm["cubin" if self.desc["backend"] == "cuda" else "hsaco"]
        self.module = Module(device, image)
        self.kernel = self.module.kernel(self.desc["name"])
        self.params = self.desc["params"]
        self._scratch = {}

    @property
    def signature(self):
        return self.desc["signature"]

    def _hidden(self, programs):
        out = []
        for h in self.desc["hidden"]:
            if h["size"] == 0:
                out.append(0)
                continue
            nbytes = programs * h["per_program_factor"] * h["size"]
            buf = self._scratch.get(h["name"])
            if buf is None or buf.nbytes < nbytes:
                buf = self.device.buffer(nbytes)
                self._scratch[h["name"]] = buf
            out.append(buf.ptr)
        return out

    def pack(self, grid, args):
        if len(args) != len(self.params):
            names = ", ".join(p["name"] for p in self.params)
            raise TypeError(f"{self.desc['name']} takes {len(self.params)} argument(s) ({names}), got {len(args)}")
        programs = int(np.prod(grid))
        out = bytearray()

        def put(data):
            off = (len(out) + len(data) - 1) // len(data) * len(data)
            out.extend(b"\0" * (off - len(out)))
            out.extend(data)

        for p, a in zip(self.params, args):
            if p["pointer"]:
                put(struct.pack("<Q", address_of(a)))
            else:
                put(pack_scalar(a, _TYPES[p["type"]]))
        for ptr in self._hidden(programs):
            put(struct.pack("<Q", ptr))
        return bytes(out)

    def config(self, grid):
        grid = tuple(grid) if not isinstance(grid, int) else (grid,)
        return grid, self.desc["block"], self.desc["shared"]

    def launch(self, grid, *args, queue=None):
        grid, block, shared = self.config(grid)
        self.kernel.launch(grid, block, self.pack(grid, args), shared=shared, queue=queue)

    def record(self, graph, grid, *args, accesses=None):
        """Adds the launch to an lrrt Graph. accesses: (arg, mode) pairs;
        default: every pointer argument read-write."""
        grid, block, shared = self.config(grid)
        if accesses is None:
            accesses = [(address_of(a), READ_WRITE, 0, 0, a) for p, a in zip(self.params, args) if p["pointer"]]
        else:
            accesses = [(address_of(a), m, 0, 0, a) for a, m in accesses]
        for a in args:
            graph.use(a)
        return graph.add_kernel(self.kernel, grid, block, self.pack(grid, args), accesses=accesses, shared=shared)

    def __getitem__(self, grid):
        if callable(grid):
            raise TypeError("lrrt.triton: give the grid as a tuple, not a function")
        return lambda *args, queue=None: self.launch(grid, *args, queue=queue)


def load(device, entry):
    return TritonKernel(device, entry)
