"""harp.distributed: data-parallel training over MPI, with
torch.distributed's names.

Start the program with `mpirun -np N python3 train.py`; `init()` joins the
processes. Collectives are harp IR (the `mpi` dialect's ops, compiled by
harp's JIT, which loads the MPI library under mpirun). Without mpirun the
program is one process of a world of one: every collective returns its
input and no MPI library is needed.

    import harp, harp.distributed as dist
    dist.init()
    model = dist.DistributedDataParallel(harp.nn.Linear(4, 2))
    opt = harp.optim.SGD(model.parameters(), lr=0.1)
    loss = ...(model(x[dist.get_rank()::dist.get_world_size()]))
    loss.backward()        # gradients averaged over the processes
    opt.step()

See docs/Distributed.md.
"""

from . import _harp
from .nn.modules import Module as _Module

_d = _harp.distributed

__all__ = ["ReduceOp", "init", "init_process_group", "is_available",
           "is_initialized", "launched_by_mpi", "get_rank", "get_world_size",
           "rank", "world_size", "get_backend", "barrier", "all_reduce",
           "broadcast", "DistributedDataParallel"]


class ReduceOp:
    """Reductions of all_reduce (torch.distributed.ReduceOp's names); the
    strings 'sum', 'mean' ('avg'), 'max', 'min' and 'prod' work too."""
    SUM = "sum"
    AVG = "mean"
    MEAN = "mean"
    PRODUCT = "prod"
    MAX = "max"
    MIN = "min"


def init():
    """Joins the processes mpirun started (or, without mpirun, becomes a
    world of one). Idempotent."""
    _d.init()


def init_process_group(backend="mpi", **kwargs):
    """torch.distributed.init_process_group: backend 'mpi' only; the world
    comes from mpirun, so rank, world_size and init_method are checked
    against it when given."""
    if backend not in ("mpi", None):
        raise ValueError("init_process_group: harp's backend is 'mpi', got %r"
                         % (backend,))
    unknown = set(kwargs) - {"rank", "world_size", "init_method", "timeout"}
    if unknown:
        raise TypeError("init_process_group: unexpected arguments %s"
                        % ", ".join(sorted(unknown)))
    _d.init()
    for key, actual in (("rank", _d.rank()), ("world_size", _d.world_size())):
        given = kwargs.get(key)
        if given is not None and given != -1 and given != actual:
            raise ValueError("init_process_group: %s=%d, but mpirun started this "
                             "process as %s %d" % (key, given, key, actual))


def is_available():
    return True


def is_initialized():
    return _d.is_initialized()


def launched_by_mpi():
    """Whether mpirun (or another MPI launcher) started this process."""
    return _d.launched_by_mpi()


def get_rank():
    return _d.rank()


def get_world_size():
    return _d.world_size()


rank = get_rank
world_size = get_world_size


def get_backend():
    """'mpi' with the library's ABI ('mpi (OpenMPI)'), or 'none' for a
    world of one."""
    impl = _d.implementation()
    return "none" if impl == "none" else "mpi (%s)" % impl


def barrier():
    _d.barrier()


def _op_name(op):
    if not isinstance(op, str):
        raise TypeError("all_reduce: op must be a ReduceOp or a string, got %r"
                        % (op,))
    return op.lower()


def all_reduce(tensor, op=ReduceOp.SUM):
    """The element-wise reduction of `tensor` over every process. A leaf
    tensor is updated in place, as torch.distributed.all_reduce does; the
    result is returned too (for a computed tensor, use the result). Every
    process must pass the same dtype and shape, or all of them raise."""
    if not isinstance(tensor, _harp.Tensor):
        raise TypeError("all_reduce: expected a harp tensor, got %s"
                        % type(tensor).__name__)
    return _d.all_reduce(tensor, _op_name(op))


def broadcast(tensor, src=0):
    """`tensor` as process `src` holds it, on every process (in place for a
    leaf, and returned)."""
    if not isinstance(tensor, _harp.Tensor):
        raise TypeError("broadcast: expected a harp tensor, got %s"
                        % type(tensor).__name__)
    return _d.broadcast(tensor, int(src))


def _assign(module, path, value):
    *parents, name = path.split(".")
    for part in parents:
        module = getattr(module, part)
    setattr(module, name, value)


class DistributedDataParallel(_Module):
    """torch.nn.parallel.DistributedDataParallel: gives `module` rank 0's
    parameters and buffers, and averages the gradients over the processes
    at the end of every backward() that reaches them, packed by dtype into
    buckets of at most `bucket_cap_mb` MiB (one all-reduce each). Each
    process feeds its own part of the batch; with equal parts the result is
    the gradient of the whole batch's mean loss."""

    def __init__(self, module, bucket_cap_mb=25, broadcast_buffers=True):
        super().__init__()
        if not isinstance(module, _Module):
            raise TypeError("DistributedDataParallel: expected a harp.nn.Module, "
                            "got %s" % type(module).__name__)
        if not bucket_cap_mb > 0:
            raise ValueError("DistributedDataParallel: bucket_cap_mb must be "
                             "positive, got %r" % (bucket_cap_mb,))
        _d.init()
        self.module = module
        object.__setattr__(self, "broadcast_buffers", bool(broadcast_buffers))
        params = list(module.parameters())
        _d.broadcast_leaves(params, 0)
        self._broadcast_buffers()
        object.__setattr__(self, "_sync", _d.GradientSync(
            params, max(1, int(bucket_cap_mb * (1 << 20)))))

    def _broadcast_buffers(self):
        for name, buf in list(self.module.named_buffers()):
            value = _d.broadcast(buf, 0)
            if value is not buf:
                _assign(self.module, name, value)

    def forward(self, *args, **kwargs):
        if self.broadcast_buffers and _d.world_size() > 1:
            self._broadcast_buffers()
        return self.module(*args, **kwargs)

    @property
    def last_message_count(self):
        """How many all-reduce messages the last gradient averaging sent."""
        return self._sync.last_message_count
