"""Kernel-source tools of the Cube family, usable without a GPU.

A hand-written kernel is a `.wgsl` or `.cu` file next to the Python that launches it. Its text is a
`SourceTemplate` with `{{ name }}` placeholders (element type, workgroup size, ...); `kernel_source`
finds the files, `SourceKernel` fills the placeholders for one launch configuration and names the
result with a `KernelId` that hashes the completed text, so a runtime's pipeline/module cache never
runs stale code. `build_info` packs shapes and strides into the u32 buffer the kernels read, and
`CubeDim` / `CubeCount` describe the workgroup size and the number of workgroups.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ... import dtype as dt
from ...dtype import DType
from ...errors import DTypeError, KernelLanguageError, LazytError, ShapeError, TemplateError

#: The kernel languages of the Cube family's runtimes (wgpu compiles WGSL, CUDA compiles C++).
LANGS = ("wgsl", "cuda")

#: The function a runtime launches when the source does not say otherwise. CUDA cannot call a
#: `__global__` function `main`, hence its own default.
DEFAULT_ENTRY = {"wgsl": "main", "cuda": "kernel"}

#: Largest workgroup count per dispatch dimension that every runtime accepts (WebGPU's default).
MAX_CUBES_PER_DIM = 65_535

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _check_lang(lang: str, what: str) -> str:
    if lang not in LANGS:
        raise KernelLanguageError(f"{what}: unknown kernel language {lang!r}; the Cube runtimes "
                                  f"speak {', '.join(LANGS)}")
    return lang


# ---------------------------------------------------------------------------------- templates
class SourceTemplate:
    """Kernel text with `{{ name }}` placeholders, filled by `register` and read by `complete`.

    `register` returns a new template (the receiver is unchanged), so a raw source can be filled
    for several configurations; `name` and `origin` only serve the error messages.
    """

    __slots__ = ("text", "name", "origin", "_values")

    def __init__(self, text: str, name: str = "<kernel>", origin: str | None = None,
                 _values: Mapping[str, str] | None = None):
        self.text = text
        self.name = name
        self.origin = origin
        self._values = dict(_values or {})

    @property
    def placeholders(self) -> frozenset[str]:
        """Every placeholder name the text uses, filled or not."""
        return _placeholders(self.text)

    @property
    def unfilled(self) -> frozenset[str]:
        return self.placeholders - self._values.keys()

    def _where(self) -> str:
        return f"kernel {self.name!r}" + (f" ({self.origin})" if self.origin else "")

    def register(self, name: str, value: Any) -> SourceTemplate:
        """Fill placeholder `name` with `str(value)`; a name the text does not use is an error."""
        if name not in self.placeholders:
            have = ", ".join(_braced(p) for p in sorted(self.placeholders)) or "none"
            raise TemplateError(f"{self._where()}: no placeholder {_braced(name)} to register; "
                                f"its placeholders are: {have}")
        values = dict(self._values)
        values[name] = str(value)
        return SourceTemplate(self.text, self.name, self.origin, values)

    def complete(self) -> str:
        """The text with every placeholder replaced; an unfilled placeholder is an error."""
        missing = self.unfilled
        if missing:
            raise TemplateError(f"{self._where()}: unfilled placeholder(s) "
                                f"{', '.join(_braced(p) for p in sorted(missing))}; fill them "
                                f"with SourceTemplate.register(name, value)")
        return _fill(self.text, tuple(sorted(self._values.items())))

    def __repr__(self) -> str:
        return (f"SourceTemplate({self.name!r}, filled={sorted(self._values)}, "
                f"unfilled={sorted(self.unfilled)})")


def _braced(name: str) -> str:
    return "{{ " + name + " }}"


@lru_cache(maxsize=256)
def _placeholders(text: str) -> frozenset[str]:
    return frozenset(_PLACEHOLDER.findall(text))


@lru_cache(maxsize=256)
def _fill(text: str, items: tuple) -> str:
    values = dict(items)
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


@lru_cache(maxsize=256)
def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------- kernel ids
@dataclass(frozen=True)
class KernelId:
    """The cache key of a compiled kernel: name, language, sha256 of the completed source and the
    settings compiled into it (the entry point, the workgroup size), so an edited kernel gets a
    new id and two entry points of one source get two."""

    name: str
    lang: str
    source_hash: str
    settings: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, name: str, lang: str, source: str, **settings: Any) -> KernelId:
        """The id of `source` (completed text) with the given settings (hashable values)."""
        return cls(name, lang, _sha256(source), tuple(sorted(settings.items())))

    def __str__(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.settings)
        return f"{self.name}[{self.lang}]@{self.source_hash[:12]}{extra}"


# ---------------------------------------------------------------------------------- sources
class KernelSource:
    """A kernel in one language: `source()` gives its template, `lang()` its language, `id()` the
    cache key of its completed text. `entry` is the function the runtime launches."""

    name: str = "<kernel>"
    entry: str = "main"

    def source(self) -> SourceTemplate:
        raise NotImplementedError

    def lang(self) -> str:
        raise NotImplementedError

    def id(self) -> KernelId:
        return KernelId.of(self.name, self.lang(), self.source().complete(), entry=self.entry)

    @property
    def langs(self) -> tuple[str, ...]:
        return (self.lang(),)

    def for_lang(self, lang: str) -> KernelSource:
        """This source when it is in `lang`, else `KernelLanguageError` (a runtime calls this with
        its own language before compiling)."""
        if lang != self.lang():
            raise KernelLanguageError(
                f"kernel {self.name!r} is {self.lang()} source and cannot run on a {lang} runtime; "
                f"it has sources for: {', '.join(self.langs)}")
        return self


class TextKernelSource(KernelSource):
    """A complete kernel whose text is held in Python (generated kernels, tests). `cube_dim` is
    the workgroup size its text declares, where the caller knows it (a runtime that sets the
    block size at launch, as CUDA does, needs it); it is part of the id."""

    def __init__(self, name: str, lang: str, text: str, entry: str | None = None,
                 cube_dim: CubeDim | None = None):
        self.name = name
        self._lang = _check_lang(lang, f"kernel {name!r}")
        self.text = text
        self.entry = entry or DEFAULT_ENTRY[lang]
        self.cube_dim = cube_dim
        self._id: KernelId | None = None

    def source(self) -> SourceTemplate:
        return SourceTemplate(self.text, self.name, f"{self._lang} text")

    def lang(self) -> str:
        return self._lang

    def complete(self) -> str:
        """The text the runtime compiles."""
        return self.text

    def id(self) -> KernelId:
        """The id of the text, entry and workgroup size (computed once)."""
        if self._id is None:
            settings = {"entry": self.entry}
            if self.cube_dim is not None:
                settings["cube_dim"] = (self.cube_dim.x, self.cube_dim.y, self.cube_dim.z)
            self._id = KernelId.of(self.name, self._lang, self.text, **settings)
        return self._id

    def __repr__(self) -> str:
        return f"TextKernelSource({self.name!r}, {self._lang!r})"


class FileKernelSource(KernelSource):
    """A kernel read from a file on first use and again whenever the file changes."""

    def __init__(self, name: str, lang: str, path: Path, entry: str | None = None):
        self.name = name
        self._lang = _check_lang(lang, f"kernel {name!r}")
        self.path = Path(path)
        self.entry = entry or DEFAULT_ENTRY[lang]
        self._stamp: tuple[int, int] | None = None
        self._text = ""

    def read(self) -> str:
        """The file's text; re-read when its modification time or size changed."""
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                self._text = self.path.read_text(encoding="utf-8")
                self._stamp = stamp
        except OSError as e:
            raise LazytError(f"kernel {self.name!r}: cannot read its {self._lang} source "
                             f"{self.path}: {e.strerror or e}") from None
        return self._text

    def source(self) -> SourceTemplate:
        return SourceTemplate(self.read(), self.name, str(self.path))

    def lang(self) -> str:
        return self._lang

    def id(self) -> KernelId:
        """The id of the raw text (placeholders unfilled); `SourceKernel` ids the filled one."""
        return KernelId.of(self.name, self._lang, self.read(), entry=self.entry)

    def __repr__(self) -> str:
        return f"FileKernelSource({self.name!r}, {self._lang!r}, {str(self.path)!r})"


class KernelSources:
    """One kernel written in several languages; `for_lang(lang)` picks the runtime's."""

    def __init__(self, name: str, sources: Mapping[str, KernelSource]):
        self.name = name
        self._sources = dict(sources)

    @property
    def langs(self) -> tuple[str, ...]:
        return tuple(self._sources)

    def for_lang(self, lang: str) -> KernelSource:
        src = self._sources.get(lang)
        if src is None:
            raise KernelLanguageError(
                f"kernel {self.name!r} has no source for the {lang} runtime; it has sources for: "
                f"{', '.join(self.langs) or 'none'}")
        return src

    def __repr__(self) -> str:
        inner = ", ".join(f"{lang}={src!r}" for lang, src in self._sources.items())
        return f"KernelSources({self.name!r}, {inner})"


def kernel_source(wgsl: str | os.PathLike | None = "kernel.wgsl",
                  cuda: str | os.PathLike | None = "kernel.cu", name: str | None = None,
                  entry: str | None = None) -> KernelSources:
    """The kernel in these files, relative paths taken next to the calling module; pass `None` for
    a language the kernel has no source in. Files are read on first use, not here.

    `name` (default: the first file's stem) and `entry` (default: `DEFAULT_ENTRY` per language)
    are what errors and runtimes call the kernel.
    """
    caller = sys._getframe(1).f_globals.get("__file__")
    base = Path(caller).resolve().parent if caller else Path.cwd()
    files = {lang: f for lang, f in (("wgsl", wgsl), ("cuda", cuda)) if f is not None}
    if not files:
        raise LazytError("kernel_source: give at least one of wgsl=..., cuda=...")
    if name is None:
        name = Path(next(iter(files.values()))).stem
    return KernelSources(name, {lang: FileKernelSource(name, lang, base / Path(f), entry)
                                for lang, f in files.items()})


# ---------------------------------------------------------------------------------- elements
# How each lazyt dtype is stored in a kernel buffer, per language: (spelling, host numpy dtype).
_ELEM: dict[str, dict[str, tuple[str, np.dtype]]] = {
    "wgsl": {
        "float32": ("f32", np.dtype(np.float32)),
        "float16": ("f16", np.dtype(np.float16)),
        "uint8": ("i32", np.dtype(np.int32)),
        "int8": ("i32", np.dtype(np.int32)),
        "int16": ("i32", np.dtype(np.int32)),
        "int32": ("i32", np.dtype(np.int32)),
        "int64": ("i32", np.dtype(np.int32)),
        "bool": ("u32", np.dtype(np.uint32)),
    },
    "cuda": {
        "float32": ("float", np.dtype(np.float32)),
        "float16": ("__half", np.dtype(np.float16)),
        "float64": ("double", np.dtype(np.float64)),
        "uint8": ("unsigned char", np.dtype(np.uint8)),
        "int8": ("signed char", np.dtype(np.int8)),
        "int16": ("short", np.dtype(np.int16)),
        "int32": ("int", np.dtype(np.int32)),
        "int64": ("long long", np.dtype(np.int64)),
        "bool": ("unsigned int", np.dtype(np.uint32)),
    },
}

# What a source needs before it may use the element type, per language; kept on the first line
# (WGSL) or followed by `#line 1` (CUDA) so compiler line numbers still match the file.
_ELEM_PRELUDE = {
    ("wgsl", "float16"): ("enable f16; ", re.compile(r"^\s*enable\s+f16\s*;", re.M)),
    ("cuda", "float16"): ("#include <cuda_fp16.h>\n#line 1\n", re.compile(r"cuda_fp16\.h")),
}


def _elem_entry(dtype: Any, lang: str) -> tuple[DType, tuple[str, np.dtype]]:
    _check_lang(lang, "elem")
    d = dt.as_dtype(dtype)
    entry = _ELEM[lang].get(d.name)
    if entry is None:
        raise DTypeError(f"dtype {d.name} has no element type in {lang} kernels; {lang} supports "
                         + ", ".join(_ELEM[lang]))
    return d, entry


def elem_name(dtype: Any, lang: str) -> str:
    """How `{{ elem }}` is spelled for `dtype` in `lang` (f32 / float, ...)."""
    return _elem_entry(dtype, lang)[1][0]


def elem_storage(dtype: Any, lang: str) -> np.dtype:
    """The host numpy dtype of a `dtype` buffer in `lang` kernels (int64 is 32-bit in WGSL, and
    so are uint8, int8 and int16; bool is u32 in both)."""
    return _elem_entry(dtype, lang)[1][1]


def with_elem_prelude(text: str, dtype: Any, lang: str) -> str:
    """`text` with what `lang` needs before using `dtype` (`enable f16;`, `cuda_fp16.h`)."""
    d, _ = _elem_entry(dtype, lang)
    prelude = _ELEM_PRELUDE.get((lang, d.name))
    if prelude is None or prelude[1].search(text):
        return text
    return prelude[0] + text


# ---------------------------------------------------------------------------------- launch shape
def _positive(value: Any, what: str, allow_zero: bool = False) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ShapeError(f"{what} must be an int, got {value!r}")
    if value < (0 if allow_zero else 1):
        raise ShapeError(f"{what} must be {'>= 0' if allow_zero else '>= 1'}, got {value}")
    return int(value)


@dataclass(frozen=True)
class CubeDim:
    """The workgroup (CUDA: block) size; compiled into the kernel, so part of its `KernelId`."""

    x: int = 1
    y: int = 1
    z: int = 1

    def __post_init__(self):
        for axis in "xyz":
            object.__setattr__(self, axis, _positive(getattr(self, axis), f"CubeDim.{axis}"))

    @property
    def num_threads(self) -> int:
        return self.x * self.y * self.z

    def __str__(self) -> str:
        return f"({self.x}, {self.y}, {self.z})"


@dataclass(frozen=True)
class CubeCount:
    """The number of workgroups (CUDA: the grid) of one launch."""

    x: int
    y: int = 1
    z: int = 1

    def __post_init__(self):
        for axis in "xyz":
            object.__setattr__(self, axis,
                               _positive(getattr(self, axis), f"CubeCount.{axis}", allow_zero=True))

    @property
    def total(self) -> int:
        return self.x * self.y * self.z

    @classmethod
    def split(cls, count: int, max_per_dim: int = MAX_CUBES_PER_DIM) -> CubeCount:
        """At least `count` workgroups laid over x, then y, then z, none above `max_per_dim`.

        A kernel recovers the linear workgroup index as `x + y * count.x + z * count.x * count.y`
        and skips the (fewer than `y * z`) indices at or past `count`.
        """
        count = _positive(count, "CubeCount.split count", allow_zero=True)
        max_per_dim = _positive(max_per_dim, "CubeCount.split max_per_dim")
        if count > max_per_dim ** 3:
            raise ShapeError(f"CubeCount.split: {count} workgroups do not fit in {max_per_dim}^3")
        if count <= max_per_dim:
            return cls(count)
        rows = -(-count // max_per_dim)             # rows of at most max_per_dim workgroups
        z = -(-rows // max_per_dim)
        y = -(-rows // z)
        x = -(-count // (y * z))
        return cls(x, y, z)

    @classmethod
    def for_elements(cls, num_elements: int, cube_dim: CubeDim,
                     max_per_dim: int = MAX_CUBES_PER_DIM) -> CubeCount:
        """Enough workgroups of `cube_dim` for one thread per element, split as `split` does."""
        n = _positive(num_elements, "CubeCount.for_elements num_elements", allow_zero=True)
        return cls.split(-(-n // cube_dim.num_threads), max_per_dim)


# ------------------------------------------------------------------------- launchable kernel
_WORKGROUP_PLACEHOLDERS = ("workgroup_size_x", "workgroup_size_y", "workgroup_size_z")


class SourceKernel(KernelSource):
    """A kernel source filled for one launch: `{{ workgroup_size_x|y|z }}` from `cube_dim`,
    `{{ elem }}` from `dtype`, other placeholders from `values`. Its id hashes the completed text.

    Built on a several-language `KernelSources`, it is resolved with `for_lang(runtime lang)`.
    """

    def __init__(self, source: KernelSource | KernelSources, cube_dim: CubeDim,
                 dtype: Any = None, values: Mapping[str, Any] | None = None):
        if not isinstance(cube_dim, CubeDim):
            raise ShapeError(f"SourceKernel: cube_dim must be a CubeDim, got {cube_dim!r}")
        self.inner = source
        self.cube_dim = cube_dim
        self.dtype = None if dtype is None else dt.as_dtype(dtype)
        self.values = dict(values or {})
        self.name = source.name
        self._done: tuple[str, KernelId] | None = None
        self._done_raw: str | None = None

    @property
    def entry(self) -> str:  # type: ignore[override]
        return self._resolved().entry

    @property
    def langs(self) -> tuple[str, ...]:
        return self.inner.langs

    def _resolved(self) -> KernelSource:
        if isinstance(self.inner, KernelSources):
            raise KernelLanguageError(
                f"kernel {self.name!r} has sources for {', '.join(self.inner.langs)}; pick the "
                f"runtime's with SourceKernel.for_lang(lang) before compiling it")
        return self.inner

    def for_lang(self, lang: str) -> SourceKernel:
        inner = self.inner.for_lang(lang)
        if inner is self.inner:
            return self
        return SourceKernel(inner, self.cube_dim, self.dtype, self.values)

    def lang(self) -> str:
        return self._resolved().lang()

    def source(self) -> SourceTemplate:
        template = self._resolved().source()
        present = template.placeholders
        for axis, key in zip((self.cube_dim.x, self.cube_dim.y, self.cube_dim.z),
                             _WORKGROUP_PLACEHOLDERS):
            if key in present:
                template = template.register(key, axis)
        if self.dtype is not None and "elem" in present:
            template = template.register("elem", elem_name(self.dtype, self.lang()))
        for key, value in self.values.items():
            template = template.register(key, value)
        return template

    def complete(self) -> str:
        """The text the runtime compiles (with the element type's prelude, if it needs one)."""
        return self._complete()[0]

    def id(self) -> KernelId:
        return self._complete()[1]

    def _complete(self) -> tuple[str, KernelId]:
        # A file source can change on disk: reuse the cached result only for the same raw text.
        inner = self._resolved()
        raw = inner.read() if isinstance(inner, FileKernelSource) else None
        if self._done is not None and (raw is None or raw == self._done_raw):
            return self._done
        text = self.source().complete()
        if self.dtype is not None:
            text = with_elem_prelude(text, self.dtype, self.lang())
        settings = {"cube_dim": (self.cube_dim.x, self.cube_dim.y, self.cube_dim.z),
                    "entry": inner.entry}
        self._done = (text, KernelId.of(self.name, self.lang(), text, **settings))
        self._done_raw = raw
        return self._done

    def __repr__(self) -> str:
        dtype = f", dtype={self.dtype!r}" if self.dtype is not None else ""
        return f"SourceKernel({self.inner!r}, cube_dim={self.cube_dim}{dtype})"


@lru_cache(maxsize=1024)
def filled_kernel(directory: Path, file: str, lang: str, entry: str | None = None,
                  workgroup_size: int = 1, values: tuple = ()) -> TextKernelSource:
    """The kernel file `directory / file` filled for one configuration (`values`: sorted
    (placeholder, value) pairs) as a complete `TextKernelSource`, with the id `SourceKernel`
    gives it. A plain memo: each configuration's file is read and filled once per process."""
    source = FileKernelSource(Path(file).stem, lang, Path(directory) / file, entry)
    cube_dim = CubeDim(workgroup_size)
    text = SourceKernel(source, cube_dim, values=dict(values)).complete()
    return TextKernelSource(source.name, lang, text, source.entry, cube_dim)


# ---------------------------------------------------------------------------------- info buffer
_U32_MAX = 2 ** 32 - 1


def build_info(tensors: Sequence[Any]) -> np.ndarray:
    """The u32 layout buffer kernels read: `[rank] + strides of each tensor + shapes of each`
    (strides in elements). For `[lhs, rhs, out]`: rank, lhs strides, rhs strides, out strides,
    lhs shape, rhs shape, out shape. Tensors need `.shape`, `.strides` and, optionally,
    `.offset`."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("build_info: needs at least one tensor")
    shapes = [tuple(int(s) for s in t.shape) for t in tensors]
    strides = [tuple(int(s) for s in t.strides) for t in tensors]
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise ShapeError(f"build_info: all tensors must have the same rank, got shapes "
                         f"{', '.join(str(s) for s in shapes)}")
    for i, (t, shape, stride) in enumerate(zip(tensors, shapes, strides)):
        if len(stride) != rank:
            raise ShapeError(f"build_info: tensor {i} has shape {shape} but strides {stride}")
        offset = int(getattr(t, "offset", 0) or 0)
        if offset:
            raise ShapeError(f"build_info: tensor {i} (shape {shape}) is a view starting {offset} "
                             f"elements into its buffer; make it contiguous first "
                             f"(into_contiguous) so kernels can index it from 0")
        if any(v < 0 or v > _U32_MAX for v in shape + stride):
            raise ShapeError(f"build_info: tensor {i} has shape {shape} and strides {stride}; "
                             f"kernels need every value in 0..2^32-1")
    return np.array([rank, *(v for s in strides for v in s), *(v for s in shapes for v in s)],
                    dtype=np.uint32)


__all__ = [
    "LANGS", "DEFAULT_ENTRY", "MAX_CUBES_PER_DIM", "SourceTemplate", "KernelId", "KernelSource",
    "TextKernelSource", "FileKernelSource", "KernelSources", "kernel_source", "elem_name",
    "elem_storage", "with_elem_prelude", "CubeDim", "CubeCount", "SourceKernel", "filled_kernel",
    "build_info",
]
