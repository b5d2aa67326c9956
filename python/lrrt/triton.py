"""Triton kernels through lrrt (docs/triton.md): a cache entry (folder or
<name>.json) or a compiled kernel object (what `kernel[grid](...)` and
`triton.compile` return), launched like Triton's launcher, `k[grid](*args)`,
eagerly or recorded into an lrrt graph. lrrt appends the hidden scratch
pointers; the signature comes from liblrrt (lr_triton_describe)."""
import collections.abc
import json
import math
import re
import struct
from pathlib import Path

from . import Graph, Module, address_of, launch_config, READ, WRITE, READ_WRITE
from ._args import TRITON_CODES, TRITON_TYPES, U32_MAX, bf16_bits, check_pointee, check_scalar, dim3, parse_type, unordered_dims, whole
from ._lib import ArgumentError, ArgumentRangeError, Error, lib, text_call
from ._launcher import bound_launcher
from . import _tensordesc
from ._tensordesc import TensorDescriptor  # noqa: F401 (lrrt.triton.TensorDescriptor)

MAX_METADATA_DEPTH = 256


def _deepest(value, limit):
    """The nesting depth of a metadata value, counted without recursion and
    at most limit + 1 (a hostile value is never walked further)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list, tuple)):
            deepest = max(deepest, depth)
            if depth > limit:
                return deepest
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _check_depth(md, where):
    for key, v in md.items():
        if _deepest(v, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH:
            raise Error(7, "lrrt.triton.describe", f"{where}: metadata field {str(key)[:64]!r} is nested more than "
                        f"{MAX_METADATA_DEPTH} levels deep (a {type(v).__name__})")


def _check_file_depth(path):
    """Refuses a metadata file nested past MAX_METADATA_DEPTH before any
    parser sees it (a bracket count outside strings, no recursion)."""
    files = [path] if path.is_file() else sorted(path.glob("*.json")) if path.is_dir() else []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # lr_triton_describe names it
        depth = 0
        for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
            c = m.group()
            if c in "[{":
                depth += 1
                if depth > MAX_METADATA_DEPTH:
                    raise Error(7, "lrrt.triton.describe", f"{f}: the metadata is nested more than "
                                f"{MAX_METADATA_DEPTH} levels deep")
            elif c in "]}":
                depth -= 1


def describe(entry):
    """The entry's description (lr_triton_describe) from a path, or from a
    compiled kernel object's metadata and IR."""
    if isinstance(entry, (str, Path)):
        if "\0" in str(entry):  # C would read the path only up to it: another file
            raise ValueError(f"lrrt.triton.describe: the entry's path {str(entry)!r} holds a NUL character")
        _check_file_depth(Path(entry))
        return json.loads(text_call(lib.lr_triton_describe, "lr_triton_describe", str(entry).encode()))
    if not hasattr(entry, "metadata") or not hasattr(entry, "asm"):
        raise TypeError(f"lrrt.triton.describe: give an entry's path or a compiled kernel, not {type(entry).__name__}")
    md = entry.metadata
    if hasattr(md, "_asdict"):
        md = md._asdict()
    elif isinstance(md, collections.abc.Mapping):
        md = dict(md)
    else:
        raise TypeError(f"lrrt.triton.describe: the compiled kernel's metadata is a {type(md).__name__}, not a mapping "
                        f"or a named tuple")
    _check_depth(md, "the compiled kernel's metadata")
    if "target" in md and not isinstance(md["target"], dict):
        t = md["target"]
        missing = [f for f in ("backend", "arch", "warp_size") if not hasattr(t, f)]
        if missing:
            raise TypeError(f"lrrt.triton.describe: the compiled kernel's metadata field \"target\" is a "
                            f"{type(t).__name__} without {', '.join(missing)} (a dict or Triton's GPUTarget)")
        md["target"] = {"backend": t.backend, "arch": t.arch, "warp_size": t.warp_size}
    asm = entry.asm
    if not isinstance(asm, collections.abc.Mapping):
        raise TypeError(f"lrrt.triton.describe: the compiled kernel's asm is a {type(asm).__name__}, not a mapping")
    ir = asm.get("ttir") or asm.get("source")
    if not isinstance(ir, str):
        raise TypeError(f"lrrt.triton.describe: the compiled kernel's asm has no Triton IR (\"ttir\" or \"source\" "
                        f"text): {'nothing' if ir is None else 'a ' + type(ir).__name__}")
    return json.loads(text_call(lib.lr_triton_describe_texts, "lr_triton_describe_texts",
                                json.dumps(md, default=str).encode(), ir.encode()))


def _checked_pointer(p):
    """The checked path's converter of a pointer parameter: its address, after
    the element type (a float64 tensor for *fp32 is refused) and no numpy
    array (host memory no guard covers: a GPU cannot use it, and on the host
    backend a kernel running past its end would write over Python's heap)."""
    declared = parse_type(p["type"])[1:]
    where = f"parameter {p['name']} (*{p['type']})"

    def convert(a):
        if type(a).__name__ == "ndarray" or hasattr(a, "__array_interface__"):
            raise ArgumentError(1, where, f"a {type(a).__name__} is host memory lrrt does not guard; pass an lrrt "
                                f"buffer (dev.buffer_from(array)) or a device tensor")
        check_pointee(a, declared, where)
        return address_of(a)
    return convert


def _checked_scalar(p, bf16):
    where = f"parameter {p['name']} ({p['type']})"

    def convert(a):
        check_scalar(a, p["type"], where)
        return bf16_bits(a) if bf16 else a
    return convert


class TritonKernel:
    def __init__(self, device, entry):
        self.device = device
        self.desc = describe(entry)
        self.params = self.desc["params"]
        if any("tensordesc" in p for p in self.params):
            err = _tensordesc.unsupported(device, self.params, self.desc["name"])
            if err is not None:
                raise err
        if isinstance(entry, (str, Path)):
            image = Path(self.desc["binary"]).read_bytes()
        else:
            kind = "cubin" if self.desc["backend"] == "cuda" else "hsaco"
            image = entry.asm.get(kind)
            if not isinstance(image, (bytes, bytearray, memoryview)):
                raise TypeError(f"lrrt.triton.load: the compiled kernel {self.desc['name']}'s asm has no \"{kind}\" "
                                f"bytes (its {self.desc['backend']} code object): "
                                f"{'nothing' if image is None else 'a ' + type(image).__name__}")
        self.module = Module(device, image)
        self.kernel = self.module.kernel(self.desc["name"])
        self._scratch = {}
        self._build_packer()

    @property
    def signature(self):
        return self.desc["signature"]

    def _build_packer(self):
        """One struct.Struct for the whole argument block (natural alignment,
        the hidden scratch pointers last) and a checking converter per
        argument (the checked path). Bound launchers (_launcher.py) pack with
        the same Struct and convert only arguments of kinds not yet checked."""
        # The parameters the caller passes: a descriptor's shape and stride
        # parts are lrrt's to pass, from the descriptor (as Triton's launcher).
        self.user_params = [p for p in self.params if "part_of" not in p]
        self.has_descriptors = any("tensordesc" in p or "part_of" in p for p in self.params)
        fmt, offset, convert = ["<"], 0, []
        self._offsets = []  # each user parameter's offset in the argument bytes (the C launcher's layout)

        def field(code):
            nonlocal offset
            size = struct.calcsize("<" + code)
            pad = -offset % size
            if pad:
                fmt.append(f"{pad}x")
            fmt.append(code)
            offset += pad + size
            return offset - size

        for p in self.user_params:
            if "tensordesc" in p:
                self._offsets.append(None)  # expanded per launch: no C launcher for such a kernel
                convert.append(self._descriptor_converter(p))
            elif p["pointer"]:
                self._offsets.append(field("Q"))
                convert.append(_checked_pointer(p))
            else:
                t = TRITON_TYPES.get(p["type"])
                if t is None:
                    raise Error(4, "lrrt.triton", f"parameter {p['name']}: lrrt cannot pass a {p['type']} scalar")
                self._offsets.append(field(TRITON_CODES[t]))
                convert.append(_checked_scalar(p, t == "bf16"))
        for _ in self.desc["hidden"]:
            field("Q")
        self._struct = struct.Struct("".join(fmt))
        if self.has_descriptors:
            # At the code object's offsets (a CUtensorMap's 64-byte alignment
            # is of the constant bank's address, which only they account for).
            self._struct = _tensordesc.declared_struct(self.params, len(self.desc["hidden"]), self.kernel.args,
                                                       self.desc["name"])
        self._convert = tuple(convert)
        self._configs = {}  # grid -> (LaunchConfig, hidden pointers, scratch buffers)
        self._bound = {}  # (grid, queue) -> BoundLauncher
        self._bound_default = {}  # grid -> BoundLauncher on the default queue (one lookup, no key tuple)

    def _descriptor_converter(self, p):
        where = f"{self.desc['name']}: parameter {p['name']} ({p['aot']})"

        def convert(d):
            return _tensordesc.encode(self.device, p, d, where)
        convert.expands = True  # one argument, 1 + 2 x rank values
        return convert

    def _hidden(self, programs):
        """The hidden scratch pointers for a grid of programs, and the
        buffers behind them (a bound launcher keeps them alive)."""
        out, keep = [], []
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
            keep.append(buf)
        return tuple(out), tuple(keep)

    def _config_for(self, grid):
        """(LaunchConfig, hidden pointers, scratch buffers) of a grid: 1 to 3
        dimensions, each 0 to 2^32-1 (a 4-D grid or 2^32 is refused, never
        cut or wrapped); 0 programs launch nothing, as with Triton."""
        key = grid
        try:
            if unordered_dims(grid):
                raise TypeError
            raw = (grid,) if isinstance(grid, int) else tuple(grid)
        except TypeError:
            raise TypeError(f"lrrt.triton: give the grid as an int or a tuple, not {type(grid).__name__}") from None
        raw = tuple(whole(d, f"grid[{i}]", 0, U32_MAX) for i, d in enumerate(raw))
        dims = dim3(tuple(max(d, 1) for d in raw), "grid")  # 1 to 3 dimensions
        programs = math.prod(raw)
        hidden, keep = self._hidden(programs)
        entry = (launch_config(dims, self.desc["block"], self.desc["shared"]) if programs else None, hidden, keep)
        try:
            self._configs[key] = entry
        except TypeError:  # an unhashable grid (a list): not cached
            pass
        return entry

    def _values(self, args):
        if len(args) != len(self._convert):
            names = ", ".join(p["name"] for p in self.user_params)
            raise TypeError(f"{self.desc['name']} takes {len(self.user_params)} argument(s) ({names}), got {len(args)}")
        if not self.has_descriptors:
            return [c(a) for c, a in zip(self._convert, args)]
        values = []
        for c, a in zip(self._convert, args):
            if getattr(c, "expands", False):
                values.extend(c(a))
            else:
                values.append(c(a))
        return values

    def _pack(self, values, hidden, args):
        try:
            return self._struct.pack(*values, *hidden)
        except struct.error:
            # Name the argument: pack each alone (a descriptor's values are checked when encoded).
            if self.has_descriptors:
                raise
            for p, v, a in zip(self.params, values, args):
                try:
                    struct.pack("<" + ("Q" if p["pointer"] else TRITON_CODES[TRITON_TYPES[p["type"]]]), v)
                except struct.error as e:
                    what = f"{self.desc['name']}: parameter {p['name']} ({p['type']})"
                    if isinstance(a, int) or hasattr(a, "__index__"):
                        raise ArgumentRangeError(1, what, f"{a!r} does not fit: {e}") from None
                    raise ArgumentError(1, what, f"cannot take {type(a).__name__}: {e}") from None
            raise

    def pack(self, grid, args):
        """The argument bytes of a launch over grid (hidden scratch included)."""
        try:
            hidden = self._configs[grid][1]
        except (KeyError, TypeError):
            hidden = self._config_for(grid)[1]
        return self._pack(self._values(args), hidden, args)

    def config(self, grid):
        grid = tuple(grid) if not isinstance(grid, int) else (grid,)
        dim3(grid, "grid")
        return grid, self.desc["block"], self.desc["shared"]

    def bind(self, grid, queue=None):
        """A launcher for this kernel over grid (on queue, else the default
        queue): `run = k.bind(grid); run(*args)`. The grid, scratch and launch
        configuration are checked and prepared once; each call packs only the
        arguments into a reused block and makes one prepared ctypes call.
        Arguments of the kinds an earlier call checked (the same class, the
        same tensor dtype) skip the type checks; any other goes through
        them first (docs/python.md)."""
        return bound_launcher(self, grid, queue)

    def launch(self, grid, *args, queue=None):
        try:
            run = self._bound_default[grid] if queue is None else self._bound[(grid, queue)]
        except (KeyError, TypeError):
            run = self._bound_for(grid, queue)
        run(*args)

    def _bound_for(self, grid, queue):
        if isinstance(grid, list):  # a list grid: cached under its tuple
            grid = tuple(grid)
            run = self._bound.get((grid, queue))
            if run is not None:
                return run
        run = bound_launcher(self, grid, queue)
        try:
            if len(self._bound) > 256:
                self._bound.clear()
                self._bound_default.clear()
            self._bound[(grid, queue)] = run
            if queue is None:
                self._bound_default[grid] = run
        except TypeError:  # an unhashable grid of another kind: not cached
            pass
        return run

    def record(self, graph, grid, *args, accesses=None):
        """Adds the launch to an lrrt Graph. accesses: (arg, mode) pairs;
        default: each pointer argument's access as the entry's IR proves it
        (lrrt's Triton IR analysis, docs/access.md: read, write, else
        read-write), over its whole allocation."""
        grid, block, shared = self.config(grid)
        # A descriptor's access is over its base tensor.
        objs = [getattr(a, "base", a) if "tensordesc" in p else a for p, a in zip(self.user_params, args)]
        if accesses is None:
            accesses = [(address_of(o), derived_mode(p), 0, 0, o) for p, o in zip(self.user_params, objs)
                        if p["pointer"] or "tensordesc" in p]
        else:
            accesses = [(address_of(getattr(a, "base", a) if hasattr(a, "block_shape") else a), m, 0, 0, a)
                        for a, m in accesses]
        for o in objs:
            graph.use(o)
        return graph.add_kernel(self.kernel, grid, block, self.pack(grid, args), accesses=accesses, shared=shared)

    def __getitem__(self, grid):
        if callable(grid):
            raise TypeError("lrrt.triton: give the grid as a tuple, not a function")
        try:
            return self._bound_default[grid]
        except (KeyError, TypeError):
            return self._bound_for(grid, None)


_DERIVED_MODES = {"read": READ, "write": WRITE}


def derived_mode(param):
    """The access mode lrrt proved for a pointer parameter (its description's
    "access", from the Triton IR analysis); read-write when unproven."""
    return _DERIVED_MODES.get(param.get("access"), READ_WRITE)


def load(device, entry):
    return TritonKernel(device, entry)


# Capture of Triton programs: python/lrrt/capture.py.
from .capture import Capture, CaptureError, capture  # noqa: E402,F401
