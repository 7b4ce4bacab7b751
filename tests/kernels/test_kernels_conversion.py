"""Conversion rules: forward on checkpoint keys, and back (exactly) for save_pretrained."""
import numpy as np
import pytest

import lazyt
from lazyt.kernels import (Chunk, Concatenate, ConversionError, MergeModulelist, Transpose,
                           WeightConverter, WeightRenaming, convert_state, revert_state)


def _state(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return {k: lazyt.tensor(rng.standard_normal(s).astype(np.float32)) for k, s in shapes.items()}


def _round_trip(rules, state):
    converted = convert_state(rules, state)
    back = revert_state(rules, converted, {k: v.shape for k, v in state.items()})
    assert sorted(back) == sorted(state)
    for k in state:
        np.testing.assert_array_equal(back[k].numpy(), state[k].numpy())
    return converted


def test_renaming_with_wildcards_and_pass_through():
    state = _state({"layers.0.norm.weight": (3,), "layers.1.norm.weight": (3,), "bias": (2,)})
    rules = [WeightRenaming("layers.*.norm.weight", "blocks.*.ln.gain")]
    out = _round_trip(rules, state)
    assert sorted(out) == ["bias", "blocks.0.ln.gain", "blocks.1.ln.gain"]
    assert out["blocks.1.ln.gain"] is state["layers.1.norm.weight"]


def test_concatenate_unequal_pieces_per_instance():
    """A QKV projection with fewer key/value heads: pieces of different sizes split back."""
    shapes = {}
    for i in range(2):
        shapes.update({f"layers.{i}.q.weight": (8, 4), f"layers.{i}.k.weight": (2, 4),
                       f"layers.{i}.v.weight": (2, 4)})
    state = _state(shapes)
    rules = [WeightConverter(["layers.*.q.weight", "layers.*.k.weight", "layers.*.v.weight"],
                             "layers.*.qkv.weight", operations=[Concatenate(dim=0)])]
    out = _round_trip(rules, state)
    assert sorted(out) == ["layers.0.qkv.weight", "layers.1.qkv.weight"]
    np.testing.assert_array_equal(out["layers.1.qkv.weight"].numpy(), np.concatenate(
        [state[f"layers.1.{n}.weight"].numpy() for n in "qkv"]))


def test_chunk_and_transpose():
    state = _state({"w": (6, 4)})
    rules = [WeightConverter("w", ["a", "b"], operations=[Transpose(0, 1), Chunk(dim=1)])]
    out = _round_trip(rules, state)
    w = state["w"].numpy()
    np.testing.assert_array_equal(out["a"].numpy(), w.T[:, :3])
    np.testing.assert_array_equal(out["b"].numpy(), w.T[:, 3:])


def test_merge_module_list_sorts_indices_numerically():
    n = 11
    shapes = {f"experts.{e}.{p}.weight": (3, 2) for e in range(n) for p in ("gate", "up")}
    state = _state(shapes)
    rules = [WeightConverter(["experts.*.gate.weight", "experts.*.up.weight"],
                             "experts.gate_up", operations=[MergeModulelist(dim=0),
                                                            Concatenate(dim=1)])]
    out = _round_trip(rules, state)
    merged = out["experts.gate_up"].numpy()
    assert merged.shape == (n, 6, 2)
    np.testing.assert_array_equal(merged[10, 3:], state["experts.10.up.weight"].numpy())
    np.testing.assert_array_equal(merged[2, :3], state["experts.2.gate.weight"].numpy())


def test_rule_errors_name_the_problem():
    with pytest.raises(ConversionError, match="different numbers of"):
        WeightRenaming("a.*", "b")
    with pytest.raises(ConversionError, match="2 source patterns but 1"):
        WeightRenaming(["a", "b"], ["c"])
    with pytest.raises(ConversionError, match="ConversionOps"):
        WeightConverter(["a"], "b", operations=[lambda t: t])
    rule = WeightConverter(["x.*.a", "x.*.b"], "x.*.ab", operations=[Concatenate(0)])
    with pytest.raises(ConversionError, match=r"no source key matches \['x.\*.b'\] "
                                              r"\(instance 1\)"):
        convert_state([rule], _state({"x.1.a": (2,)}))
    with pytest.raises(ConversionError, match="3 equal pieces"):
        convert_state([WeightConverter("w", ["a", "b", "c"], operations=[Chunk(0)])],
                      _state({"w": (4,)}))
    with pytest.raises(ConversionError, match="do not fit together"):
        convert_state([WeightConverter(["a", "b"], "ab", operations=[Concatenate(0)])],
                      _state({"a": (2, 3), "b": (2, 4)}))
