"""`python -m lazyt info`: the version, the backends importable here and their devices."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import platform
import subprocess
import sys
from pathlib import Path

import numpy

import lazyt
from lazyt.device import install_hint


def _info() -> int:
    print(f"lazyt {lazyt.__version__} (python {platform.python_version()}, "
          f"numpy {numpy.__version__})")
    print("backends:")
    print(f"  cpu   numpy {numpy.__version__}: devices: cpu")
    if importlib.util.find_spec("numba") is None:
        print('        numba not installed: fused blocks run as numpy programs '
              '(pip install -e ".[cpu]" compiles them)')
    else:
        from importlib.metadata import version
        from lazyt import config
        state = ("on" if config.numba_enabled() else "off (LAZYT_NUMBA=0)")
        print(f"        numba {version('numba')}: compiled kernels {state}, from "
              f"{config.numba_min()} elements, {config.max_threads()} threads")
    for base, module in (("wgpu", "wgpu"), ("cuda", "pycuda")):
        if importlib.util.find_spec(module) is None:
            print(f"  {base:<5} not installed ({install_hint(base)})")
            continue
        if importlib.util.find_spec(f"lazyt.backends.{base}") is None:
            print(f"  {base:<5} package '{module}' found; backend not in this build")
            continue
        try:
            mod = importlib.import_module(f"lazyt.backends.{base}")
            devices = mod.list_devices()
        except Exception as e:  # report, do not crash: info is a diagnostic
            print(f"  {base:<5} unavailable: {e}")
            continue
        if not devices:
            print(f"  {base:<5} no devices found")
        for line in devices:
            print(f"  {base:<5} {line}")
    print(f"default device: {lazyt.get_default_device()}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lazyt", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="version, backends and devices")
    sub.add_parser("bench", help="run benchmarks/run_all.py (from a source checkout); "
                   "options after 'bench' go to it")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])
    args = parser.parse_args(argv)
    if args.cmd == "info":
        return _info()
    return 2


def _bench(rest) -> int:
    """The benchmarks live beside the package in a source checkout, not in the wheel."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "run_all.py"
    if not script.exists():
        print("python -m lazyt bench runs benchmarks/run_all.py of a source checkout "
              "(pip install -e .); it was not found next to this lazyt package",
              file=sys.stderr)
        return 2
    return subprocess.call([sys.executable, str(script), *rest])


if __name__ == "__main__":
    sys.exit(main())
