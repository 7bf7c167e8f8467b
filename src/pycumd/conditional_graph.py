"""CUDA graphs with conditional nodes (IF and WHILE, CUDA 12.4+), assembled from captured pieces.

CuPy captures streams into graphs but has no API for conditional nodes, so this module adds them
through the CUDA driver API (``libcuda``, by ctypes): a graph is built as a chain of *child
graphs* (each a CuPy capture, cloned into the chain) and *conditional nodes* whose bodies are
chains of their own.  A kernel sets a condition with ``cudaGraphSetConditional(handle, value)``
(``step_control.cu``); the handle is an unsigned 64-bit kernel argument.

    builder = GraphChain.create()
    loop_handle = builder.handle(default=1)          # applied at every launch
    builder.child(head)                              # a cupy.cuda.graph.Graph
    body = builder.while_loop(loop_handle)           # a GraphChain of the loop's body graph
    rebuild_handle = body.handle(default=0)
    body.child(step_start)                           # sets rebuild_handle
    body.if_then(rebuild_handle).child(rebuild)
    body.child(step_end)                             # sets loop_handle
    executable = builder.instantiate()
    executable.launch(stream)

Conditional bodies may hold kernels, memsets, memcopies, child graphs and conditionals (not host
nodes or events); every kernel must belong to the current context.  Unsupported drivers raise
:class:`ConditionalGraphUnavailable` at :meth:`GraphChain.create`.
"""

from __future__ import annotations

import ctypes

_NODE_TYPE_CONDITIONAL = 13           # CU_GRAPH_NODE_TYPE_CONDITIONAL
_COND_IF, _COND_WHILE = 0, 1          # CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_WHILE
_ASSIGN_DEFAULT = 1                   # CU_GRAPH_COND_ASSIGN_DEFAULT


class ConditionalGraphUnavailable(RuntimeError):
    """The CUDA driver cannot build graphs with conditional nodes (before CUDA 12.4)."""


class _ConditionalParams(ctypes.Structure):
    """CUDA_CONDITIONAL_NODE_PARAMS."""
    _fields_ = [("handle", ctypes.c_uint64), ("type", ctypes.c_int), ("size", ctypes.c_uint),
                ("graphs_out", ctypes.POINTER(ctypes.c_void_p)), ("context", ctypes.c_void_p)]


class _NodeParams(ctypes.Structure):
    """CUgraphNodeParams (256 bytes: a type, reserved words, a 232-byte union, a reserved word)."""
    _fields_ = [("type", ctypes.c_int), ("reserved0", ctypes.c_int * 3),
                ("conditional", _ConditionalParams),
                ("padding", ctypes.c_byte * (232 - ctypes.sizeof(_ConditionalParams))),
                ("reserved2", ctypes.c_longlong)]


assert ctypes.sizeof(_NodeParams) == 256


class _Driver:
    """The few driver entry points used here, with their argument types."""

    _instance = None

    def __init__(self):
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise ConditionalGraphUnavailable(f"cannot load the CUDA driver library: {exc}") from None
        p, u, sz = ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t
        pp = ctypes.POINTER(ctypes.c_void_p)
        signatures = {
            "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
            "cuDriverGetVersion": [ctypes.POINTER(ctypes.c_int)],
            "cuCtxGetCurrent": [pp],
            "cuGraphCreate": [pp, u],
            "cuGraphDestroy": [p],
            "cuGraphConditionalHandleCreate": [ctypes.POINTER(ctypes.c_uint64), p, p, u, u],
            "cuGraphAddChildGraphNode": [pp, p, pp, sz, p],
            "cuGraphAddNode_v2": [pp, p, pp, p, sz, ctypes.POINTER(_NodeParams)],
            "cuGraphInstantiateWithFlags": [pp, p, ctypes.c_ulonglong],
            "cuGraphExecDestroy": [p],
            "cuGraphLaunch": [p, p],
        }
        for name, argtypes in signatures.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise ConditionalGraphUnavailable(f"the CUDA driver has no {name}") from None
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
            setattr(self, name, fn)
        version = ctypes.c_int()
        self.check(self.cuDriverGetVersion(ctypes.byref(version)), "cuDriverGetVersion")
        if version.value < 12040:
            raise ConditionalGraphUnavailable(
                f"conditional graph nodes need a CUDA 12.4 driver, this one is {version.value // 1000}."
                f"{version.value % 1000 // 10}")

    @classmethod
    def get(cls) -> "_Driver":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def check(self, result: int, what: str) -> None:
        if result != 0:
            text = ctypes.c_char_p()
            self.cuGetErrorString(result, ctypes.byref(text))
            message = text.value.decode() if text.value else "unknown error"
            raise RuntimeError(f"{what} failed: CUDA driver error {result} ({message})")


class GraphChain:
    """A CUDA graph built as a chain: each node added depends on the one added before it."""

    def __init__(self, driver: _Driver, graph: int, owned: bool, keep: list):
        self._driver = driver
        self.graph = graph
        self._owned = owned
        self._last = None          # the chain's last node (None: the graph is empty)
        self._keep = keep          # objects that must live as long as the root graph

    @classmethod
    def create(cls) -> "GraphChain":
        """An empty root graph (raises :class:`ConditionalGraphUnavailable` on an old driver)."""
        driver = _Driver.get()
        graph = ctypes.c_void_p()
        driver.check(driver.cuGraphCreate(ctypes.byref(graph), 0), "cuGraphCreate")
        return cls(driver, graph.value, True, [])

    def _context(self) -> int:
        ctx = ctypes.c_void_p()
        self._driver.check(self._driver.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        return ctx.value

    def _dependencies(self):
        if self._last is None:
            return None, 0
        return (ctypes.c_void_p * 1)(self._last), 1

    def handle(self, default: int | None = None) -> int:
        """A conditional handle of this graph (for its IF and WHILE nodes), reset to ``default``
        at every launch when given; an int to pass to kernels as an unsigned 64-bit argument."""
        handle = ctypes.c_uint64()
        flags = _ASSIGN_DEFAULT if default is not None else 0
        self._driver.check(self._driver.cuGraphConditionalHandleCreate(
            ctypes.byref(handle), self.graph, self._context(), int(default or 0), flags),
            "cuGraphConditionalHandleCreate")
        return handle.value

    def child(self, captured) -> "GraphChain":
        """Append a copy of ``captured`` (a ``cupy.cuda.graph.Graph`` from stream capture)."""
        node = ctypes.c_void_p()
        deps, n = self._dependencies()
        self._driver.check(self._driver.cuGraphAddChildGraphNode(
            ctypes.byref(node), self.graph, deps, n, ctypes.c_void_p(captured.graph)), "cuGraphAddChildGraphNode")
        self._last = node.value
        return self

    def _conditional(self, kind: int, handle: int) -> "GraphChain":
        params = _NodeParams()
        params.type = _NODE_TYPE_CONDITIONAL
        params.conditional.handle = handle
        params.conditional.type = kind
        params.conditional.size = 1
        params.conditional.context = self._context()
        node = ctypes.c_void_p()
        deps, n = self._dependencies()
        self._driver.check(self._driver.cuGraphAddNode_v2(
            ctypes.byref(node), self.graph, deps, None, n, ctypes.byref(params)), "cuGraphAddNode (conditional)")
        self._last = node.value
        body = params.conditional.graphs_out[0]      # owned by the node
        return GraphChain(self._driver, body, False, self._keep)

    def if_then(self, handle: int) -> "GraphChain":
        """Append an IF node on ``handle``; returns the chain of its body (run once when set)."""
        return self._conditional(_COND_IF, handle)

    def while_loop(self, handle: int) -> "GraphChain":
        """Append a WHILE node on ``handle``; returns the chain of its body (run while set; the
        handle is tested before each pass, the first included)."""
        return self._conditional(_COND_WHILE, handle)

    def instantiate(self) -> "GraphExecutable":
        exe = ctypes.c_void_p()
        self._driver.check(self._driver.cuGraphInstantiateWithFlags(ctypes.byref(exe), self.graph, 0),
                           "cuGraphInstantiate")
        return GraphExecutable(self._driver, exe.value, self)

    def close(self) -> None:
        if self._owned and self.graph:
            self._driver.cuGraphDestroy(self.graph)
            self.graph = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class GraphExecutable:
    """An instantiated graph; :meth:`launch` enqueues it on a stream."""

    def __init__(self, driver: _Driver, exe: int, chain: GraphChain):
        self._driver = driver
        self.exe = exe
        self._chain = chain        # the graph it was made from lives as long

    def launch(self, stream) -> None:
        """Enqueue on ``stream`` (a ``cupy.cuda.Stream``)."""
        self._driver.check(self._driver.cuGraphLaunch(self.exe, ctypes.c_void_p(stream.ptr)), "cuGraphLaunch")

    def __del__(self):
        try:
            if self.exe:
                self._driver.cuGraphExecDestroy(self.exe)
                self.exe = None
        except Exception:
            pass
