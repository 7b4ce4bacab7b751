"""`lazyt.fusion.draw`: the pending graph as DOT and images, without running anything."""
from __future__ import annotations

import re
import shutil
import sys

import graphviz
import numpy as np
import pytest

import lazyt
from lazyt.errors import InvalidArgumentError, LazytError
from lazyt.fusion import draw, find_fusion, inspect
from lazyt.fusion.draw import DrawError, to_dot
from lazyt.ops import UnaryOp

DEVICES = [lazyt.device("cpu", autodiff=False), lazyt.device("cpu")]
IDS = ["fusion", "autodiff+fusion"]
HAS_DOT = shutil.which("dot") is not None
NODE = re.compile(r'^\t+(in\d+|op\d+) \[label="((?:[^"\\]|\\.)*)"([^\]]*)\]', re.M)
CLUSTER = re.compile(r"subgraph (cluster_\w+) \{\n(.*?)\n\t\}", re.S)


@pytest.fixture(autouse=True)
def _nothing_pending():
    """Each test starts and ends with empty streams (a failed test leaves none behind)."""
    for dev in DEVICES:
        lazyt.sync(dev)
    yield
    for dev in DEVICES:
        lazyt.sync(dev)


def _mlp(dev, seed=0):
    """x @ W1 + b1, relu, @ W2 + b2, a softmax spelled out: 10 ops, 4 blocks, 4 opaque ops."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32)
              for s in ((5, 6), (6, 4), (4,), (4, 3), (3,))]
    x, w1, b1, w2, b2 = (lazyt.tensor(a, device=dev) for a in arrays)
    h = (x @ w1 + b1).relu()
    logits = h @ w2 + b2
    e = (logits - logits.amax(dim=-1, keepdim=True)).exp()
    return arrays, e / e.sum(dim=-1, keepdim=True)


def _mlp_np(x, w1, b1, w2, b2):
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _nodes(src: str) -> dict:
    """node name -> (label, attribute text) of a DOT source written by graphviz."""
    return {m[1]: (m[2], m[3]) for m in NODE.finditer(src)}


def _position(node: str) -> int:
    return int(node[2:])  # "op7" -> 7, the op's position in the stream


def _clusters(src: str) -> dict:
    """cluster name -> (fill colour, node names inside)."""
    out = {}
    for name, body in CLUSTER.findall(src):
        fill = re.search(r'fillcolor="([^"]+)"', body.splitlines()[0])[1]
        out[name] = (fill, set(re.findall(r"^\t\t(op\d+) \[", body, re.M)))
    return out


@pytest.mark.parametrize("dev", DEVICES, ids=IDS)
def test_dot_names_every_op_and_input_with_shape_and_dtype(dev, tmp_path):
    arrays, probs = _mlp(dev)
    graph = draw(tmp_path / "mlp.dot", dev)
    src = (tmp_path / "mlp.dot").read_text()
    assert isinstance(graph, graphviz.Digraph) and src == graph.source
    assert src.startswith("digraph")
    nodes = _nodes(src)
    ops = [label.split("\n") for n, (label, _) in nodes.items() if n.startswith("op")]
    assert sorted(lines[0] for lines in ops) == sorted(
        ["matmul", "add", "relu", "matmul", "add", "max", "sub", "exp", "sum", "div"])
    assert ["matmul", "[5, 4]", "float32"] in ops and ["relu", "[5, 4]", "float32"] in ops
    assert ["sum", "[5, 1]", "float32"] in ops and ["div", "[5, 3]", "float32"] in ops
    inputs = [label.split("\n") for n, (label, _) in nodes.items() if n.startswith("in")]
    assert sorted(lines[1] for lines in inputs) == sorted(str(list(a.shape)) for a in arrays)
    assert all(lines[0].startswith("input t") and lines[2] == "float32"
               and lines[3] == "read-only" for lines in inputs)
    # data flow: one edge per tensor read (x, W1; mm, b1; add; relu, W2; mm, b2; ...)
    assert len(re.findall(r"^\t(?:in|op)\d+ -> op\d+$", src, re.M)) == 16
    # opaque ops look different from fused ones; the kept output has a double border
    attrs = {label.split("\n")[0]: a for label, a in nodes.values()}
    assert "box3d" in attrs["matmul"] and "box3d" in attrs["sum"] and "box3d" in attrs["max"]
    assert "ellipse" in attrs["relu"] and "box3d" not in attrs["relu"]
    assert "peripheries=2" in attrs["div"] and "peripheries" not in attrs["exp"]
    # drawing ran nothing: the values are still right
    np.testing.assert_allclose(probs.numpy(), _mlp_np(*arrays), rtol=1e-5)


def test_labels_break_lines_with_real_newlines(tmp_path):
    dev = DEVICES[0]
    _, probs = _mlp(dev)
    src = draw(tmp_path / "g.dot", dev).source
    assert "\\n" not in src  # no literal backslash-n anywhere
    labels = [label for label, _ in _nodes(src).values()]
    assert labels and all(label.count("\n") >= 2 for label in labels)
    if HAS_DOT:  # dot itself breaks the lines there: one SVG text element per line
        svg = draw(tmp_path / "g.svg", dev)
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", (tmp_path / "g.svg").read_text())
        assert "relu" in texts and "[5, 4]" in texts and "float32" in texts
        assert not any("\\n" in t for t in texts) and svg.source == src
    probs.numpy()


@pytest.mark.parametrize("dev", DEVICES, ids=IDS)
def test_one_cluster_per_fused_block_in_distinct_colours(dev, tmp_path):
    arrays, probs = _mlp(dev)
    src = draw(None, dev).source
    nodes = _nodes(src)
    clusters = _clusters(src)
    fills = [fill for fill, _ in clusters.values()]
    assert len(fills) == len(set(fills)) == 4
    drawn = sorted(tuple(nodes[n][0].split("\n")[0] for n in sorted(members, key=_position))
                   for _, members in clusters.values())
    # the clusters are the blocks that then run
    with inspect() as report:
        np.testing.assert_allclose(probs.numpy(), _mlp_np(*arrays), rtol=1e-5)
    ran = sorted(tuple(b.ops) for b in report.blocks)
    assert drawn == ran
    assert ran == sorted([("add", "relu"), ("add",), ("sub", "exp"), ("div",)])
    assert not any("box3d" in nodes[n][1] for _, members in clusters.values() for n in members)


def test_many_blocks_get_distinct_colours():
    dev = DEVICES[0]
    x = lazyt.tensor(np.linspace(0.1, 1.0, 6, dtype=np.float32), device=dev)
    for _ in range(14):  # each reduction closes the block before it
        x = (x * 0.5).exp()
        x = x / x.sum()
    fills = [fill for fill, _ in _clusters(to_dot(find_fusion(dev.backend))).values()]
    assert len(fills) == len(set(fills)) == 15
    assert all(re.fullmatch(r"#[0-9a-f]{6}", f) for f in fills)
    x.numpy()


@pytest.mark.skipif(not HAS_DOT, reason="graphviz's `dot` executable is not on PATH "
                                        "(apt-get install graphviz)")
def test_image_formats_are_rendered_by_extension(tmp_path):
    dev = DEVICES[0]
    arrays, probs = _mlp(dev)
    magic = {"png": b"\x89PNG\r\n\x1a\n", "svg": b"<?xml", "pdf": b"%PDF"}
    for fmt, head in magic.items():
        graph = draw(tmp_path / f"mlp.{fmt}", dev)
        assert (tmp_path / f"mlp.{fmt}").read_bytes().startswith(head)
        assert isinstance(graph, graphviz.Digraph)
    assert (tmp_path / "mlp.png").stat().st_size > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.pdf", "mlp.png", "mlp.svg"]
    draw(tmp_path / "MLP.PNG", dev)
    assert (tmp_path / "MLP.PNG").read_bytes().startswith(magic["png"])
    np.testing.assert_allclose(probs.numpy(), _mlp_np(*arrays), rtol=1e-5)


def test_drawing_runs_and_changes_nothing(tmp_path):
    dev = DEVICES[0]
    fusion = find_fusion(dev.backend)
    x = lazyt.tensor(np.arange(6, dtype=np.float32), device=dev)
    a = x * 2 + 1
    lazyt.sync(dev)           # a: a fused block's output the runtime owns
    y = (a.exp() + a).sum()
    del a                     # now dead: the plan would overwrite its buffer in place
    pending = fusion.pending
    statuses = [ir.status for ir in fusion.stream.irs]
    hits, misses, plans = fusion.cache.hits, fusion.cache.misses, len(fusion.cache)
    with inspect() as report:
        draw(tmp_path / "g.dot", dev)
        src = draw(None, dev).source
    assert "read-write: reused in place" in src  # what the plan decides is drawn...
    assert report.kernels == report.drains == 0  # ...but nothing ran, was cached or marked
    assert fusion.pending == pending
    assert [ir.status for ir in fusion.stream.irs] == statuses
    assert (fusion.cache.hits, fusion.cache.misses, len(fusion.cache)) == (hits, misses, plans)
    a_np = np.arange(6) * 2 + 1
    assert float(y.numpy()) == pytest.approx(float(np.sum(np.exp(a_np) + a_np)), rel=1e-5)


def test_dead_and_absorbed_ops_are_drawn_as_not_run():
    dev = DEVICES[0]
    x = lazyt.tensor(np.ones((4, 3), np.float32), device=dev)
    b = lazyt.tensor(np.arange(3, dtype=np.float32), device=dev)
    dead = x.exp()
    del dead
    y = x * 2 + b.expand(4, 3)
    nodes = _nodes(draw(None, dev).source)
    by_name = {label.split("\n")[0]: (label.split("\n"), a) for label, a in nodes.values()}
    assert by_name["exp"][0][-1] == "dead: not run" and "dashed" in by_name["exp"][1]
    assert by_name["expand"][0][-1] == "absorbed: readers broadcast its input"
    assert by_name["add"][0] == ["add", "[4, 3]", "float32"]
    np.testing.assert_array_equal(y.numpy(), np.ones((4, 3)) * 2 + np.arange(3))


def _halves(x):
    n = x.shape[0] // 2
    return x[:n] * 2, x[n:]


def test_custom_ops_are_opaque_with_a_line_per_output():
    dev = DEVICES[0]
    fusion = find_fusion(dev.backend)
    f32 = lazyt.float32
    x = fusion.from_numpy(np.arange(6, dtype=np.float32))
    a, b = fusion.custom("halves", _halves, [fusion.unary(UnaryOp.EXP, x)],
                         [((3,), f32), ((3,), f32)])
    nodes = _nodes(draw(None, fusion).source)
    label, attrs = next(v for v in nodes.values() if v[0].startswith("halves"))
    assert label.split("\n") == ["halves", "[3] float32", "[3] float32"]
    assert "box3d" in attrs and "peripheries=2" in attrs
    np.testing.assert_allclose(fusion.to_numpy(a), np.exp(np.arange(3)) * 2, rtol=1e-6)


@pytest.mark.parametrize("dev", DEVICES, ids=IDS)
def test_nothing_pending_raises_and_says_when_to_draw(dev, tmp_path):
    _, probs = _mlp(dev)
    probs.numpy()  # reading runs the pending ops
    lazyt.sync()
    with pytest.raises(DrawError, match="nothing is pending: draw before reading a result "
                                        "or syncing") as e:
        draw(tmp_path / "g.dot", dev)
    assert isinstance(e.value, LazytError)
    assert not (tmp_path / "g.dot").exists()


def test_missing_graphviz_package_says_how_to_install(monkeypatch, tmp_path):
    dev = DEVICES[0]
    _, probs = _mlp(dev)
    monkeypatch.setitem(sys.modules, "graphviz", None)  # `import graphviz` raises ImportError
    with pytest.raises(DrawError, match=re.escape('pip install -e ".[draw]"')) as e:
        draw(tmp_path / "g.dot", dev)
    assert isinstance(e.value, LazytError) and isinstance(e.value.__cause__, ImportError)
    assert not (tmp_path / "g.dot").exists()
    probs.numpy()


def test_missing_dot_executable_is_named_for_images_only(monkeypatch, tmp_path):
    dev = DEVICES[0]
    _, probs = _mlp(dev)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` on PATH
    with pytest.raises(DrawError, match="apt-get install graphviz"):
        draw(tmp_path / "g.png", dev)
    assert not (tmp_path / "g.png").exists()
    draw(tmp_path / "g.dot", dev)  # DOT text needs only the Python package
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
    probs.numpy()


def test_bad_extension_or_no_fusion_layer_is_an_invalid_argument(tmp_path):
    dev = DEVICES[0]
    _, probs = _mlp(dev)
    with pytest.raises(InvalidArgumentError, match=r"\.dot, \.gv, \.svg, \.png, \.pdf"):
        draw(tmp_path / "g.jpg", dev)
    with pytest.raises(InvalidArgumentError, match="no Fusion layer"):
        draw(tmp_path / "g.dot", lazyt.device("cpu", fusion=False))
    probs.numpy()


def test_default_device_and_backend_stack_are_accepted():
    x = lazyt.tensor(np.ones(3, np.float32))  # on the default device
    y = x.exp() + 1
    by_default = draw().source
    assert "exp\n" in by_default and "add\n" in by_default
    assert draw(None, x.device.backend).source == by_default
    assert draw(None, find_fusion(x.device.backend)).source == by_default
    np.testing.assert_allclose(y.numpy(), np.e + 1, rtol=1e-6)
