"""The Autodiff layer's named helpers: an untracked call goes straight to the inner backend,
a tracked one through this layer's primitives (with gradients), keywords work either way."""
from __future__ import annotations

import inspect

import numpy as np

import lazyt
from lazyt.autodiff.backend import Autodiff
from lazyt.backends.base import Backend


def test_helpers_keep_the_protocol_signatures():
    for name in ("softmax", "layer_norm", "attention", "linear", "gelu", "var"):
        assert (list(inspect.signature(getattr(Autodiff, name)).parameters)
                == list(inspect.signature(getattr(Backend, name)).parameters))
        assert getattr(Autodiff, name).__doc__ == getattr(Backend, name).__doc__


def test_untracked_tracked_and_keyword_calls():
    dev = lazyt.device("cpu")
    ad = dev.backend
    assert isinstance(ad, Autodiff)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    plain = lazyt.tensor(x, device=dev)
    tracked = lazyt.tensor(x, device=dev).require_grad()
    for t in (plain, tracked):
        for call in (lambda p: ad.layer_norm(p, 1, 1e-5),
                     lambda p: ad.layer_norm(p, n_dims=1, eps=1e-5, weight=None),
                     lambda p: ad.layer_norm(p, 1, 1e-5, None, None)):
            out = lazyt.Tensor(call(t.primitive), dev)
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
            assert out.is_tracked == t.is_tracked
    out = lazyt.Tensor(ad.layer_norm(tracked.primitive, 1, 1e-5), dev)
    grads = (out * out).sum().backward()
    assert grads.get(tracked).shape == (3, 4)
    with lazyt.no_grad():  # tracked inputs count as plain values: the inner helper runs
        out = lazyt.Tensor(ad.layer_norm(tracked.primitive, 1, 1e-5), dev)
    assert not out.is_tracked
