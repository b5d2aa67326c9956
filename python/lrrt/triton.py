"""Triton kernels through lrrt (docs/triton.md): a cache entry (folder or
<name>.json) or a compiled kernel object (what `kernel[grid](...)` and
`triton.compile` return), launched like Triton's launcher, `k[grid](*args)`,
eagerly or recorded into an lrrt graph. lrrt appends the hidden scratch
pointers; the signature comes from liblrrt (lr_triton_describe)."""
import functools
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
# struct codes of the argument block, by Triton type ("H": bf16 as its bits)
_CODES = {"u8": "B", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "f16": "e", "bf16": "H", "f32": "f", "f64": "d"}

_launch = lib.lr_launch
_launch_on_queue = lib.lr_launch_on_queue


def _pointer(a):
    try:
        return a.data_ptr()  # torch tensors: the common case, first
    except AttributeError:
        return address_of(a)


def _bf16_bits(v):
    return struct.unpack("<H", pack_scalar(v, "bf16"))[0]


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
        self._build_packer()

    @property
    def signature(self):
        return self.desc["signature"]

    def _build_packer(self):
        """One struct.Struct for the whole argument block (natural alignment,
        the hidden scratch pointers last) and a converter per argument: a
        launch is then one pack and one lr_launch, with no per-call layout
        work (the eager path's cost is mostly Python's)."""
        fmt, offset, convert = ["<"], 0, []

        def field(code):
            nonlocal offset
            size = struct.calcsize("<" + code)
            pad = -offset % size
            if pad:
                fmt.append(f"{pad}x")
            fmt.append(code)
            offset += pad + size

        for p in self.params:
            if p["pointer"]:
                field("Q")
                convert.append(_pointer)
            else:
                t = _TYPES[p["type"]]
                field(_CODES[t])
                convert.append(_bf16_bits if t == "bf16" else None)
        for _ in self.desc["hidden"]:
            field("Q")
        self._struct = struct.Struct("".join(fmt))
        self._convert = tuple(convert)
        self._configs = {}  # grid -> (LaunchConfig, hidden pointers)

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
                self._configs.clear()  # cached pointers may name the buffer just replaced
            out.append(buf.ptr)
        return tuple(out)

    def _config_for(self, grid):
        key = grid
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        hidden = self._hidden(int(np.prod(grid)))
        entry = (launch_config(grid, self.desc["block"], self.desc["shared"]), hidden)
        try:
            self._configs[key] = entry
        except TypeError:  # an unhashable grid (a list): not cached
            pass
        return entry

    def _values(self, args):
        if len(args) != len(self._convert):
            names = ", ".join(p["name"] for p in self.params)
            raise TypeError(f"{self.desc['name']} takes {len(self.params)} argument(s) ({names}), got {len(args)}")
        return [a if c is None else c(a) for c, a in zip(self._convert, args)]

    def _pack(self, values, hidden, args):
        try:
            return self._struct.pack(*values, *hidden)
        except struct.error:
            # Name the argument: pack each alone.
            for p, v, a in zip(self.params, values, args):
                try:
                    struct.pack("<" + ("Q" if p["pointer"] else _CODES[_TYPES[p["type"]]]), v)
                except struct.error as e:
                    raise TypeError(f"{self.desc['name']}: argument {p['name']} ({p['type']}) cannot take "
                                    f"{a!r}: {e}") from None
            raise

    def pack(self, grid, args):
        """The argument bytes of a launch over grid (hidden scratch included)."""
        try:
            _, hidden = self._configs[grid]
        except (KeyError, TypeError):
            _, hidden = self._config_for(grid)
        return self._pack(self._values(args), hidden, args)

    def config(self, grid):
        grid = tuple(grid) if not isinstance(grid, int) else (grid,)
        return grid, self.desc["block"], self.desc["shared"]

    def launch(self, grid, *args, queue=None):
        try:
            cfg, hidden = self._configs[grid]
        except (KeyError, TypeError):
            cfg, hidden = self._config_for(grid)
        data = self._pack(self._values(args), hidden, args)
        if queue is None:
            status = _launch(self.kernel._h, cfg, data, len(data))
        else:
            status = _launch_on_queue(queue._h, self.kernel._h, cfg, data, len(data))
        if status:
            check(status, "lr_launch" if queue is None else "lr_launch_on_queue")

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
        return functools.partial(self.launch, grid)


def load(device, entry):
    return TritonKernel(device, entry)


# Capture of Triton programs: python/lrrt/capture.py.
from .capture import Capture, CaptureError, capture  # noqa: E402,F401
