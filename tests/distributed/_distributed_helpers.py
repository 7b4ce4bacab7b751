"""Helpers of the distributed tests: run a script on N MPI ranks in a subprocess with a hard
timeout (a hung job fails the test instead of hanging pytest). A module of its own rather
than a conftest.py, whose name other test folders already import."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _mpi_ready() -> str | None:
    from lazyt import distributed
    from lazyt.distributed import launch
    if not distributed.is_mpi_available():
        return "mpi4py is not installed (pip install -e '.[distributed]')"
    try:
        launch.mpiexec()
    except Exception as e:  # noqa: BLE001
        return f"no mpiexec: {e}"
    return None


MPI_MISSING = _mpi_ready()
needs_mpi = pytest.mark.skipif(MPI_MISSING is not None, reason=MPI_MISSING or "")


def run_ranks(n: int | None, script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`script args` on `n` ranks (`n=None`: plain python, a world of one); the output of every
    rank, stdout and stderr together."""
    from lazyt.distributed import launch
    path = str(script if os.path.isabs(script) else HERE / script)
    argv = [path, *args]
    cmd = [sys.executable, *argv] if n is None else launch.command(n, argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT),
                          env=env, stdin=subprocess.DEVNULL)


def output(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout + proc.stderr
