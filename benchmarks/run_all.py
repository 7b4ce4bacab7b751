"""Run every benchmark in this folder for the devices present and print one markdown table:
lazyt, the reference it is measured against (in the same process), and their ratio.

    python benchmarks/run_all.py [--quick] [--json FILE]      (also: python -m lazyt bench)

Each script prints JSON lines; this collects them, keeps the raw lines (`--json`), and
normalizes each measurement to: time of lazyt, time of the reference, ratio (lazyt/reference,
below 1 is faster) and the goal for that ratio. GPU rows run for each GPU device that
builds here (wgpu on a software adapter runs them with small sizes).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def gpu_devices() -> list[tuple[str, bool]]:
    """(device, is_software) for each GPU device that builds here."""
    import lazyt
    out = []
    for name in ("wgpu", "cuda"):
        try:
            backend = lazyt.device(name).base_backend
        except lazyt.DeviceError:
            continue
        desc = repr(backend).lower()
        out.append((name, "llvmpipe" in desc or "cpu" in desc or "swiftshader" in desc))
    return out


def run(script: str, *args: str, timeout: int = 1800) -> list[dict]:
    cmd = [sys.executable, str(HERE / script), *args]
    print(f"$ {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    rows = []
    for line in res.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    if res.returncode != 0:
        rows.append({"bench": script, "error": (res.stderr.strip().splitlines() or ["?"])[-1]})
    return rows


def normalize(row: dict) -> dict | None:
    """One table row: name, device, lazyt (ms), reference, reference (ms), ratio, goal."""
    bench = row.get("bench") or row.get("benchmark")
    if "error" in row:
        return {"name": f"{bench}: FAILED ({row['error']})", "device": "", "lazyt": None,
                "reference": "", "ref": None, "goal": None}
    if "lazyt_ms" in row and "reference_ms" in row:  # benchmarks/common.py schema
        return {"name": row["name"], "device": row["device"], "lazyt": row["lazyt_ms"],
                "reference": row["reference"] or "", "ref": row["reference_ms"],
                "goal": row.get("goal")}
    if bench == "fusion_cpu":
        case = row.get("case", "")
        if case.startswith("a_"):
            numba = "numba" in str(row.get("goal", ""))
            return {"name": "8-op elementwise chain, 4M float32", "device": row["device"],
                    "lazyt": row["lazyt_ms"], "reference": "numpy", "ref": row["numpy_ms"],
                    "goal": round(1 / (5 if numba else 1.5), 3)}
        if case.startswith("d_") and "cold_ms" in row:
            return {"name": f"numba kernel of a new fused block: cold compile "
                    f"(cached load {row['cached_ms']} ms)", "device": "cpu",
                    "lazyt": row["cold_ms"], "reference": "", "ref": None, "goal": None}
        if case.startswith("b_"):
            return {"name": "16-op chain on 8 elements, plan-cache hit (goal: <= 0.15 ms)",
                    "device": row["device"], "lazyt": row["total_us"] / 1e3, "reference": "",
                    "ref": None, "goal": None}
        if case.startswith("c_"):
            return {"name": f"record+drain {row['n_ops']}-op graph ({row['warm_us_per_op']} "
                    "us/op warm)", "device": row["device"], "lazyt": row["warm_ms"],
                    "reference": "", "ref": None, "goal": None}
    if bench == "autodiff_overhead" and row.get("workload") != "geomean":
        return {"name": f"untracked {row['workload']} on an Autodiff device",
                "device": "cpu" + ("" if row.get("fusion") else " (fusion=False)"),
                "lazyt": row["autodiff_us"] / 1e3, "reference": "autodiff=False",
                "ref": row["no_autodiff_us"] / 1e3, "goal": row.get("goal")}
    if bench == "gpu" and row.get("name") in ("matmul_bias_relu_fp32", "chain5_fp32"):
        matmul = row["name"].startswith("matmul")
        ref, ref_ms = (("cuBLAS, TF32 off", row.get("cublas_ms")) if matmul
                       else ("torch.compile", row.get("torch_compile_ms")))
        label = (f"fp32 matmul+bias+relu {row['n']}^3" if matmul
                 else f"5-op chain on {row['n']} floats")
        return {"name": label, "device": row["device"], "lazyt": row["lazyt_ms"],
                "reference": ref if ref_ms else "(torch absent)", "ref": ref_ms,
                "goal": (1 / 0.5 if matmul else 1 / 0.8) if ref_ms else None}
    return None


def table(rows: list[dict]) -> str:
    lines = ["| benchmark | device | lazyt (ms) | reference | reference (ms) | ratio "
             "(lazyt/ref) | goal (ratio <=) | met |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = r["lazyt"] / r["ref"] if r.get("ref") and r.get("lazyt") else None
        met = "" if ratio is None or r.get("goal") is None else (
            "yes" if ratio <= r["goal"] else "no")
        fmt = (lambda v: "" if v is None else f"{v:.4g}")
        lines.append(f"| {r['name']} | {r['device']} | {fmt(r['lazyt'])} | {r['reference']} | "
                     f"{fmt(r.get('ref'))} | {fmt(ratio)} | {fmt(r.get('goal'))} | {met} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer runs and smaller sizes")
    p.add_argument("--json", help="also write every raw JSON line to this file")
    args = p.parse_args(argv)
    raw: list[dict] = []
    raw += run("fusion_cpu.py")
    raw += run("autodiff_overhead.py", *(["--runs", "5", "--reps", "50"] if args.quick else []))
    raw += run("matmul_cpu.py", *(["--runs", "5"] if args.quick else []))
    raw += run("mlp_cpu.py", *(["--runs", "5"] if args.quick else []))
    raw += run("minilm.py", "--device", "cpu", *(["--runs", "3"] if args.quick else []))
    raw += run("conv_cpu.py", *(["--runs", "3"] if args.quick else []))
    raw += run("compile.py", "cpu", *(["--runs", "3", "--skip", "minilm"] if args.quick else []))
    for dev, software in gpu_devices():  # batch 32 x 128 takes minutes on a software adapter
        small = ["--batch", "2", "--seq", "32", "--runs", "1", "--warmup", "0"] if software \
            else (["--runs", "3"] if args.quick else [])
        raw += run("minilm.py", "--device", dev, *small)
    for dev, software in gpu_devices():  # a software adapter cannot run the full sizes
        raw += run("gpu.py", dev, *(["--small"] if software else []))
        if not software:
            raw += run("compile.py", dev, *(["--runs", "3"] if args.quick else []))
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in raw))
    rows = [n for n in (normalize(r) for r in raw) if n is not None]
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
