"""Collectives across the processes of an MPI job (data parallel): ms.all_reduce,
ms.all_gather, ms.reduce_scatter, ms.broadcast, and ms.comm_rank.

Each process runs the same program on its own data; a collective combines one tensor of
every process (MPI_COMM_WORLD) and gives each its result. They are ms ops like the others,
inside the compiled step, so that a jit training step with a gradient all-reduce is still one
compiled call (MindSpore's AllReduce/AllGather/ReduceScatter/Broadcast, JAX's psum/all_gather).

Lowering: calls of the MPI C API from the compiled code. convert-ms-to-linalg turns each
collective into a call of a private wrapper function (memref operands: the operand's buffer
by `bufferization.to_buffer`, a fresh `memref.alloc` for the result, read back with
`to_tensor restrict`) whose body calls `MPI_Allreduce` with `llvm.call`: MPICH's ABI (integer
handles, mpi.h) or Open MPI's (`&ompi_mpi_float`, ...; MPI_IMPLEMENTATION, set by
mscc.communication.init() from the library it loaded). Nothing runs between the compiled code
and MPI (no Python, no wrapper library), and the same IR serves the in-process
ExecutionEngine, the disk cache and saved artifacts, which resolve MPI_* from the libmpi
init() loaded with RTLD_GLOBAL (passes/artifact.py links it). Measured (bench/
data_parallel.py, 2 processes on this 2-core machine): the compiled all-reduce of the digits
MLP's 9,610 float32 gradients takes ~20 us against ~14 us for mpi4py's Comm.Allreduce of the
same buffer, 0.25 ms against 0.21 ms for 1.6 MB; a runtime call back into Python would add a
ctypes callback and the GIL to that. Upstream MLIR's `mpi` dialect was the first choice and
was measured: `convert-to-llvm` lowers mpi.allreduce to the same MPICH call (provided the
module has a `dlti.map` with "MPI:Implementation": without one the DLTI query's error aborts
the Python PassManager), but its ops declare no memory effects, so the ownership-based
buffer deallocation of the pipeline rejects them ("ops with unknown memory side effects are
not supported"), and LLVM 22's dialect has no bcast, allgather or reduce_scatter. The
wrappers take only pointers into their llvm.call ops, so the deallocation sees a plain call.
all_gather, reduce_scatter and broadcast are all-reduces too: the operand's bits placed in a
zero buffer (all_gather: at the rank's rows; broadcast: only on the root) and combined with
MPI_BOR, which is exact for every dtype (floats included: it works on the bit patterns);
reduce_scatter sums everything and keeps the rank's rows. That moves group_size times the
data of a real MPI_Allgather / MPI_Reduce_scatter_block; a gradient all-reduce, the op data
parallel training runs every step, is the real thing.

Agreement: before its payload every collective all-reduces (MPI_MAX) a 4-word header, a hash
of its kind, dtype and shape and its element count, each also negated: when the ranks do not
run the same collective (shapes that differ between ranks, a different op), every rank sees
it at once, prints where (the op's source line, its own shape, the range of counts) and
calls MPI_Abort, which ends the job: an error, never corrupted weights or a hang in a
mismatched MPI call. The header costs one small all-reduce per collective (~3.3 us on one
machine). MPI counts are 32-bit: a collective of 2**31 or more elements is refused at compile
time (nn.DistributedGradReducer's buckets stay far below it).

Dtypes: MPI has no float16/bfloat16, so their all-reduces compute in float32 (one rounding at
the end); unsigned max/min flip the sign bit around a signed max/min (the storage is
signless). Gradients (MindSpore's bprops): all_reduce(sum) -> all_reduce(sum); prod ->
all_reduce(sum of dout * out) / x; max/min -> all_reduce(sum) where x is the extremum;
all_gather <-> reduce_scatter; broadcast -> the sum of the cotangents on the root, zeros
elsewhere. The CUDA target refuses collectives (ms-gpu-reject-collectives).
"""
from __future__ import annotations

import hashlib

from ..lazy import LazyModule, arith, func, ir, scf, tensor

from .. import dtypes as dt
from .. import lowering
from ..builders import element_type, tensor_type
from ..dtypes import TensorSpec
from ..grad import each, no_grad
from ..ir_helpers import aligned_pointer, enclosing_module, fresh_symbol
from ..registry import ShapeError, define

bufferization = LazyModule("mlir.dialects.bufferization")
llvm = LazyModule("mlir.dialects.llvm")  # (imported by the first collective lowered: ~14 ms)
memref = LazyModule("mlir.dialects.memref")

REDUCE_OPS = ("sum", "max", "min", "prod")
MAX_COUNT = 2 ** 31 - 1          # MPI counts are C ints
MPI_ATTR = "ms.mpi"              # on a module whose code calls MPI
MPI_IMPLEMENTATION = "MPICH"     # or "OpenMPI": the ABI the lowering emits (communication.init)
COLLECTIVES = ("ms.all_reduce", "ms.all_gather", "ms.reduce_scatter", "ms.broadcast",
               "ms.comm_rank")

_COLLECTIVE_DTYPES = tuple(d for d in dt.ALL if d is not dt.bool_)


# ------------------------------------------------------------------ shape rules

def _check_count(spec):
    if spec.size > MAX_COUNT:
        raise ShapeError(f"a collective of {spec.size} elements is more than MPI's count "
                         f"limit ({MAX_COUNT}); split the tensor")


def _same_infer(ins, attrs):
    x, = ins
    _check_count(x)
    return x


def _reduce_infer(ins, attrs):
    if attrs.get("reduce_op") not in REDUCE_OPS:
        raise ShapeError(f"reduce_op must be one of {', '.join(REDUCE_OPS)}, got "
                         f"{attrs.get('reduce_op')!r}")
    return _same_infer(ins, attrs)


def _group(attrs):
    n = attrs.get("group_size")
    if not isinstance(n, int) or n < 1:
        raise ShapeError(f"group_size must be a positive int, got {n!r}")
    return n


def _gather_infer(ins, attrs):
    x, = ins
    n = _group(attrs)
    if x.rank == 0:
        raise ShapeError("needs a tensor of rank 1 or more (ranks are stacked along axis 0)")
    out = TensorSpec((x.shape[0] * n,) + x.shape[1:], x.dtype)
    _check_count(out)
    return out


def _scatter_infer(ins, attrs):
    x, = ins
    n = _group(attrs)
    if attrs.get("reduce_op") != "sum":
        raise ShapeError(f"reduce_op must be 'sum', got {attrs.get('reduce_op')!r}")
    if x.rank == 0 or x.shape[0] % n:
        raise ShapeError(f"axis 0 of {x} must divide into group_size={n} equal parts")
    _check_count(x)
    return TensorSpec((x.shape[0] // n,) + x.shape[1:], x.dtype)


def _broadcast_infer(ins, attrs):
    root = attrs.get("root")
    if not isinstance(root, int) or root < 0:
        raise ShapeError(f"root must be a rank (an int >= 0), got {root!r}")
    return _same_infer(ins, attrs)


def _rank_infer(ins, attrs):
    return TensorSpec((), dt.int32)


# ------------------------------------------------------------------ lowering: MPI calls

# The handles of the two MPI ABIs: MPICH's are integers (mpi.h), Open MPI's the addresses of
# its predefined objects.
_MPICH = {"comm_world": 0x44000000, "float32": 0x4c00040a, "float64": 0x4c00080b,
          "int8": 0x4c000137, "int16": 0x4c000238, "int32": 0x4c000439, "int64": 0x4c00083a,
          "max": 0x58000001, "min": 0x58000002, "sum": 0x58000003, "prod": 0x58000004,
          "bor": 0x58000008}
_OPENMPI = {"comm_world": "ompi_mpi_comm_world", "float32": "ompi_mpi_float",
            "float64": "ompi_mpi_double", "int8": "ompi_mpi_int8_t",
            "int16": "ompi_mpi_int16_t", "int32": "ompi_mpi_int32_t",
            "int64": "ompi_mpi_int64_t", "max": "ompi_mpi_op_max", "min": "ompi_mpi_op_min",
            "sum": "ompi_mpi_op_sum", "prod": "ompi_mpi_op_prod", "bor": "ompi_mpi_op_bor"}


def _openmpi():
    return MPI_IMPLEMENTATION == "OpenMPI"


def _int(bits):
    return ir.IntegerType.get_signless(bits)


def _ptr():
    return llvm.PointerType.get()


def _htype():
    return _ptr() if _openmpi() else _int(32)


def _c_function_type(inputs, variadic=False):
    """The !llvm.func type `i32 (inputs[, ...])` (every C function called here returns an
    int). The bindings have no builder for LLVM function types, so this one type is parsed
    from its parts' printed types."""
    params = [str(t) for t in inputs] + (["..."] if variadic else [])
    return ir.Type.parse(f"!llvm.func<i32 ({', '.join(params)})>")


def _const(bits, value, loc):
    return llvm.mlir_constant(ir.IntegerAttr.get(_int(bits), value), loc=loc)


def _handle(name, loc):
    """MPI's predefined handle `name`: MPICH's integer or the address of Open MPI's object."""
    if _openmpi():
        return llvm.mlir_addressof(_ptr(), _OPENMPI[name], loc=loc)
    return _const(32, _MPICH[name], loc)


def _call(callee, args, loc, variadic=None):
    """llvm.call of a C function that returns an int (which nothing reads); `variadic`: the
    callee's !llvm.func type, which a call of a variadic function must carry."""
    var_type = ir.TypeAttr.get(variadic) if variadic is not None else None
    return llvm.call(_int(32), args, [], [], callee=callee, var_callee_type=var_type, loc=loc)


def _linkage(kind):
    # (the bindings register no builder for #llvm.linkage)
    return ir.Attribute.parse(f"#llvm.linkage<{kind}>")


def _c_functions():
    """The MPI and C functions the collectives call: name -> (parameter types, variadic)."""
    i32, ptr, h = _int(32), _ptr(), _htype()
    return {"MPI_Allreduce": ([ptr, ptr, i32, h, h, h], False),
            "MPI_Comm_rank": ([h, ptr], False), "MPI_Comm_size": ([h, ptr], False),
            "MPI_Abort": ([h, i32], False), "dprintf": ([i32, ptr], True)}


def _declare(module):
    """Add what the collectives' code refers to and `module` does not have yet: the MPI and
    C functions, Open MPI's predefined objects, and two helpers: this process's rank and the
    number of processes. A module's collectives share them, so they get no op's location."""
    table = ir.SymbolTable(module)
    loc = ir.Location.unknown()
    # (unnamed_addr none: what the textual form's parser sets, and the builders leave out)
    with ir.InsertionPoint(module.regions[0].blocks[0]):
        for name, (inputs, variadic) in _c_functions().items():
            if name not in table:
                llvm.LLVMFuncOp(name, ir.TypeAttr.get(_c_function_type(inputs, variadic)),
                                unnamed_addr=llvm.UnnamedAddr.None_, loc=loc)
        for name in sorted(set(_OPENMPI.values())) if _openmpi() else ():
            if name not in table:  # (defined by libmpi: only their addresses are used)
                llvm.GlobalOp(_int(8), name, _linkage("external"), addr_space=0,
                              unnamed_addr=llvm.UnnamedAddr.None_, loc=loc)
        for query in ("rank", "size"):
            if f"ms_mpi_{query}" not in table:
                _query_function(query, loc)


def _query_function(query, loc):
    """func.func private @ms_mpi_<query>() -> i32: MPI_Comm_<query> of MPI_COMM_WORLD."""
    i32 = _int(32)
    fn = func.FuncOp(f"ms_mpi_{query}", ([], [i32]), visibility="private", loc=loc)
    with ir.InsertionPoint(fn.add_entry_block()):
        comm = _handle("comm_world", loc)
        slot = llvm.alloca(_ptr(), _const(64, 1, loc), i32, loc=loc)
        _call(f"MPI_Comm_{query}", [comm, slot], loc)
        func.ReturnOp([llvm.load(i32, slot, loc=loc)], loc=loc)


def _signature(*parts) -> int:
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 2  # positive, and its negation fits in i64


def _where(lc):
    from ...passes.diagnostics import file_location
    file, line, _ = file_location(lc.loc)
    return f"{file}:{line}" if file else "an unknown location"


def _word(array, k, loc):
    """The address of the i64 at index k of `array`."""
    return llvm.getelementptr(_ptr(), array, [], [k], _int(64), llvm.GEPNoWrapFlags.none,
                              loc=loc)


def _agreement_check(comm, sig, count, extra, mismatch, loc):
    """The agreement check (module doc), inside a wrapper: all-reduce (max) of [sig, -sig,
    count, -count]; when the ranks differ or `extra` (_extra_check's kind and value) holds,
    @mismatch prints and aborts."""
    i64 = _int(64)
    four, n4 = _const(64, 4, loc), _const(32, 4, loc)
    sent, got = (llvm.alloca(_ptr(), four, i64, loc=loc) for _ in range(2))
    int64, max_op = _handle("int64", loc), _handle("max", loc)
    words = []
    for k, v in enumerate((sig, -sig, count, -count)):
        word = _const(64, v, loc)
        llvm.store(word, _word(sent, k, loc), loc=loc)
        words.append((word, _word(got, k, loc)))
    _call("MPI_Allreduce", [sent, got, n4, int64, max_op, comm], loc)
    (sig_word, at_top), (neg_sig_word, at_neg_low), (_, at_hi), (_, at_neg_lo) = words
    top, neg_low = (llvm.load(i64, at, loc=loc) for at in (at_top, at_neg_low))
    ne = llvm.ICmpPredicate.ne
    bad = llvm.or_(llvm.icmp(ne, top, sig_word, loc=loc),
                   llvm.icmp(ne, neg_low, neg_sig_word, loc=loc), loc=loc)
    wrong_size = _extra_check(*extra, loc)
    if wrong_size is not None:
        bad = llvm.or_(bad, wrong_size, loc=loc)
    check = scf.IfOp(bad, loc=loc)
    with ir.InsertionPoint(check.then_block):
        hi = llvm.load(i64, at_hi, loc=loc)
        lo = llvm.sub(_const(64, 0, loc), llvm.load(i64, at_neg_lo, loc=loc),
                      llvm.IntegerOverflowFlags.none, loc=loc)
        rank = func.CallOp([_int(32)], ir.FlatSymbolRefAttr.get("ms_mpi_rank"), [], loc=loc)
        func.CallOp([], ir.FlatSymbolRefAttr.get(mismatch), [rank.result, lo, hi], loc=loc)
        scf.YieldOp([], loc=loc)


def _mismatch_function(name, msg_name, message, loc):
    """The message as a NUL-terminated global, and func.func private @name(rank: i32,
    lo: i64, hi: i64) that prints it (dprintf to fd 2) and calls MPI_Abort."""
    i32, i64, ptr = _int(32), _int(64), _ptr()
    text = message.encode() + b"\0"
    # (the bindings have no builder for LLVM array types either)
    llvm.GlobalOp(ir.Type.parse(f"!llvm.array<{len(text)} x i8>"), msg_name,
                  _linkage("internal"), constant=True, value=ir.StringAttr.get(text),
                  addr_space=0, unnamed_addr=llvm.UnnamedAddr.None_, loc=loc)
    fn = func.FuncOp(name, ([i32, i64, i64], []), visibility="private", loc=loc)
    with ir.InsertionPoint(fn.add_entry_block([loc] * 3)):
        fmt = llvm.mlir_addressof(ptr, msg_name, loc=loc)
        _call("dprintf", [_const(32, 2, loc), fmt, *fn.arguments], loc,
              variadic=_c_function_type([i32, ptr], variadic=True))
        _call("MPI_Abort", [_handle("comm_world", loc), _const(32, 1, loc)], loc)
        func.ReturnOp([], loc=loc)


def _extra_check(kind, value, loc):
    """An i1, inside a wrapper: the number of processes is not `value` ("group"), or is not
    more than `value` ("root"); None for no kind."""
    if kind is None:
        return None
    pred = llvm.ICmpPredicate.ne if kind == "group" else llvm.ICmpPredicate.sle
    size = func.CallOp([_int(32)], ir.FlatSymbolRefAttr.get("ms_mpi_size"), [], loc=loc)
    return llvm.icmp(pred, size.result, _const(32, value, loc), loc=loc)


_EXTRA_NOTE = {"group": ", or group_size {} is not the number of processes",
               "root": ", or root {} is not one of the processes"}


def _wrapper_function(name, elem, count, handles, check, loc):
    """func.func private @name(send, recv: memref<count x elem>): the agreement check
    (`check`: _agreement_check's sig, extra and mismatch), then MPI_Allreduce from send's
    buffer into recv's with the MPI datatype and op `handles`."""
    mtype = ir.MemRefType.get([count], elem)
    sig, extra, mismatch = check
    fn = func.FuncOp(name, ([mtype, mtype], []), visibility="private", loc=loc)
    with ir.InsertionPoint(fn.add_entry_block([loc] * 2)):
        comm, datatype, op = (_handle(h, loc) for h in ("comm_world", *handles))
        _agreement_check(comm, sig, count, extra, mismatch, loc)
        send, recv = (aligned_pointer(b, loc) for b in fn.arguments)
        n = _const(32, count, loc)
        _call("MPI_Allreduce", [send, recv, n, datatype, op, comm], loc)
        func.ReturnOp([], loc=loc)


def _allreduce_call(lc, x, shape, work, op, parts, extra=(None, None)):
    """The op's MPI all-reduce of the lowered tensor `x` (storage type of dtype `work`,
    `shape`): a call of a private wrapper that checks agreement, then calls MPI_Allreduce
    from a flat view of x's buffer into a fresh buffer, read back as a tensor."""
    module = enclosing_module(lc.op)
    module.attributes[MPI_ATTR] = ir.UnitAttr.get()
    count = max(1, lowering._prod(shape))
    elem = element_type(work, storage=True)
    spec = lc.ins[0]
    kind, value = extra
    note = _EXTRA_NOTE[kind].format(value) if kind else ""
    message = (f"mscc: rank %d: {lc.opdef.name} of {spec} ({spec.size} elements) at "
               f"{_where(lc).replace('%', '%%')}: the processes do not run the same "
               f"collective here (their counts range from %lld to %lld{note}); aborting\n")
    wrapper, mismatch = fresh_symbol(module, "ms_mpi_allreduce"), fresh_symbol(module, "ms_mpi_mismatch")
    msg_name = fresh_symbol(module, "ms_mpi_message")
    dtype_key = "float32" if work is dt.float32 else "float64" if work is dt.float64 else \
        f"int{work.bits if work is not dt.bool_ else 8}"
    _declare(module)
    with ir.InsertionPoint(module.regions[0].blocks[0]):
        _mismatch_function(mismatch, msg_name, message, lc.loc)
        _wrapper_function(wrapper, elem, count, (dtype_key, op),
                          (_signature(lc.opdef.name, count, *parts), extra, mismatch), lc.loc)
    return _buffer_call(x, shape, count, elem, wrapper)


def _buffer_call(x, shape, count, elem, wrapper):
    """func.call @wrapper(buffer of x, fresh buffer) on flat views; the result tensor."""
    flat_t = ir.RankedTensorType.get([count], elem)
    flat = (tensor.collapse_shape(flat_t, x, [list(range(len(shape)))]) if len(shape) > 1
            else x if len(shape) == 1 else tensor.expand_shape(flat_t, x, [], [], [1]))
    mtype = ir.MemRefType.get([count], elem)
    send = bufferization.to_buffer(mtype, flat, read_only=True)
    recv = memref.AllocOp(mtype, [], []).result
    func.CallOp([], ir.FlatSymbolRefAttr.get(wrapper), [send, recv])
    out = bufferization.to_tensor(flat_t, recv, restrict=True, writable=True)
    if len(shape) == 1:
        return out
    if not shape:
        return tensor.collapse_shape(ir.RankedTensorType.get([], elem), out, [])
    return tensor.expand_shape(ir.RankedTensorType.get(list(shape), elem), out,
                               [list(range(len(shape)))], [], list(shape))


def _rank(lc):
    """This process's rank (an i32), from the module's @ms_mpi_rank."""
    module = enclosing_module(lc.op)
    module.attributes[MPI_ATTR] = ir.UnitAttr.get()
    _declare(module)
    return func.CallOp([ir.IntegerType.get_signless(32)], ir.FlatSymbolRefAttr.get("ms_mpi_rank"),
                       []).result


def _i32(v):
    return arith.constant(ir.IntegerType.get_signless(32), v)


# ------------------------------------------------------------------ lowering: dtypes

def _bits_dtype(d: dt.DType) -> dt.DType:
    """The signed integer dtype with d's storage bits (bool and uint8: int8)."""
    return dt.by_name(f"int{8 if d is dt.bool_ else d.bits}")


def _map(x, shape, src: dt.DType, dst: dt.DType, body):
    """An elementwise linalg.generic over `shape`: body(element in src's compute type) ->
    element of dst. bool is read as its storage byte (int8), never as an i1."""
    src = dt.int8 if src is dt.bool_ else src
    rank = len(shape)
    return lowering.generic([x], [lowering.empty(TensorSpec(shape, dst))],
                            [lowering.identity_map(rank)] * 2, ["parallel"] * rank,
                            lambda a, _out: body(a), [src, dst])


def _to_bits(x, spec, select=None):
    """x's bit patterns as signed integers of its width; `select` (an i1): where false, 0."""
    bits = _bits_dtype(spec.dtype)
    if not spec.dtype.is_float and select is None:
        return x
    itype = element_type(bits, storage=True)

    def body(a):
        v = arith.bitcast(itype, a) if spec.dtype.is_float else a
        return v if select is None else arith.select(select, v, arith.constant(itype, 0))
    return _map(x, spec.shape, spec.dtype, bits, body)


def _from_bits(x, spec):
    if not spec.dtype.is_float:
        return x
    ftype = element_type(spec.dtype, storage=True)
    return _map(x, spec.shape, _bits_dtype(spec.dtype), spec.dtype,
                lambda a: arith.bitcast(ftype, a))


def _flip_sign(x, spec):
    """Unsigned integers with their top bit flipped: their order as signed integers is the
    unsigned order (max/min through MPI's signed types)."""
    itype = element_type(spec.dtype, storage=True)
    top = arith.constant(itype, -(1 << (spec.dtype.bits - 1)))
    return _map(x, spec.shape, _bits_dtype(spec.dtype), _bits_dtype(spec.dtype),
                lambda a: arith.xori(a, top))


def _cast(x, spec, dst):
    return _map(x, spec.shape, spec.dtype, dst,
                lambda a: lowering.cast_scalar(a, spec.dtype, dst))


# ------------------------------------------------------------------ lowering: the ops

def _lower_all_reduce(lc, x):
    spec, op = lc.ins[0], lc.attrs["reduce_op"]
    wide = spec.dtype in dt.HALF_FLOATS
    flip = spec.dtype.kind == "uint" and op in ("max", "min")
    if wide:
        x = _cast(x, spec, dt.float32)
    elif flip:
        x = _flip_sign(x, spec)
    work = dt.float32 if wide else spec.dtype if spec.dtype.is_float else _bits_dtype(spec.dtype)
    out = _allreduce_call(lc, x, spec.shape, work, op, (spec.dtype.name, spec.shape, op))
    if wide:
        return _cast(out, TensorSpec(spec.shape, dt.float32), spec.dtype)
    return _flip_sign(out, spec) if flip else out


def _lower_broadcast(lc, x):
    spec, root = lc.ins[0], lc.attrs["root"]
    is_root = arith.cmpi(arith.CmpIPredicate.eq, _rank(lc), _i32(root))
    out = _allreduce_call(lc, _to_bits(x, spec, is_root), spec.shape, _bits_dtype(spec.dtype),
                          "bor", (spec.dtype.name, spec.shape, root), ("root", root))
    return _from_bits(out, spec)


def _rows_at_rank(lc, rows):
    """The offset of this rank's rows, rank * rows, as an index."""
    rank = arith.index_cast(ir.IndexType.get(), _rank(lc))
    return arith.muli(rank, lowering.index_constant(rows))


def _slice_args(offset, shape):
    dyn = ir.ShapedType.get_dynamic_size()
    rank = len(shape)
    return [offset], [], [], [dyn] + [0] * (rank - 1), list(shape), [1] * rank


def _lower_all_gather(lc, x):
    spec, out_spec, n = lc.ins[0], lc.out, lc.attrs["group_size"]
    bits = _bits_dtype(spec.dtype)
    zeros = lowering.fill(TensorSpec(out_spec.shape, bits), 0)
    placed = tensor.insert_slice(_to_bits(x, spec), zeros,
                                 *_slice_args(_rows_at_rank(lc, spec.shape[0]), spec.shape))
    out = _allreduce_call(lc, placed, out_spec.shape, bits, "bor",
                          (spec.dtype.name, spec.shape, n), ("group", n))
    return _from_bits(out, out_spec)


def _lower_reduce_scatter(lc, x):
    spec, out_spec, n = lc.ins[0], lc.out, lc.attrs["group_size"]
    wide = spec.dtype in dt.HALF_FLOATS
    work = dt.float32 if wide else spec.dtype if spec.dtype.is_float else _bits_dtype(spec.dtype)
    if wide:
        x = _cast(x, spec, dt.float32)
    total = _allreduce_call(lc, x, spec.shape, work, "sum", (spec.dtype.name, spec.shape, n),
                            ("group", n))
    part_t = tensor_type(TensorSpec(out_spec.shape, work), storage=True)
    part = tensor.extract_slice(part_t, total,
                                *_slice_args(_rows_at_rank(lc, out_spec.shape[0]),
                                             out_spec.shape))
    return _cast(part, TensorSpec(out_spec.shape, dt.float32), spec.dtype) if wide else part


def _lower_comm_rank(lc):
    rank = _rank(lc)
    return tensor.from_elements(ir.RankedTensorType.get([], rank.type), [rank])


# ------------------------------------------------------------------ gradients

def _sum_over_ranks(g, v):
    return g.emit("ms.all_reduce", v, reduce_op="sum")


def _all_reduce_grad(g, d):
    op = g.attrs["reduce_op"]
    if op == "sum":
        return _sum_over_ranks(g, d)
    if op == "prod":  # d out / d x_r = out / x_r
        return g.div(_sum_over_ranks(g, g.mul(d, g.out)), g.x)
    hit = g.cast(g.emit("ms.equal", g.x, g.out), g.in_specs[0].dtype)
    return g.mul(_sum_over_ranks(g, d), hit)


def _broadcast_grad(g, d):
    """Every rank's result is the root's x: the root's x gets the sum of the cotangents."""
    rank = g.emit("ms.comm_rank")
    is_root = g.emit("ms.equal", rank, g.const(g.attrs["root"], rank))
    return g.select(is_root, _sum_over_ranks(g, d), g.zeros_like(d))


def _gather_grad(g, d):
    return g.emit("ms.reduce_scatter", d, reduce_op="sum", group_size=g.attrs["group_size"])


def _scatter_grad(g, d):
    return g.emit("ms.all_gather", d, group_size=g.attrs["group_size"])


# ------------------------------------------------------------------ the ops

define("ms.all_reduce", ["x"], _reduce_infer, attrs={"reduce_op": "string"},
       signature=(None,), dtypes=_COLLECTIVE_DTYPES, pure=False, lower=_lower_all_reduce,
       grad=each(_all_reduce_grad),
       doc="x combined elementwise over every process of the job (reduce_op: sum, max, min, "
           "prod); every process gets the result (MPI_Allreduce)")

define("ms.all_gather", ["x"], _gather_infer, attrs={"group_size": "int"}, signature=(None,),
       pure=False, lower=_lower_all_gather, grad=each(_gather_grad),
       doc="every process's x stacked along axis 0 in rank order; group_size is the number "
           "of processes")

define("ms.reduce_scatter", ["x"], _scatter_infer,
       attrs={"reduce_op": "string", "group_size": "int"}, signature=(None,),
       dtypes=_COLLECTIVE_DTYPES, pure=False, lower=_lower_reduce_scatter,
       grad=each(_scatter_grad),
       doc="the sum over the processes of x, split along axis 0 into group_size parts: "
           "process r gets part r")

define("ms.broadcast", ["x"], _broadcast_infer, attrs={"root": "int"}, signature=(None,),
       pure=False, lower=_lower_broadcast, grad=each(_broadcast_grad),
       doc="the x of process `root`, on every process (MPI_Bcast)")

define("ms.comm_rank", [], _rank_infer, lower=_lower_comm_rank, grad=no_grad,
       doc="this process's rank in the job (MPI_Comm_rank), an int32 scalar")
