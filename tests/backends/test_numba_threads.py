"""numba kernels split over numba's own threads (`lazyt.backends.numpy.jitpar`): the same bits
as over lazyt's Python pool, launches from several threads at once, a forked child, the
launcher's disk cache and the `LAZYT_NUMBA_THREADS=0` switch. Skipped without numba."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import lazyt
import lazyt.nn.functional as F
from lazyt.backends.numpy import jit, jitpar

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed "
                                "(pip install -e '.[cpu]'); the numpy fallback runs instead")

CPU = lazyt.device("cpu", autodiff=False)


def _workload(seed: int):
    """A fused block, a fused add + layer norm, a softmax and masked attention, all big
    enough for numba kernels of several pieces."""
    rng = np.random.default_rng(seed)
    x = lazyt.tensor(rng.standard_normal((2048, 384)).astype(np.float32), device=CPU)
    r = lazyt.tensor(rng.standard_normal((2048, 384)).astype(np.float32), device=CPU)
    w = lazyt.tensor(rng.standard_normal(384).astype(np.float32), device=CPU)
    q, k, v = (lazyt.tensor(rng.standard_normal((4, 6, 64, 32)).astype(np.float32),
                            device=CPU) for _ in range(3))
    mask = np.zeros((4, 1, 1, 64), np.float32)
    mask[1, ..., 40:] = -np.inf
    return [F.gelu(x * 1.5 - r).numpy(),
            F.layer_norm(x + r, (384,), w, None, 1e-5).numpy(),
            F.softmax(x * 0.5, dim=-1).numpy(),
            F.scaled_dot_product_attention(q, k, v, attn_mask=lazyt.tensor(mask, device=CPU))
            .numpy()]


def _run(code: str, **env) -> str:
    """`code` in a fresh process (its threading layer not chosen yet); its stdout."""
    full = dict(os.environ, LAZYT_NUM_THREADS="2", **env)
    for k in ("NUMBA_THREADING_LAYER", "NUMBA_THREADING_LAYER_PRIORITY", "OMP_WAIT_POLICY"):
        if k not in env:
            full.pop(k, None)
    r = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True,
                       timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert r.returncode == 0, r.stderr
    return r.stdout


_COMPARE = """
import os, numpy as np
from backends.test_numba_threads import _workload
from lazyt.backends.numpy import jitpar
{before}
os.environ["LAZYT_NUMBA_THREADS"] = "0"
pooled = _workload(1)
assert not jitpar._wrappers
os.environ["LAZYT_NUMBA_THREADS"] = "1"
threaded = _workload(1)
assert all(np.array_equal(a, b) for a, b in zip(pooled, threaded))
print(jitpar.usable(), jitpar.layer(), len(jitpar._wrappers),
      os.environ.get("OMP_WAIT_POLICY"))
"""


def test_numba_threads_give_the_pools_bits():
    """In a fresh process the kernels run over numba's `tbb` or `omp` threads (the latter
    started with sleeping threads, the variable restored after), with the pool's bits."""
    usable, layer, launchers, policy = _run(_COMPARE.format(before="")).split()
    assert usable == "True" and layer in ("tbb", "omp") and int(launchers) >= 4
    assert policy == "None"


def test_an_openmp_runtime_loaded_first_keeps_the_pool():
    """GNU OpenMP already in the process (as torch brings it) has its wait policy fixed:
    unless `tbb` loads, the kernels stay on the pool, with the same bits."""
    import numba.np.ufunc
    omppool = [f for f in os.listdir(os.path.dirname(numba.np.ufunc.__file__))
               if f.startswith("omppool")]
    if not omppool:
        pytest.skip("this numba has no OpenMP threading layer to load first")
    before = ("from numba.np.ufunc import omppool\n"
              "assert jitpar._openmp_loaded()")
    usable, layer, launchers, _ = _run(_COMPARE.format(before=before)).split()
    assert (usable, layer) in (("False", "None"), ("True", "tbb"))


def test_a_chosen_workqueue_layer_takes_one_launch_at_a_time():
    code = """
import threading, numpy as np
from backends.test_numba_threads import _workload
from lazyt.backends.numpy import jitpar
expected = _workload(2)
got = []
ts = [threading.Thread(target=lambda: got.extend(_workload(2) for _ in range(3)))
      for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
assert len(got) == 12 and all(all(np.array_equal(a, b) for a, b in zip(expected, g))
                              for g in got)
print(jitpar.layer())
"""
    assert _run(code, NUMBA_THREADING_LAYER="workqueue").split() == ["workqueue"]


def test_launches_from_several_threads_at_once(monkeypatch):
    """The workqueue layer aborts the process on a second concurrent launch: lazyt's
    launches take turns there, the one that finds it busy runs over the pool."""
    monkeypatch.setenv("LAZYT_NUM_THREADS", "2")
    expected = _workload(2)
    results, errors = [], []

    def worker():
        try:
            for _ in range(5):
                results.append(_workload(2))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 20
    for got in results:
        for a, b in zip(expected, got):
            np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_its_kernels_over_the_pool(monkeypatch):
    monkeypatch.setenv("LAZYT_NUM_THREADS", "2")
    expected = _workload(3)   # the parent's numba threads have run
    pid = os.fork()
    if pid == 0:  # the child: OpenMP's threads would not survive the fork
        code = 1
        try:
            got = _workload(3)
            same = all(np.array_equal(a, b) for a, b in zip(expected, got))
            code = 0 if same and not jitpar.usable() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_the_launcher_is_cached_on_disk_and_named_by_its_kernel(tmp_path):
    """A second process loads the launchers (no compile); the launcher's module name
    changes with the kernel's source."""
    script = (
        "import numpy as np, lazyt, lazyt.nn.functional as F\n"
        "from lazyt.backends.numpy import jit, jitpar\n"
        "x = lazyt.tensor(np.ones((1024, 512), np.float32), device=lazyt.device('cpu'))\n"
        "(x * 2 + 1).numpy(); (x * 3 - 1).relu().numpy()\n"
        "names = sorted(w.py_func.__module__ for w in jitpar._wrappers.values())\n"
        "print(jit.STATS['compiled'], jit.STATS['loaded'], *names)\n")
    env = dict(os.environ, LAZYT_CACHE_DIR=str(tmp_path), LAZYT_NUM_THREADS="2",
               LAZYT_NUMBA_THREADS="1")
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    (c1, l1, *names1), (c2, l2, *names2) = (r.stdout.split() for r in runs)
    assert int(c1) == 4 and int(l1) == 0      # two kernels and their two launchers compiled
    assert int(c2) == 0 and int(l2) == 4      # all four loaded from disk
    assert names1 == names2 and len(set(names1)) == 2
    assert all(n.startswith("lazyt_launch_") for n in names1)
    assert len(list((tmp_path / "numba").glob("lazyt_launch_*.py"))) == 2
