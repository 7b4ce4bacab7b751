"""The gradient-ready hook DistributedDataParallel builds on (`lazyt/autodiff/hooks.py`,
`Tensor.register_post_accumulate_grad_hook`): hooks run during backward, as soon as a leaf's
gradient is final, after it was added into `.grad`."""
import numpy as np
import pytest

import lazyt
from lazyt.autodiff import hooks
from lazyt.errors import GradError


def test_hook_sees_the_accumulated_grad_before_backward_ends():
    a = lazyt.randn(3, requires_grad=True)
    b = lazyt.randn(3, requires_grad=True)
    events = []
    a.register_post_accumulate_grad_hook(lambda t: events.append(("a", t.grad.numpy().copy())))
    b.register_post_accumulate_grad_hook(lambda t: events.append(("b", t.grad.numpy().copy())))
    y = ((b.exp() * 3).sin()).sum()
    x = (a * 2).sum()            # recorded last, differentiated first: a is final before b
    grads = (y + x).backward()
    assert [e[0] for e in events] == ["a", "b"]
    np.testing.assert_allclose(events[0][1], [2, 2, 2])
    np.testing.assert_allclose(a.grad.numpy(), [2, 2, 2])
    np.testing.assert_allclose(grads[a].numpy(), [2, 2, 2])
    (a * 2).sum().backward()     # accumulates, hook again, .grad added once per pass
    np.testing.assert_allclose(a.grad.numpy(), [4, 4, 4])
    np.testing.assert_allclose(events[-1][1], [4, 4, 4])


def test_hooks_run_before_the_rest_of_backward():
    a = lazyt.randn(4, requires_grad=True)
    order = []
    a.register_post_accumulate_grad_hook(lambda t: order.append("hook"))

    def callback():
        order.append("end")
    a.register_post_accumulate_grad_hook(lambda t: hooks.queue_callback(callback))
    (a.relu() * a).sum().backward()
    assert order == ["hook", "end"]


def test_remove_and_leaf_only():
    a = lazyt.randn(2, requires_grad=True)
    calls = []
    handle = a.register_post_accumulate_grad_hook(calls.append)
    handle.remove()
    a.sum().backward()
    assert calls == []
    with pytest.raises(GradError, match="only a leaf"):
        (a * 2).register_post_accumulate_grad_hook(calls.append)
    with pytest.raises(GradError, match="no backward pass"):
        hooks.queue_callback(lambda: None)


def test_hook_survives_optimizer_steps_and_compile():
    model = lazyt.nn.Linear(3, 2)
    opt = lazyt.optim.SGD(model.parameters(), lr=0.1)
    seen = []
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda t: seen.append(t.shape))

    @lazyt.compile
    def step(x):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss
    x = lazyt.randn(4, 3)
    for _ in range(4):
        step(x)
    assert len(seen) >= 4        # recorded calls ran the hooks (replays repeat their effects)
    assert step.cache_info().hits >= 1
