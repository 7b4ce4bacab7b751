"""The README's examples run as written: every ```python block, in order, in one namespace
(later blocks use names earlier ones made), in a scratch directory, on the default device. And
the README speaks of the project only: no paths outside it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 5


def test_every_python_block_runs_as_written(tmp_path, monkeypatch, capsys):
    pytest.importorskip("graphviz", reason="the drawing example needs the graphviz package "
                                           "(the test extra installs it)")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LAZYT_DEVICE", raising=False)
    namespace: dict = {"__name__": "readme"}
    for i, block in enumerate(BLOCKS):
        try:
            exec(compile(block, f"README.md python block {i}", "exec"), namespace)
        except Exception as e:  # name the block: the traceback alone shows only a line
            raise AssertionError(f"README python block {i} failed: {type(e).__name__}: {e}\n"
                                 f"{block}") from e
    out = capsys.readouterr().out
    assert "tensor(" in out                        # the first example prints a tensor
    assert (tmp_path / "pending.dot").exists()     # the drawing example wrote its file


def test_readme_points_only_inside_the_project():
    text = README.read_text(encoding="utf-8")
    assert "DESIGN.md" not in text and "../" not in text
    root = README.parent
    for link in re.findall(r"\]\(([^)#]+)\)", text):
        if "://" not in link:
            assert (root / link).exists(), link
    for path in re.findall(r"`((?:examples|benchmarks|lazyt|docs|tests)/[\w./-]+)`", text):
        if not any(c in path for c in "*<>"):
            assert (root / path).exists(), path
