"""Kernel-source tools of the Cube family: templates, ids, per-language sources, elem, launch shape,
info buffers. No GPU needed."""
import hashlib
import importlib.util
import os
import textwrap

import numpy as np
import pytest

import lazyt.dtype as dt
from lazyt.backends.cube.source import (
    MAX_CUBES_PER_DIM,
    CubeCount,
    CubeDim,
    FileKernelSource,
    KernelId,
    KernelSources,
    SourceKernel,
    SourceTemplate,
    TextKernelSource,
    build_info,
    elem_name,
    elem_storage,
    kernel_source,
    with_elem_prelude,
)
from lazyt.backends.cube.tensor import CubeTensor, contiguous_strides
from lazyt.errors import DTypeError, KernelLanguageError, LazytError, ShapeError, TemplateError

WGSL = ("var<storage, read> a: array<{{ elem }}>;\n"
        "@workgroup_size({{workgroup_size_x}}, {{  workgroup_size_y}})\n")


# ---------------------------------------------------------------------------------- SourceTemplate
def test_register_fills_placeholders_with_or_without_spaces():
    t = SourceTemplate(WGSL, name="k")
    assert t.placeholders == {"elem", "workgroup_size_x", "workgroup_size_y"}
    out = t.register("elem", "f32").register("workgroup_size_x", 16).register("workgroup_size_y", 8)
    assert out.complete() == "var<storage, read> a: array<f32>;\n@workgroup_size(16, 8)\n"


def test_register_returns_a_new_template_and_leaves_the_receiver_unchanged():
    raw = SourceTemplate("x {{ a }} {{ a }}", name="k")
    f32 = raw.register("a", "f32")
    i32 = raw.register("a", "i32")
    assert (f32.complete(), i32.complete()) == ("x f32 f32", "x i32 i32")
    assert raw.unfilled == {"a"}


def test_values_are_not_expanded_again():
    t = SourceTemplate("{{ a }} {{ b }}", name="k").register("a", "{{ b }}").register("b", "2")
    assert t.complete() == "{{ b }} 2"


def test_unfilled_placeholder_names_it_and_the_kernel():
    t = SourceTemplate(WGSL, name="my_kernel", origin="/x/k.wgsl").register("elem", "f32")
    with pytest.raises(TemplateError) as e:
        t.complete()
    msg = str(e.value)
    assert "my_kernel" in msg and "/x/k.wgsl" in msg
    assert "{{ workgroup_size_x }}" in msg and "{{ workgroup_size_y }}" in msg
    assert "{{ elem }}" not in msg
    assert isinstance(e.value, LazytError) and isinstance(e.value, KeyError)


def test_registering_an_unknown_placeholder_is_an_error():
    with pytest.raises(TemplateError, match=r"my_kernel.*\{\{ int \}\}.*\{\{ elem \}\}"):
        SourceTemplate(WGSL, name="my_kernel").register("int", "i32")


# ---------------------------------------------------------------------------------- KernelId
def test_kernel_id_hashes_the_completed_source():
    kid = KernelId.of("k", "wgsl", "fn main() {}", cube_dim=(16, 16, 1))
    assert kid.source_hash == hashlib.sha256(b"fn main() {}").hexdigest()
    assert kid == KernelId.of("k", "wgsl", "fn main() {}", cube_dim=(16, 16, 1))
    assert len({kid, KernelId.of("k", "wgsl", "fn main() {}", cube_dim=(16, 16, 1))}) == 1
    assert kid != KernelId.of("k", "wgsl", "fn main() { }", cube_dim=(16, 16, 1))
    assert kid != KernelId.of("k", "wgsl", "fn main() {}", cube_dim=(8, 16, 1))
    assert kid != KernelId.of("k", "cuda", "fn main() {}", cube_dim=(16, 16, 1))
    with pytest.raises(Exception):
        kid.name = "other"


def test_source_kernel_id_is_stable_and_follows_settings_and_text():
    src = TextKernelSource("k", "wgsl", WGSL)
    a = SourceKernel(src, CubeDim(16, 8), dt.float32)
    b = SourceKernel(TextKernelSource("k", "wgsl", WGSL), CubeDim(16, 8), dt.float32)
    assert a.id() == b.id() == a.id()
    assert a.id().source_hash == hashlib.sha256(a.complete().encode()).hexdigest()
    assert a.id() != SourceKernel(src, CubeDim(8, 16), dt.float32).id()
    assert a.id() != SourceKernel(src, CubeDim(16, 8), dt.int32).id()
    edited = TextKernelSource("k", "wgsl", WGSL.replace("read", "read_write"))
    assert a.id() != SourceKernel(edited, CubeDim(16, 8), dt.float32).id()


def test_an_edited_kernel_file_gets_a_new_id(tmp_path):
    path = tmp_path / "k.wgsl"
    path.write_text(WGSL)
    kernel = SourceKernel(kernel_source(wgsl=path, cuda=None, name="k"), CubeDim(4, 4), dt.float32)
    kernel = kernel.for_lang("wgsl")
    first = kernel.id()
    assert kernel.id() == first
    path.write_text("// edited\n" + WGSL)
    assert kernel.id() != first
    assert kernel.complete().startswith("// edited\n")


# ---------------------------------------------------------------------------------- kernel_source
def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_kernel_source_resolves_files_next_to_the_calling_module(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    _write(pkg / "kernel.wgsl", "// wgsl {{ elem }}\n")
    _write(pkg / "kernel.cu", "// cuda {{ elem }}\n")
    _write(pkg / "forward.py", textwrap.dedent("""
        from lazyt.backends.cube.source import kernel_source
        RAW = kernel_source(wgsl="kernel.wgsl", cuda="kernel.cu", name="fused")
    """))
    spec = importlib.util.spec_from_file_location("forward_for_test", pkg / "forward.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.chdir(tmp_path)  # resolution must not depend on the working directory
    raw = module.RAW
    assert isinstance(raw, KernelSources) and raw.langs == ("wgsl", "cuda")
    wgsl, cuda = raw.for_lang("wgsl"), raw.for_lang("cuda")
    assert (wgsl.lang(), cuda.lang()) == ("wgsl", "cuda")
    assert wgsl.path == (pkg / "kernel.wgsl").resolve()
    assert wgsl.source().register("elem", "f32").complete() == "// wgsl f32\n"
    assert cuda.source().register("elem", "float").complete() == "// cuda float\n"
    assert (wgsl.entry, cuda.entry) == ("main", "kernel")


def test_kernel_source_reads_lazily_and_names_a_missing_path(tmp_path):
    raw = kernel_source(wgsl=tmp_path / "nope.wgsl", cuda=None, name="fused")
    with pytest.raises(LazytError, match=r"fused.*nope\.wgsl"):
        raw.for_lang("wgsl").source()


def test_asking_for_a_language_without_source_is_a_kernel_language_error(tmp_path):
    raw = kernel_source(wgsl=_write(tmp_path / "k.wgsl", "x"), cuda=None, name="fused")
    with pytest.raises(KernelLanguageError) as e:
        raw.for_lang("cuda")
    assert all(word in str(e.value) for word in ("fused", "cuda", "wgsl"))


def test_a_single_language_source_refuses_other_runtimes():
    src = TextKernelSource("gen", "cuda", "extern \"C\" __global__ void kernel() {}")
    assert src.for_lang("cuda") is src
    with pytest.raises(KernelLanguageError, match=r"gen.*cuda.*wgsl"):
        SourceKernel(src, CubeDim(32)).for_lang("wgsl")


def test_a_several_language_source_kernel_must_be_resolved_first(tmp_path):
    raw = kernel_source(wgsl=_write(tmp_path / "a.wgsl", "w {{ workgroup_size_x }}"),
                        cuda=_write(tmp_path / "a.cu", "c {{ workgroup_size_x }}"))
    kernel = SourceKernel(raw, CubeDim(64))
    assert kernel.name == "a"
    with pytest.raises(KernelLanguageError, match="for_lang"):
        kernel.complete()
    assert kernel.for_lang("wgsl").complete() == "w 64"
    assert kernel.for_lang("cuda").complete() == "c 64"
    assert kernel.for_lang("cuda").lang() == "cuda"


def test_unknown_language_is_rejected():
    with pytest.raises(KernelLanguageError, match="metal"):
        TextKernelSource("k", "metal", "")


# ---------------------------------------------------------------------------------- elem
@pytest.mark.parametrize("dtype, wgsl, cuda", [
    (dt.float32, "f32", "float"),
    (dt.float16, "f16", "__half"),
    (dt.int32, "i32", "int"),
    (dt.int64, "i32", "long long"),
    (dt.bool_, "u32", "unsigned int"),
])
def test_elem_is_spelled_per_language(dtype, wgsl, cuda):
    assert elem_name(dtype, "wgsl") == wgsl
    assert elem_name(dtype, "cuda") == cuda


def test_elem_storage_and_unsupported_dtypes():
    assert elem_name(dt.float64, "cuda") == "double"
    assert elem_name("float32", "wgsl") == "f32"
    assert elem_storage(dt.int64, "wgsl") == np.int32
    assert elem_storage(dt.int64, "cuda") == np.int64
    assert elem_storage(dt.bool_, "wgsl") == np.uint32
    with pytest.raises(DTypeError, match=r"float64.*wgsl"):
        elem_name(dt.float64, "wgsl")


def test_source_kernel_fills_elem_and_workgroup_size():
    src = TextKernelSource("k", "wgsl", WGSL)
    text = SourceKernel(src, CubeDim(16, 8), dt.float32).complete()
    assert text == "var<storage, read> a: array<f32>;\n@workgroup_size(16, 8)\n"
    with pytest.raises(TemplateError, match=r"\{\{ elem \}\}"):
        SourceKernel(src, CubeDim(16, 8)).complete()   # no dtype given
    extra = TextKernelSource("k", "wgsl", "{{ elem }} {{ int }}")
    assert SourceKernel(extra, CubeDim(), dt.float32, {"int": "i32"}).complete() == "f32 i32"


def test_f16_prelude_keeps_line_numbers():
    wgsl_raw = "// line 1\n@binding(0) var<storage> a: array<{{ elem }}>;\n"
    text = SourceKernel(TextKernelSource("k", "wgsl", wgsl_raw), CubeDim(), dt.float16).complete()
    assert text.startswith("enable f16; // line 1\n") and text.count("\n") == 2
    assert with_elem_prelude(text, dt.float16, "wgsl") == text   # not enabled twice
    cu = SourceKernel(TextKernelSource("k", "cuda", "{{ elem }} x;\n"), CubeDim(), dt.float16)
    assert cu.complete() == "#include <cuda_fp16.h>\n#line 1\n__half x;\n"
    assert with_elem_prelude("float x;", dt.float32, "cuda") == "float x;"


# ------------------------------------------------------------------------ CubeDim / CubeCount
def test_cube_dim():
    assert CubeDim(16, 16).num_threads == 256 and CubeDim() == CubeDim(1, 1, 1)
    with pytest.raises(ShapeError):
        CubeDim(0)
    with pytest.raises(ShapeError):
        CubeDim(2.0)


@pytest.mark.parametrize("count, expected", [(0, (0, 1, 1)), (1, (1, 1, 1)),
                                             (MAX_CUBES_PER_DIM, (MAX_CUBES_PER_DIM, 1, 1)),
                                             (MAX_CUBES_PER_DIM + 1, (32768, 2, 1))])
def test_cube_count_split_examples(count, expected):
    c = CubeCount.split(count)
    assert (c.x, c.y, c.z) == expected


@pytest.mark.parametrize("max_per_dim", [3, 4, 7])
def test_cube_count_split_covers_within_limits(max_per_dim):
    for n in range(max_per_dim ** 3 + 1):
        c = CubeCount.split(n, max_per_dim)
        assert max(c.x, c.y, c.z) <= max_per_dim
        assert c.total >= n and c.total - n < c.y * c.z, (n, c)
    with pytest.raises(ShapeError):
        CubeCount.split(max_per_dim ** 3 + 1, max_per_dim)


def test_cube_count_split_large():
    n = MAX_CUBES_PER_DIM ** 2 + 7
    c = CubeCount.split(n)
    assert c.z == 2 and max(c.x, c.y) <= MAX_CUBES_PER_DIM and 0 <= c.total - n < c.y * c.z


def test_cube_count_for_elements():
    assert CubeCount.for_elements(1000, CubeDim(256)) == CubeCount(4)
    c = CubeCount.for_elements(2 ** 26, CubeDim(256))          # 262,144 workgroups
    assert c.total >= 2 ** 18 and max(c.x, c.y, c.z) <= MAX_CUBES_PER_DIM


# ---------------------------------------------------------------------------------- build_info
class View:
    def __init__(self, shape, strides=None, offset=0):
        self.shape, self.offset = shape, offset
        self.strides = contiguous_strides(shape) if strides is None else strides


def test_build_info_layout_for_lhs_rhs_out():
    lhs, rhs, out = View((1, 64, 32)), View((4, 32, 48)), View((4, 64, 48))
    info = build_info([lhs, rhs, out])
    assert info.dtype == np.uint32
    assert info.tolist() == [3,
                             2048, 32, 1, 1536, 48, 1, 3072, 48, 1,
                             1, 64, 32, 4, 32, 48, 4, 64, 48]
    # The reads of the seed's kernel: M, N and K at fixed places, strides and shapes per batch dim.
    dim = int(info[0])
    assert (info[6 * dim - 1], info[6 * dim], info[5 * dim - 1]) == (64, 48, 32)
    b = 1
    assert (info[b], info[b + dim], info[b + 2 * dim]) == (2048, 1536, 3072)
    assert (info[b + 3 * dim], info[b + 4 * dim]) == (1, 4)


def test_build_info_passes_strides_as_given():
    expanded = View((4, 3, 2), strides=(0, 1, 3))   # a broadcast batch dim and a transposed matrix
    out = View((4, 3, 2))
    assert build_info([expanded, out]).tolist() == [3, 0, 1, 3, 6, 2, 1, 4, 3, 2, 4, 3, 2]


def test_build_info_reads_cube_tensors():
    a = CubeTensor.new_contiguous(None, "dev", (2, 3), handle=object(), dtype=dt.float32)
    assert build_info([a]).tolist() == [2, 3, 1, 2, 3]
    assert build_info([View(())]).tolist() == [0]


def test_build_info_errors():
    with pytest.raises(ShapeError, match=r"same rank.*\(2, 3\).*\(4, 2, 3\)"):
        build_info([View((2, 3)), View((4, 2, 3))])
    with pytest.raises(ShapeError, match="into_contiguous"):
        build_info([View((2, 3)), View((2, 3), offset=6)])
    with pytest.raises(ShapeError):
        build_info([])
    with pytest.raises(ShapeError, match="2\\^32"):
        build_info([View((2, 3), strides=(-3, 1))])


def test_file_kernel_source_repr_and_id(tmp_path):
    path = _write(tmp_path / "k.cu", "{{ elem }}")
    src = FileKernelSource("k", "cuda", path)
    assert src.id() == KernelId.of("k", "cuda", "{{ elem }}", entry="kernel")
    assert "k.cu" in repr(src)
    os.remove(path)
    with pytest.raises(LazytError, match="k.cu"):
        src.id()
