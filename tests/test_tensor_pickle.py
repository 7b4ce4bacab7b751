"""Pickling and copying tensors (torch's rules): values, dtype, device, grad requirement and
`.grad` survive; a non-leaf that requires grad is refused; state dicts and modules copy."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import lazyt
from lazyt.errors import GradError


def roundtrip(t):
    return pickle.loads(pickle.dumps(t))


@pytest.mark.parametrize("how", [roundtrip, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_values_dtype_device_and_grad_survive(device, how):
    for values, dtype in (([1.5, -2.0], lazyt.float32), ([1, 2, 3], lazyt.int32),
                          ([True, False], lazyt.bool), (3.25, lazyt.float32)):
        t = lazyt.tensor(values, dtype=dtype, device=device)
        u = how(t)
        assert u is not t and u.dtype is t.dtype and u.device == t.device
        np.testing.assert_array_equal(u.numpy(), t.numpy())
    x = lazyt.tensor([1.0, 2.0], device=device).requires_grad_()
    (x * 3).sum().backward()
    y = how(x)
    assert y.requires_grad and y.is_leaf
    np.testing.assert_array_equal(y.grad.numpy(), [3.0, 3.0])
    (y * y).sum().backward()                          # the copy is a leaf of its own
    np.testing.assert_array_equal(y.grad.numpy(), [5.0, 7.0])
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("how", [roundtrip, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_non_leaf_that_requires_grad_is_refused(how):
    x = lazyt.tensor([1.0], requires_grad=True)
    with pytest.raises(GradError, match="graph leaves"):
        how(x * 2)
    np.testing.assert_array_equal(how((x * 2).detach()).numpy(), [2.0])


def test_state_dicts_and_modules_copy():
    m = lazyt.nn.Linear(3, 2)
    sd = copy.deepcopy(m.state_dict())
    with lazyt.no_grad():
        m.weight.mul_(0)
    assert np.abs(sd["weight"].numpy()).sum() > 0      # the copy kept the old values
    m.load_state_dict(sd)
    np.testing.assert_array_equal(m.weight.numpy(), sd["weight"].numpy())
    m2 = copy.deepcopy(m)
    assert type(m2.weight) is type(m.weight) and m2.weight is not m.weight
    shared = lazyt.tensor([1.0])
    a, b = copy.deepcopy([shared, shared])             # the memo keeps one copy
    assert a is b
    state = pickle.loads(pickle.dumps({"w": m.weight.detach(), "step": 3}))
    np.testing.assert_array_equal(state["w"].numpy(), m.weight.numpy())


def test_load_state_dict_assign_keeps_the_values_dtype():
    m = lazyt.nn.Linear(2, 3)
    sd = {k: v.to(lazyt.float64) for k, v in m.state_dict().items()}
    lazyt.nn.Linear(2, 3).load_state_dict(sd)                    # cast to the model's
    m.load_state_dict(sd, assign=True)
    assert m.weight.dtype is lazyt.float64 and m.weight.requires_grad and m.weight.is_leaf
    np.testing.assert_array_equal(m.weight.numpy(), sd["weight"].numpy())
