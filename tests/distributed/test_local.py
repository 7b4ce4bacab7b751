"""`lazyt.distributed` in this process: a world of one over MPI (MPICH runs a process started
without mpiexec as a singleton), DistributedDataParallel on it, and the API's errors."""
import sys

import numpy as np
import pytest

import lazyt
import lazyt.distributed as dist
from lazyt import nn
from lazyt.errors import DistributedError, InvalidArgumentError, ShapeError

from _distributed_helpers import MPI_MISSING


def test_import_lazyt_does_not_import_mpi4py():
    import subprocess
    code = "import lazyt, lazyt.nn.parallel, lazyt.distributed, sys; print('mpi4py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_errors_without_a_group():
    assert not dist.is_initialized()
    with pytest.raises(DistributedError, match="init_process_group"):
        dist.all_reduce(lazyt.ones(2))
    with pytest.raises(DistributedError, match="get_rank"):
        dist.get_rank()
    with pytest.raises(InvalidArgumentError, match="unknown backend"):
        dist.init_process_group("gloo")
    from lazyt.nn.parallel import DistributedDataParallel
    with pytest.raises(DistributedError):
        DistributedDataParallel(nn.Linear(2, 2))


@pytest.fixture
def group():
    if MPI_MISSING:
        pytest.skip(MPI_MISSING)
    g = dist.init_process_group("mpi", timeout=30)
    yield g
    dist.destroy_process_group()


def test_world_of_one(group):
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "mpi")
    with pytest.raises(DistributedError, match="already initialized"):
        dist.init_process_group("mpi")
    t = lazyt.tensor([1.0, 2.0])
    assert dist.all_reduce(t, op=dist.ReduceOp.AVG) is t
    np.testing.assert_allclose(t.numpy(), [1, 2])
    with pytest.raises(InvalidArgumentError, match="unknown reduce op"):
        dist.all_reduce(t, op="median")
    with pytest.raises(InvalidArgumentError, match="src=3"):
        dist.broadcast(t, src=3)
    with pytest.raises(InvalidArgumentError, match="world_size=1"):
        dist.all_gather([t, t], t)
    with pytest.raises(ShapeError, match="output_tensor has shape"):
        dist.all_gather_into_tensor(lazyt.zeros(5), t)
    with pytest.raises(lazyt.DTypeError, match="AVG"):
        dist.all_reduce(lazyt.tensor([1, 2]), op=dist.ReduceOp.AVG)
    with pytest.raises(InvalidArgumentError, match="lazyt tensor"):
        dist.all_reduce(np.ones(2))


def test_ddp_world_of_one_gives_the_plain_gradients(group, tmp_path):
    from lazyt.nn.parallel import DistributedDataParallel
    lazyt.manual_seed(0)
    model = nn.Linear(4, 3)
    ref = nn.Linear(4, 3)
    ref.load_state_dict(model.state_dict())
    ddp = DistributedDataParallel(model, bucket_cap_mb=1e-5)
    assert ddp.bucket_sizes == [3, 12]          # reverse order, one parameter per bucket
    x, y = lazyt.randn(5, 4), lazyt.randn(5, 3)
    grads = ((ddp(x) - y) ** 2).mean().backward()
    want = ((ref(x) - y) ** 2).mean().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), want[q].numpy(), rtol=1e-6)
        assert grads[p].primitive is p.grad.primitive   # the same averaged tensor
    with ddp.no_sync():                          # accumulates locally
        ((ddp(x) - y) ** 2).mean().backward()
    np.testing.assert_allclose(model.weight.grad.numpy(), 2 * want[ref.weight].numpy(),
                               rtol=1e-5)
    ddp.save_pretrained(tmp_path / "ckpt")
    assert (tmp_path / "ckpt" / "model.safetensors").exists()
    with pytest.raises(InvalidArgumentError, match="bucket_cap_mb"):
        DistributedDataParallel(model, bucket_cap_mb=0)
