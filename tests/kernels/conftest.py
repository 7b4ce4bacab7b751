"""Fixtures of the kernel hub tests: the local kernel repos and a saved tiny Llama checkpoint."""
from pathlib import Path

import pytest

import lazyt

REPOS = Path(__file__).parent / "repos"


@pytest.fixture
def kernel_paths():
    """The root holding the test repos `local/llama-kernels` and `local/broken-kernels`."""
    return [REPOS]


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    """A saved tiny Llama (the checkpoint the kernel tests load three ways)."""
    from tiny_llama import LlamaForCausalLM
    lazyt.manual_seed(1234)
    model = LlamaForCausalLM()
    # non-trivial norm weights, so a kernel that ignored them would be caught
    for name, p in model.named_parameters():
        if "norm" in name:
            p.assign(lazyt.rand(p.shape) + 0.5)
    path = tmp_path_factory.mktemp("llama")
    model.save_pretrained(path)
    return path
