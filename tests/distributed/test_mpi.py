"""The MPI backend across processes: `mpiexec -n 2` runs of the workers in this folder.

- every collective against numpy (`_worker_collectives.py`), also with the debug shape check;
- DistributedDataParallel: the 2-process loss curve equals the 1-process run on the full
  batch (`_worker_ddp.py`), with both gradient flows, no_sync accumulation and lazyt.compile.
  Tolerance: rtol 1e-5 / atol 1e-6 per loss (float32: the averaged gradient of two half
  batches differs from the full batch's by rounding only);
- faults: a rank that exits and a shape mismatch raise DistributedError within the timeout.
"""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from _distributed_helpers import needs_mpi, output, run_ranks

pytestmark = needs_mpi

RTOL, ATOL = 1e-5, 1e-6


def _json(proc) -> dict:
    assert proc.returncode == 0, output(proc)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 1, output(proc)
    return json.loads(lines[0])


@pytest.mark.parametrize("n", [None, 2])
def test_every_collective_matches_numpy(n):
    proc = run_ranks(n, "_worker_collectives.py")
    assert proc.returncode == 0, output(proc)
    ranks = 1 if n is None else n
    for r in range(ranks):
        assert f"rank {r} of {ranks}: every collective matches numpy" in proc.stdout


def test_every_collective_in_debug_mode():
    proc = run_ranks(2, "_worker_collectives.py", "--debug")
    assert proc.returncode == 0, output(proc)
    assert proc.stdout.count("every collective matches numpy") == 2


@pytest.fixture(scope="module")
def one_process_curve() -> dict:
    """The reference: one process, the full batch of every step."""
    return _json(run_ranks(None, "_worker_ddp.py"))


@pytest.mark.parametrize("args", [(), ("--flow", "burn"), ("--accum", "2"), ("--compile",)],
                         ids=["torch-flow", "burn-flow", "no_sync-accumulation", "compiled"])
def test_two_process_curve_equals_one_process_full_batch(one_process_curve, args):
    one = one_process_curve
    two = _json(run_ranks(2, "_worker_ddp.py", *args))
    assert one["world"] == 1 and two["world"] == 2
    assert len(one["losses"]) == len(two["losses"]) == 6
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(two["weights"], one["weights"], rtol=RTOL, atol=ATOL)
    assert len(two["buckets"]) > 1                       # several buckets were reduced
    if "--compile" in args:
        assert two["compile_hits"] and two["compile_hits"] > 0   # replays reduced too


def test_a_rank_that_crashes_ends_the_job_at_once(tmp_path):
    start = time.monotonic()
    said = tmp_path / "said.txt"
    proc = run_ranks(2, "_worker_faults.py", "crash", "60", str(said), timeout=60)
    out = (said.read_text() if said.exists() else "") + output(proc)
    assert proc.returncode != 0 and "ZeroDivisionError" in out, out
    assert "NOT ABORTED" not in out
    assert time.monotonic() - start < 30       # not rank 0's 60 s timeout: MPI_Abort at exit


@pytest.mark.parametrize("case", ["exit", "exit-ddp"])
def test_a_rank_that_exits_raises_within_the_timeout(case, tmp_path):
    timeout = 3.0
    said = tmp_path / "said.txt"
    proc = run_ranks(2, "_worker_faults.py", case, str(timeout), str(said), timeout=60)
    # the rank's own record of what it raised, beside what the launcher relayed
    out = (said.read_text() if said.exists() else "") + output(proc)
    assert "RAISED" in out and "DistributedError" in out, out
    assert "NOT RAISED" not in out
    after = float(out.split("RAISED ")[1].split(" after ")[1].split(" s:")[0])
    assert timeout - 0.5 <= after <= timeout + 5, out
    assert "rank 0 of 2" in out and "timeout of 3 s" in out
    assert proc.returncode != 0                    # the job is aborted, never left hanging
    if case == "exit":
        assert "unusable after an earlier failure" in out


def test_shape_mismatch_is_named_in_debug_mode():
    proc = run_ranks(2, "_worker_faults.py", "shape", "10", timeout=60)
    out = output(proc)
    assert proc.returncode == 0, out
    assert out.count("RAISED DistributedError") == 2, out
    assert "rank 0: all_reduce of shape (3, 2) float32; rank 1: all_reduce of shape (4, 2) " \
           "float32" in out
    assert out.count("barrier after the mismatch") == 2


def test_example_train_ddp_curve_equals_one_process(tmp_path):
    example = str(run_ranks.__globals__["ROOT"] / "examples" / "train_ddp.py")
    args = ("--epochs", "2", "--json")
    one = _json(run_ranks(None, example, *args, timeout=180))
    two = _json(run_ranks(2, example, *args, "--save", str(tmp_path / "ckpt"), timeout=180))
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=RTOL, atol=ATOL)
    assert (tmp_path / "ckpt" / "model.safetensors").exists()
