"""save_pretrained / from_pretrained: safetensors weights plus config.json."""
import json

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

import lazyt
from lazyt import nn


class TinyNet(nn.Module):
    def __init__(self, vocab: int = 10, width: int = 4, act: str = "gelu", dtype=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, width, dtype=dtype)
        self.proj = nn.Linear(width, width, dtype=dtype)
        self.norm = nn.LayerNorm(width, dtype=dtype)
        self.act = nn.GELU() if act == "gelu" else nn.SiLU()

    def forward(self, ids):
        return self.norm(self.act(self.proj(self.embed(ids))))


def test_round_trip(tmp_path):
    lazyt.manual_seed(3)
    net = TinyNet(vocab=12, act="silu")
    net.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config == {"vocab": 12, "width": 4, "act": "silu", "dtype": None}
    arrays = load_file(str(tmp_path / "model.safetensors"))
    assert sorted(arrays) == sorted(net.state_dict())
    np.testing.assert_array_equal(arrays["proj.weight"], net.proj.weight.numpy())
    with safe_open(str(tmp_path / "model.safetensors"), "np") as f:
        assert f.metadata() == {"format": "pt"}

    dev = lazyt.device("cpu", fusion=False)
    loaded = TinyNet.from_pretrained(tmp_path, device=dev)
    assert isinstance(loaded.act, nn.SiLU) and not loaded.training
    assert loaded.proj.weight.device == dev
    ids = lazyt.tensor([[1, 2, 11]])
    np.testing.assert_array_equal(loaded(ids.to(dev)).numpy(), net(ids).numpy())


def test_dtype_argument_is_written_by_name(tmp_path):
    net = TinyNet(dtype=lazyt.float16)
    net.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["dtype"] == "float16"
    loaded = TinyNet.from_pretrained(tmp_path)
    assert loaded.proj.weight.dtype == lazyt.float16
    np.testing.assert_array_equal(loaded.proj.weight.numpy(), net.proj.weight.numpy())
    wide = TinyNet.from_pretrained(tmp_path, dtype=lazyt.float32)
    assert wide.proj.weight.dtype == lazyt.float32
    np.testing.assert_array_equal(wide.proj.weight.numpy(), net.proj.weight.numpy())


def test_checkpoint_problems_are_clear(tmp_path):
    with pytest.raises(nn.CheckpointError, match="no config.json"):
        TinyNet.from_pretrained(tmp_path)
    TinyNet().save_pretrained(tmp_path)
    arrays = load_file(str(tmp_path / "model.safetensors"))
    del arrays["norm.bias"]
    arrays["proj.weight"] = np.zeros((4, 5), np.float32)
    save_file(arrays, str(tmp_path / "model.safetensors"))
    with pytest.raises(nn.StateDictError, match=r"missing keys \(1\): norm.bias(.|\n)*"
                                                r"mis-shaped: proj.weight"):
        TinyNet.from_pretrained(tmp_path)

    class Odd(nn.Module):
        def __init__(self, fn=len):
            super().__init__()

    with pytest.raises(nn.CheckpointError, match="'fn'"):
        Odd().save_pretrained(tmp_path / "odd")
    with pytest.raises(lazyt.LazytError, match="kernel_config"):
        TinyNet.from_pretrained(tmp_path, use_kernels=True)
