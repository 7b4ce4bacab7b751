"""`python -m lazyt info`: the version, the backends importable here and the devices each sees."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import lazyt

REPO = Path(lazyt.__file__).resolve().parent.parent


def _run(*args, **env):
    full_env = dict(os.environ)
    full_env.pop("LAZYT_DEVICE", None)
    full_env.update(env)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "lazyt", *args], capture_output=True, text=True,
                          env=full_env, cwd=str(REPO), timeout=60)


def test_info_prints_version_backends_and_devices():
    r = _run("info")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert lazyt.__version__ in out, out
    assert "numpy" in out, out        # the embedded backend is always importable
    assert "cpu" in out, out          # ... and sees the cpu device
    assert "Traceback" not in out + r.stderr


def test_info_reports_missing_backends_with_what_to_install():
    r = _run("info")
    out = r.stdout
    lines = out.lower().splitlines()
    for name, module in (("wgpu", "wgpu"), ("cuda", "pycuda")):
        mentioned = [ln for ln in lines if name in ln]
        if importlib.util.find_spec(module) is None:
            # a missing backend is either left out or reported as unavailable, never as working
            for ln in mentioned:
                assert any(w in ln for w in ("not", "missing", "unavailable", "install")), out
        else:
            assert mentioned, out


def test_version_is_a_string():
    assert isinstance(lazyt.__version__, str) and lazyt.__version__.count(".") >= 1


def test_info_does_not_depend_on_lazyt_device_env():
    r = _run("info", LAZYT_DEVICE="cpu")
    assert r.returncode == 0, r.stderr
    assert lazyt.__version__ in r.stdout


def test_unknown_command_fails():
    r = _run("no-such-command")
    assert r.returncode != 0


def test_info_says_whether_cpu_kernels_are_compiled():
    r = _run("info")
    assert "numba" in r.stdout
    off = _run("info", LAZYT_NUMBA="0")
    if "numba not installed" not in off.stdout:
        assert "compiled kernels off (LAZYT_NUMBA=0)" in off.stdout
