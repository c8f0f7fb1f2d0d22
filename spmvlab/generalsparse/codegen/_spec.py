"""What one generated kernel is (:class:`Spec`, its :class:`Offset` fields) and the writer
the emitters share (:class:`_Writer`, column and store helpers); see ``_emit.py`` for how the
text is put together.
"""
from __future__ import annotations

import dataclasses

WARP = 32
FULL = "0xFFFFFFFF"

# flag bits of the per-slot ``flags`` array the kernel reads
ROW_START, PAD = 1, 2


@dataclasses.dataclass(frozen=True)
class Offset:
    """How the kernel finds one offset array's value at an id: ``expr`` is a Python
    expression over the variable ``ID`` (from ``reference.offsets``), ``arrays`` the
    (name, dtype name) of the device arrays it reads, in kernel-argument order."""

    name: str
    expr: str
    arrays: tuple
    raw: bool = False          # the whole offset array, int64 (kernels built from a bare strategy)

    def at(self, var: str) -> str:
        """The expression with the id replaced by ``var`` (itself an expression)."""
        import ast

        tree = ast.parse(self.expr, mode="eval")

        class _Sub(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id == "ID":
                    return ast.parse(f"({var})", mode="eval").body
                return node

        return ast.unparse(_Sub().visit(tree))

    @property
    def loads(self) -> bool:
        return bool(self.arrays)


@dataclasses.dataclass(frozen=True)
class Spec:
    """Everything the text depends on (also the cache key, with the strategy's fields)."""

    label: str                 # the strategy's label, for the docstring
    dtype: str                 # value dtype name ('float16', 'float32')
    acc: str                   # accumulator dtype name
    thread_alg: str | None     # THREAD_TOTAL / THREAD_BITMAP / None (<= 1 slot per thread-group)
    warp_alg: str | None       # WARP_TOTAL / WARP_BITMAP / WARP_SEGMENT / None
    block_alg: str | None      # BLOCK_*: over the warp-groups of a block, in shared memory
    atomic: bool               # blocks split rows: the pieces passed to the top are added atomically
    warps_per_block: int
    group_lanes: int           # L: lanes of a thread-group (adjacent)
    groups_per_warp: int       # T: thread-groups per warp-group
    group_warps: int           # warps of a warp-group (adjacent)
    groups_per_block: int      # warp-groups per block
    thread_cols: int
    warp_cols: int
    block_cols: int
    interleave: bool
    vector_width: int          # V: the vector width (slots per load of compact storage; interleaving unit)
    thread_offset: Offset
    warp_offset: Offset | None  # only read where interleaved
    compact: bool = False      # compact storage (reference Plan.device_arrays)
    col_mode: str = "i32"      # compact columns: "u16" (as they are), "u16base" (+ col_base), "i32"
    b_vector: int = 1          # values of B per load (B passed flat, N a multiple of it)
    sort_out: bool = False     # compact with sorted rows: row_order maps rows to C
    prefetch: bool = False     # compact vector loads (THREAD_TOTAL): the next load of A issued first
    batch: bool = False        # compact vector loads: a full load's gathers of B all issued first
    out_t: bool = False        # C is the product's transpose (N x M): stores go to C[column, row]

    @property
    def pattern_arrays(self) -> tuple:
        out = list(self.thread_offset.arrays)
        if self.warp_offset is not None:
            out += [a for a in self.warp_offset.arrays if a not in out]
        return tuple(out)


class _Writer:
    def __init__(self):
        self.lines = []
        self.depth = 0

    def __call__(self, text=""):
        for line in text.splitlines() or [""]:
            self.lines.append(("    " * self.depth + line) if line else "")

    def indent(self):
        self.depth += 1

    def dedent(self):
        self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _columns(spec: Spec):
    """The thread's columns j = 0 .. thread_cols - 1 (one accumulator ``a{j}`` each)."""
    return range(spec.thread_cols)


def _emit_write(emit: _Writer, spec: Spec, row: str, vals: str, atomic: bool):
    """Write (or atomically add) the accumulators ``vals{j}`` to row ``row`` of C (to
    column ``row`` of C, the transpose, with ``spec.out_t``)."""
    for j in _columns(spec):
        at = f"col0 + {j}, {row}" if spec.out_t else f"{row}, col0 + {j}"
        if atomic:
            emit(f"if ok{j}:\n    cuda.atomic.add(C, ({at}), {vals}{j})")
        else:
            emit(f"if ok{j}:\n    C[{at}] = {vals}{j}")


def block_mode(spec: Spec) -> bool:
    """A block reduction over two or more warp-groups: each warp-group passes its end pieces
    (lead, tail) through shared memory instead of writing them."""
    return spec.block_alg is not None and spec.groups_per_block > 1


def _block_note(spec: Spec) -> str:
    if spec.block_alg is None:
        return ""
    if spec.groups_per_block == 1:
        return " (one warp-group: nothing to combine)"
    return f" (over {spec.groups_per_block} warp-groups in shared memory)"
