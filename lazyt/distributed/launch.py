"""`python -m lazyt.distributed.launch -n N script.py [args...]`: run a script on N MPI ranks.

It runs MPICH's `mpiexec` (the one the `mpich` wheel installed beside this Python, else the
first on PATH) with this Python. With MPICH's launcher (hydra) it adds `-disable-auto-cleanup`:
by default hydra kills every rank, silently and with exit status 0, when one rank exits
without finalizing MPI; with the flag the surviving ranks see the failure themselves and raise
`DistributedError` within their timeout, then abort the job with a non-zero status.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from functools import lru_cache

from ..errors import DistributedError


@lru_cache(maxsize=1)
def mpiexec() -> str:
    """The path of `mpiexec`: beside this Python (the mpich wheel), else on PATH."""
    local = os.path.join(sysconfig.get_path("scripts"), "mpiexec")
    if os.path.exists(local):
        return local
    found = shutil.which("mpiexec")
    if found is None:
        raise DistributedError("launch: mpiexec was not found; "
                               'pip install -e ".[distributed]" installs MPICH\'s (the mpich wheel)')
    return found


@lru_cache(maxsize=1)
def _is_hydra(path: str) -> bool:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "HYDRA" in out.stdout.upper()


def command(n: int, argv: list[str], python: str | None = None) -> list[str]:
    """The command line that runs `python argv...` on `n` ranks."""
    exe = mpiexec()
    flags = ["-disable-auto-cleanup"] if _is_hydra(exe) else []
    return [exe, *flags, "-n", str(int(n)), python or sys.executable, *argv]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lazyt.distributed.launch",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--nproc", type=int, default=2, help="number of ranks")
    parser.add_argument("script", help="the Python script to run on every rank")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    a = parser.parse_args(argv)
    return subprocess.call(command(a.nproc, [a.script, *a.args]))


if __name__ == "__main__":
    sys.exit(main())
