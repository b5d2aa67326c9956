"""Graphs from Python: steps recorded with access declarations (lrrt derives
the order), instantiated into a GraphExec, replayed and patched (lrrt.h's
graph section, docs/python.md)."""
import ctypes

from ._args import U32_MAX, launch_config, whole
from ._buffer import _Runtime
from ._foreign import Registration, _require_live, _stale, address_of, foreign_extent
from ._lib import GraphAccess, InstantiateOptions, check, lib

READ, WRITE, READ_WRITE = 1, 2, 3


def access(obj, mode, nbytes=0, offset=0):
    """An access declaration for a graph step: an lrrt buffer, a torch tensor,
    an array or a raw address; READ, WRITE or READ_WRITE; nbytes 0 = to the
    end of the allocation."""
    return (address_of(obj), _mode(mode), whole(nbytes, "lrrt.access: nbytes"), whole(offset, "lrrt.access: offset"),
            obj)


def _mode(mode):
    if mode not in (READ, WRITE, READ_WRITE) or isinstance(mode, bool):
        raise ValueError(f"access mode {mode!r}: give lrrt.READ, lrrt.WRITE or lrrt.READ_WRITE")
    return mode


class Graph:
    """Steps recorded with access declarations (lrrt derives the order),
    instantiated into a GraphExec, replayed and patched."""

    def __init__(self, device):
        self._h, self._generation, self._registered = None, _Runtime.generation, {}
        g = ctypes.c_void_p()
        check(lib.lr_graph_create(device._h, ctypes.byref(g)), "lr_graph_create")
        self._h, self.device = g, device
        self._registered = {}  # start -> Registration, for memory lrrt did not allocate

    def use(self, obj):
        """Registers the allocation behind a foreign object (torch tensor,
        array) once for this graph and keeps it alive with the graph and its
        execs. add_kernel calls it for every argument and access."""
        extent = foreign_extent(obj)
        if extent is None or extent[0] in self._registered:
            return
        self._registered[extent[0]] = Registration(self.device, extent[0], extent[1], obj)

    def add_kernel(self, kernel, grid, block, args, accesses=(), shared=0, types=None):
        _require_live(self, "lrrt.Graph.add_kernel")
        if not isinstance(args, (bytes, bytearray)):
            for a in args:
                self.use(a)
        data = kernel.pack(args, types) if not isinstance(args, (bytes, bytearray)) else bytes(args)
        cfg = launch_config(grid, block, shared)
        acc = (GraphAccess * max(1, len(accesses)))()
        for i, a in enumerate(accesses):
            ptr, mode, nbytes, offset = a[:4]
            if len(a) > 4:
                self.use(a[4])
            acc[i] = GraphAccess(ctypes.c_void_p(whole(ptr, "lrrt.Graph.add_kernel: access address")),
                                 whole(offset, "lrrt.Graph.add_kernel: access offset"),
                                 whole(nbytes, "lrrt.Graph.add_kernel: access bytes"), _mode(mode))
        node = ctypes.c_uint32()
        buf = ctypes.create_string_buffer(data, len(data)) if data else None
        check(lib.lr_graph_add_kernel(self._h, kernel._h, ctypes.byref(cfg), buf, len(data), acc, len(accesses),
                                      ctypes.byref(node)), "lr_graph_add_kernel")
        return node.value

    def add_dependency(self, before, after):
        before = whole(before, "lrrt.Graph.add_dependency: before", 0, U32_MAX)
        after = whole(after, "lrrt.Graph.add_dependency: after", 0, U32_MAX)
        check(lib.lr_graph_add_dependency(self._h, before, after), "lr_graph_add_dependency")

    def instantiate(self, max_lanes=0, patch_waits=False):
        max_lanes = whole(max_lanes, "lrrt.Graph.instantiate: max_lanes", 0, U32_MAX)
        opts = InstantiateOptions(max_lanes, 1 if patch_waits else 0)
        e = ctypes.c_void_p()
        check(lib.lr_graph_instantiate(self._h, ctypes.byref(opts), ctypes.byref(e)), "lr_graph_instantiate")
        return GraphExec(e, self)

    def __del__(self):
        try:
            if self._h and not _stale(self):
                lib.lr_graph_destroy(self._h)
                self._h = None
            for r in self._registered.values():
                r.close()
        except Exception:
            pass


class GraphExec:
    def __init__(self, handle, graph):
        self._h, self.graph, self._generation = handle, graph, graph._generation

    def launch(self, queue=None):
        _require_live(self, "lrrt.GraphExec.launch")
        check(lib.lr_graph_exec_launch(self._h, queue._h if queue else None), "lr_graph_exec_launch")

    def synchronize(self):
        _require_live(self, "lrrt.GraphExec.synchronize")
        check(lib.lr_graph_exec_synchronize(self._h), "lr_graph_exec_synchronize")

    def replay(self, queue=None):
        self.launch(queue)
        self.synchronize()

    def set_kernargs(self, node, offset, data):
        _require_live(self, "lrrt.GraphExec.set_kernargs")
        node = whole(node, "lrrt.GraphExec.set_kernargs: node", 0, U32_MAX)
        offset = whole(offset, "lrrt.GraphExec.set_kernargs: offset", 0, 2**63 - 1)
        if isinstance(data, (int, str)):
            raise TypeError(f"lrrt.GraphExec.set_kernargs: data is bytes, not {type(data).__name__}")
        data = bytes(data)
        check(lib.lr_graph_exec_set_kernargs(self._h, node, offset, ctypes.c_char_p(data), len(data)),
              "lr_graph_exec_set_kernargs")

    def __del__(self):
        try:
            if self._h and not _stale(self):
                lib.lr_graph_exec_destroy(self._h)
                self._h = None
        except Exception:
            pass
