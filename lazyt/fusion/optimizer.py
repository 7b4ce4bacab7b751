"""The optimizer: turns a pending stream into a `Plan` (runs only on a plan-cache miss).

The stream becomes a networkx DAG (one node per op, an edge per tensor read). Then:
1. Dead ops go: an op is needed if one of its outputs is alive or a needed op reads it.
2. An expand read only by elementwise ops is absorbed (they read its source, broadcast).
   Connected elementwise ops of one output shape are grouped into blocks, in record order. A
   block is open until an op outside it reads one of its values; an elementwise op joins the
   open blocks of its shape whose values it reads (merging them). Each block then runs at the
   position of its last member, which is a valid order: everything a member reads was computed
   earlier, and nothing outside reads the block before it is closed.
3. A block's value is materialized only if it is alive or an op outside the block reads it.
4. In place: a block input that is dead, read by nobody else, and whose buffer the runtime owns
   (a fused block's output that nobody else may see) is marked ReadWrite, so a same-shape,
   same-dtype output may be written into it.
"""
from __future__ import annotations

import networkx as nx

from ..backends.fused import FusedBlock, FusedInstr, Ref
from ..shape import numel
from .ir import CUSTOM, TensorStatus
from .plan import BlockStep, OpStep, Plan, PrologueStep



def build_graph(stream) -> tuple:
    """The stream as a networkx DiGraph over op positions, plus per-op input/output relative
    numbers and each tensor's producer."""
    seen = stream.seen
    ops = stream.ops
    g = nx.DiGraph()
    g.add_nodes_from(range(len(ops)))
    in_rels = []
    out_rels = []
    producer: dict = {}
    for i, op in enumerate(ops):
        ins = tuple(seen[t.id] for t in op.inputs)
        outs = tuple(seen[t.id] for t in op.outputs)
        in_rels.append(ins)
        out_rels.append(outs)
        for r in outs:
            producer[r] = i
        g.add_edges_from((producer[r], i) for r in ins if r in producer)
    return g, in_rels, out_rels, producer


def build_plan(stream, key: tuple, prologue_prims: frozenset = frozenset(),
               takes_prologue=None) -> Plan:
    """The plan for `stream` given its key (`OperationStream.key`): which outside inputs the
    runtime owns, and which relative numbers are alive. `prologue_prims`: the declared
    primitives (by name) whose inner kernel may take a fused block in front of its first
    input (`Backend.prologue_ops`), besides the composites that say so themselves;
    `takes_prologue(name, block, op_code, args)` (`Backend.takes_prologue`) says for which
    blocks and arguments."""
    _, ext, alive = key
    ops = stream.ops
    n_ops = len(ops)
    g, in_rels, out_rels, producer = build_graph(stream)

    # 1. dead-op elimination (reverse record order is a reverse topological order)
    needed = [False] * n_ops
    for i in range(n_ops - 1, -1, -1):
        needed[i] = any(alive[r] for r in out_rels[i]) or any(needed[j] for j in g.succ[i])

    # consumers of each tensor among needed ops
    readers: dict = {}
    for i in range(n_ops):
        if needed[i]:
            for r in in_rels[i]:
                readers.setdefault(r, []).append(i)

    # an expand read only by elementwise ops is absorbed: they read its source, broadcast
    # (block inputs are broadcast to the block's shape anyway), and the expand never runs
    alias: dict = {}
    for i, op in enumerate(ops):
        if needed[i] and op.kind.absorbable:
            r = out_rels[i][0]
            if not alive[r] and all(ops[j].kind.elementwise for j in readers.get(r, ())):
                src = in_rels[i][0]
                alias[r] = alias.get(src, src)
                needed[i] = False
    if alias:
        in_rels = [tuple(alias.get(r, r) for r in ins) for ins in in_rels]
        readers = {}
        for i in range(n_ops):
            if needed[i]:
                for r in in_rels[i]:
                    readers.setdefault(r, []).append(i)

    # 2. grouping
    parent: dict = {}     # block id -> merged-into block id (union-find)
    members: dict = {}    # root block id -> op positions
    shape_of: dict = {}   # root block id -> shape
    is_open: dict = {}
    block_of: dict = {}   # op position -> block id (resolve with find)

    def find(b):
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        return b

    n_blocks = 0
    for i in range(n_ops):
        if not needed[i]:
            continue
        op = ops[i]
        pred_blocks = {find(block_of[producer[r]]) for r in in_rels[i]
                       if r in producer and producer[r] in block_of}
        if op.kind.elementwise:
            shape = op.outputs[0].shape
            joinable = [b for b in pred_blocks if is_open[b] and shape_of[b] == shape]
            if joinable:
                b = min(joinable)
                for other in joinable:
                    if other != b:
                        parent[other] = b
                        members[b].extend(members.pop(other))
                        del is_open[other], shape_of[other]
                members[b].append(i)
            else:
                b = n_blocks
                n_blocks += 1
                parent[b] = b
                members[b] = [i]
                shape_of[b] = shape
                is_open[b] = True
            block_of[i] = b
            for other in pred_blocks:
                if other not in joinable:
                    is_open[other] = False  # read from outside: closed
        else:
            for b in pred_blocks:
                is_open[b] = False
    for b in members:
        members[b].sort()

    # scalar positions: op position -> index of its first scalar in stream.scalars
    scalar_start = [0] * n_ops
    k = 0
    for i, op in enumerate(ops):
        scalar_start[i] = k
        if op.kind.elementwise:
            k += len(op.scalars)

    # 3. steps, in a valid order: opaque ops at their position, blocks at their last member
    last_member = {b: m[-1] for b, m in members.items()}
    step_specs = []
    for i in range(n_ops):
        if not needed[i]:
            continue
        if i in block_of:
            b = find(block_of[i])
            if last_member[b] == i:
                step_specs.append(("block", b))
        else:
            step_specs.append(("op", i))

    steps = []
    for kind, x in step_specs:
        if kind == "op":
            op = ops[x]
            nbytes = sum(numel(t.shape) * t.dtype.itemsize for t in op.outputs)
            steps.append(OpStep(x, in_rels[x], out_rels[x], op.name, nbytes))
        else:
            steps.append(_block_step(stream, members[x], in_rels, out_rels, readers, alive,
                                     scalar_start))
    steps = _with_prologues(steps, ops, readers, alive, prologue_prims, takes_prologue)
    n_fused_ops = sum(len(s.members) for s in steps if isinstance(s, (BlockStep, PrologueStep)))

    # 4. in-place reuse, outputs kept, and when each value can be dropped
    produced_by_block = {r for s in steps if isinstance(s, BlockStep) for r in s.outs}
    opaque = (OpStep, PrologueStep)
    ext_reusable = {r: reusable for r, _, _, reusable in ext}
    final_steps = []
    for s in steps:
        if isinstance(s, BlockStep):
            s = _with_inplace(s, stream, readers, alive, ext_reusable, produced_by_block)
        final_steps.append(s)
    steps = final_steps

    stores = tuple(r for r in range(len(alive)) if alive[r] and r in producer
                   and needed[producer[r]])
    opaque_readers = {r for s in steps if isinstance(s, opaque) for r in s.ins}
    owned = tuple(r for r in stores if r in produced_by_block and r not in opaque_readers)
    last_read: dict = {}
    for n, s in enumerate(steps):
        for r in s.ins:
            last_read[r] = n
    drops: dict = {}
    keep = set(stores)
    for r, n in last_read.items():
        if r not in keep:
            drops.setdefault(n, []).append(r)
    for n, s in enumerate(steps):
        s.drop = tuple(drops.get(n, ()))
    loads = tuple(r for r, *_ in stream.ext if r in last_read)
    shared = tuple(r for r in loads if r in opaque_readers)
    return Plan(size=len(alive), loads=loads, steps=tuple(steps), stores=stores, owned=owned,
                shared=shared,
                n_blocks=sum(isinstance(s, (BlockStep, PrologueStep)) for s in steps),
                n_fused_ops=n_fused_ops)


def _with_prologues(steps: list, ops, readers, alive, prims: frozenset = frozenset(),
                    takes=None) -> list:
    """Hand a block to the opaque op that reads it (a `PrologueStep`) where the op's kernel
    takes a block in front of its first input (a composite's `fn.prologue`, set by the Fusion
    layer for the inner backend's `prologue_ops`; a declared primitive named in `prims`) and
    nothing else sees the block's one value: not alive, read by that op alone and only as its
    first input."""
    made = {}
    for s in steps:
        if isinstance(s, BlockStep) and len(s.outs) == 1:
            made[s.outs[0]] = s
    if not made:
        return steps
    merged: dict = {}     # id of a block step taken -> the prologue step replacing its reader
    out = []
    for s in steps:
        if isinstance(s, OpStep) and s.ins and s.ins[0] in made:
            op = ops[s.index]
            r = s.ins[0]
            b = made[r]
            if op.kind is CUSTOM:
                ok = getattr(op.fn, "prologue", None) is not None
            else:
                ok = op.kind.name in prims and (takes is None or
                                                takes(op.kind.name, b.block, op.op, op.args))
            if ok and not alive[r] and readers.get(r) == [s.index] and \
                    r not in s.ins[1:] and len(s.outs) == 1:
                p = PrologueStep(block=b.block, ins=b.ins + s.ins[1:], n_block_ins=len(b.ins),
                                 scalar_idx=b.scalar_idx, members=b.members,
                                 op_names=b.op_names, index=s.index, outs=s.outs,
                                 op_name=s.name, nbytes=s.nbytes)
                merged[id(b)] = p
                out.append(p)
                continue
        out.append(s)
    return [s for s in out if id(s) not in merged]


def _block_step(stream, member_ops, in_rels, out_rels, readers, alive,
                scalar_start) -> BlockStep:
    ops = stream.ops
    irs = stream.irs
    member_set = set(member_ops)
    value_of: dict = {}   # relative number -> instruction index
    inputs: list = []     # relative numbers
    input_index: dict = {}
    scalar_idx: list = []
    scalar_dtypes: list = []
    instrs: list = []
    deps: list = []       # per instruction: set of block inputs it depends on

    def ref(r):
        v = value_of.get(r)
        if v is not None:
            return Ref("v", v), deps[v]
        j = input_index.get(r)
        if j is None:
            j = input_index[r] = len(inputs)
            inputs.append(r)
        return Ref("in", j), {j}

    for i in member_ops:
        op = ops[i]
        out_ir = op.outputs[0]
        kind = op.kind.instr
        tensors = iter(in_rels[i])
        sc = scalar_start[i]
        pattern = op.args[0] if kind in ("binary", "where") else \
            "t" if kind in ("unary", "cast") else "s"
        # a scalar is meant in its tensor operand's dtype (the result's, except comparisons)
        operand_dtype = op.inputs[0].dtype if kind == "binary" else out_ir.dtype
        operands = []
        dep: set = set()
        for p in pattern:
            if p == "t":
                rf, d = ref(next(tensors))
                dep |= d
            else:
                rf = Ref("sc", len(scalar_idx))
                scalar_idx.append(sc)
                scalar_dtypes.append(operand_dtype)
                sc += 1
            operands.append(rf)
        instrs.append(FusedInstr(kind, op.op, tuple(operands), out_ir.dtype))
        deps.append(dep)
        value_of[out_rels[i][0]] = len(instrs) - 1

    outputs = []
    out_rel_list = []
    for n, i in enumerate(member_ops):
        r = out_rels[i][0]
        if alive[r] or any(j not in member_set for j in readers.get(r, ())):
            outputs.append(n)
            out_rel_list.append(r)
    shape = ops[member_ops[0]].outputs[0].shape
    block = FusedBlock(shape=shape,
                       inputs=tuple((irs[r].shape, irs[r].dtype) for r in inputs),
                       scalars=tuple(scalar_dtypes), instrs=tuple(instrs),
                       outputs=tuple(outputs))
    nbytes = sum(numel(shape) * instrs[v].dtype.itemsize for v in outputs)
    return BlockStep(block=block, ins=tuple(inputs), outs=tuple(out_rel_list),
                     scalar_idx=tuple(scalar_idx), members=tuple(member_ops),
                     op_names=tuple(ops[i].name for i in member_ops), nbytes=nbytes,
                     out_deps=tuple(tuple(sorted(deps[v])) for v in outputs))


def _with_inplace(step: BlockStep, stream, readers, alive, ext_reusable,
                  produced_by_block) -> BlockStep:
    """Pair dead, owned, unshared block inputs with same-shape/dtype outputs (ReadWrite)."""
    block = step.block
    member_set = set(step.members)
    pairs = []
    taken: set = set()
    for j, r in enumerate(step.ins):
        if alive[r]:
            continue
        if r in ext_reusable:
            if not ext_reusable[r]:
                continue
        elif r not in produced_by_block:
            continue
        if any(i not in member_set for i in readers.get(r, ())):
            continue
        shape, dtype = block.inputs[j]
        if shape != block.shape:
            continue
        for k, v in enumerate(block.outputs):
            if k not in taken and block.instrs[v].dtype == dtype:
                pairs.append((k, j))
                taken.add(k)
                stream.irs[r].status = TensorStatus.READ_WRITE
                break
    if not pairs:
        return step
    step.block = FusedBlock(shape=block.shape, inputs=block.inputs, scalars=block.scalars,
                            instrs=block.instrs, outputs=block.outputs, inplace=tuple(pairs))
    return step
