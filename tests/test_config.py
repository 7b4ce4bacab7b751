"""`lazyt.config`: every LAZYT_* switch is declared once, read at use, and documented."""
import os
import re
from pathlib import Path

import pytest

import lazyt
from lazyt import config

ROOT = Path(__file__).resolve().parents[1]


def test_every_switch_in_the_package_is_declared():
    used = set()
    for path in (ROOT / "lazyt").rglob("*.py"):
        used |= set(re.findall(r"\bLAZYT_[A-Z0-9_]+", path.read_text()))
    declared = {s.name for s in config.SWITCHES}
    assert used <= declared, f"undeclared switches: {sorted(used - declared)}"


def test_environment_is_read_only_by_config():
    offenders = []
    for path in (ROOT / "lazyt").rglob("*.py"):
        if path.name == "config.py":
            continue
        text = path.read_text()
        if re.search(r"os\.environ\.get\(\s*[\"']LAZYT_|getenv\(\s*[\"']LAZYT_", text):
            offenders.append(path.name)
    assert offenders == []


def test_readme_lists_every_switch():
    readme = (ROOT / "README.md").read_text()
    for s in config.SWITCHES:
        assert f"`{s.name}`" in readme, s.name


def test_read_at_use(monkeypatch):
    monkeypatch.setenv("LAZYT_DEBUG", "2")
    assert config.debug_level() == 2
    monkeypatch.setenv("LAZYT_DEBUG", "0")
    assert config.debug_level() == 0
    monkeypatch.setenv("LAZYT_NUM_THREADS", "3")
    assert config.num_threads() == 3
    monkeypatch.delenv("LAZYT_NUM_THREADS")
    assert 1 <= config.num_threads() <= 8
    monkeypatch.setenv("LAZYT_WGPU_POOL_MB", "16")
    assert config.wgpu_pool_bytes() == 16 << 20


def test_every_way_of_setting_the_environment_is_seen_at_the_next_read(monkeypatch):
    """The readers look the switch up in os.environ's own table: assignments, deletions,
    `update` and values with surrounding blanks all show at the next read, and a name that
    is no switch is refused."""
    monkeypatch.delenv("LAZYT_COMPILE", raising=False)
    assert config.compile_enabled()
    os.environ["LAZYT_COMPILE"] = "0"
    try:
        assert not config.compile_enabled()
        os.environ.update({"LAZYT_COMPILE": " on "})
        assert config.compile_enabled()
        os.environ["LAZYT_COMPILE"] = "  "          # blank: the default
        assert config.compile_enabled()
        os.environ["LAZYT_COMPILE"] = "maybe"
        with pytest.raises(config.ConfigError, match="LAZYT_COMPILE='maybe'"):
            config.compile_enabled()
    finally:
        del os.environ["LAZYT_COMPILE"]
    assert config.compile_enabled()
    with pytest.raises(KeyError, match="LAZYT_NOT_A_SWITCH is not a lazyt switch"):
        config._raw("LAZYT_NOT_A_SWITCH")


def test_default_device_follows_the_variable(monkeypatch):
    monkeypatch.setenv("LAZYT_DEVICE", "cpu")
    assert lazyt.get_default_device() == lazyt.device("cpu")
    monkeypatch.setenv("LAZYT_DEVICE", "nonsense")
    with pytest.raises(lazyt.DeviceError, match="nonsense"):
        lazyt.zeros(2)
    monkeypatch.setenv("LAZYT_DEVICE", "cpu")
    assert lazyt.zeros(2).device == lazyt.device("cpu")  # still usable


@pytest.mark.parametrize("name,value", [("LAZYT_DEBUG", "loud"), ("LAZYT_NUM_THREADS", "0"),
                                        ("LAZYT_CHECK_META", "maybe")])
def test_bad_values_name_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    reader = {"LAZYT_DEBUG": config.debug_level, "LAZYT_NUM_THREADS": config.num_threads,
              "LAZYT_CHECK_META": config.check_meta}[name]
    with pytest.raises(config.ConfigError, match=name):
        reader()
    assert isinstance(config.ConfigError(""), lazyt.LazytError)


def test_thread_pool_follows_num_threads(monkeypatch):
    from lazyt.backends.numpy import pool as numpy_pool
    monkeypatch.setenv("LAZYT_NUM_THREADS", "3")
    assert numpy_pool._get_pool()._max_workers == 2
    monkeypatch.setenv("LAZYT_NUM_THREADS", "1")
    assert numpy_pool._get_pool() is None
    x = lazyt.arange(1 << 19, dtype=lazyt.float32)
    assert float((x * 2 + 1).sum().item()) == pytest.approx(float((1 << 19) ** 2), rel=1e-5)


def test_num_threads_also_sizes_blas(monkeypatch):
    """One thread budget: `LAZYT_NUM_THREADS` sizes BLAS's pool too (through threadpoolctl)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from lazyt.backends.numpy import pool as numpy_pool

    def blas_threads():
        return {i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"}

    monkeypatch.setenv("LAZYT_NUM_THREADS", "1")
    numpy_pool._get_pool()
    assert blas_threads() == {1}
    monkeypatch.setenv("LAZYT_NUM_THREADS", "2")
    numpy_pool._get_pool()
    assert blas_threads() == {2}
    monkeypatch.delenv("LAZYT_NUM_THREADS")
    numpy_pool._get_pool()
    assert blas_threads() == {lazyt.config.max_threads()}
