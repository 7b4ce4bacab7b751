"""lazyt.save / lazyt.load (lazyt/serialization.py): round trips, safe loading, map_location."""
import collections
import io
import pickle

import numpy as np
import pytest

import lazyt
from lazyt import nn


def _round_trip(obj, **kw):
    buf = io.BytesIO()
    lazyt.save(obj, buf)
    buf.seek(0)
    return lazyt.load(buf, **kw)


def test_state_dict_round_trip_through_a_path(tmp_path):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    path = tmp_path / "model.lzt"
    lazyt.save(model.state_dict(), path)
    fresh = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    fresh.load_state_dict(lazyt.load(path))
    x = lazyt.randn(5, 4)
    np.testing.assert_array_equal(fresh(x).numpy(), model(x).numpy())
    lazyt.save(model.state_dict(), str(path))
    assert set(lazyt.load(str(path))) == set(model.state_dict())


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint8", "int16",
                                   "int32", "int64", "bool"])
def test_every_dtype_and_nested_containers(dtype):
    t = lazyt.tensor(np.arange(6).reshape(2, 3) % 2).to(getattr(lazyt, dtype))
    obj = {"t": t, "list": [t, 3, "x"], "tuple": (1.5, None, b"raw"),
           "od": collections.OrderedDict(a=t), "set": {1, 2}, "arr": np.arange(3)}
    out = _round_trip(obj)
    assert out["t"].dtype is t.dtype and out["t"].shape == (2, 3)
    np.testing.assert_array_equal(out["t"].numpy(), t.numpy())
    assert isinstance(out["od"], collections.OrderedDict) and out["set"] == {1, 2}
    assert out["list"][1:] == [3, "x"] and out["tuple"] == (1.5, None, b"raw")
    np.testing.assert_array_equal(out["arr"], np.arange(3))


def test_grad_requirement_and_grad_travel():
    w = lazyt.ones(3).require_grad()
    (w * 2).sum().backward()
    for kw in ({}, {"map_location": "cpu"}):
        out = _round_trip(w, **kw)
        assert out.requires_grad
        np.testing.assert_array_equal(out.grad.numpy(), [2, 2, 2])


def test_optimizer_state_round_trip():
    model = nn.Linear(2, 1)
    opt = lazyt.optim.Adam(model.parameters(), lr=0.1)
    model(lazyt.ones(4, 2)).sum().backward()
    opt.step()
    state = _round_trip(opt.state_dict())
    opt2 = lazyt.optim.Adam(model.parameters(), lr=0.1)
    opt2.load_state_dict(state)
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]


class _Code:
    def __reduce__(self):
        return (print, ("ran",))


def test_weights_only_refuses_other_globals():
    buf = io.BytesIO()
    lazyt.save({"w": lazyt.ones(2), "evil": _Code()}, buf)
    buf.seek(0)
    with pytest.raises(lazyt.UnsafeLoadError, match="builtins.print"):
        lazyt.load(buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        lazyt.load(buf)
    buf.seek(0)
    assert lazyt.load(buf, weights_only=False)["evil"] is None     # print() returned None


def test_map_location_forms():
    obj = {"a": lazyt.ones(2), "b": [lazyt.zeros(1)]}
    cpu = lazyt.device("cpu")
    seen = []

    def mover(t, location):
        seen.append(location)
        return t * 10

    for loc in ("cpu", cpu, {"cpu": "cpu"}):
        out = _round_trip(obj, map_location=loc)
        assert out["a"].device.type == "cpu"
    out = _round_trip(obj, map_location=mover)
    assert seen == ["cpu", "cpu"]
    np.testing.assert_array_equal(out["a"].numpy(), [10, 10])
    with pytest.raises(lazyt.InvalidArgumentError, match="map_location"):
        _round_trip(obj, map_location=lambda t, loc: 3)


def test_bad_files_and_arguments():
    with pytest.raises(lazyt.InvalidArgumentError, match="not written by lazyt.save"):
        lazyt.load(io.BytesIO(b"not a lazyt file at all"))
    with pytest.raises(lazyt.InvalidArgumentError, match="torch"):
        lazyt.load(io.BytesIO(b"PK\x03\x04" + b"\x00" * 20))
    with pytest.raises(lazyt.InvalidArgumentError):
        lazyt.save(lazyt.ones(1), 3)
    with pytest.raises(lazyt.InvalidArgumentError):
        lazyt.load(3)
    assert _round_trip(lazyt.ones(1)).item() == 1.0                # still usable


def test_non_leaf_requiring_grad_is_refused():
    w = lazyt.ones(2).require_grad()
    with pytest.raises(lazyt.GradError):
        lazyt.save(w * 2, io.BytesIO())
