"""Finding kernel repos offline and the kernel classes in them.

A repo is named `"owner/name"` and found as a Python package directory `<root>/<owner>/<name>/`
(with an `__init__.py`) under the roots of the `kernel_paths=` argument and of the
`LAZYT_KERNEL_PATH` environment variable (`os.pathsep`-separated), in that order; or it is an
importable module path (`"my_pkg.kernels"`). Its module exposes `layers`, a class or namespace
holding the kernel classes; each kernel class `K` comes with a `KLayout` class defined in the
same module.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path
from types import ModuleType

from .. import config
from ..nn.module import Module
from .errors import KernelHubError

ENV_VAR = "LAZYT_KERNEL_PATH"
_LOADED: dict = {}  # resolved directory -> module


def kernel_roots(kernel_paths=None) -> list:
    """The directories searched for `<owner>/<name>/` repos: `kernel_paths` first, then
    `LAZYT_KERNEL_PATH`."""
    if kernel_paths is None:
        given = []
    elif isinstance(kernel_paths, (str, os.PathLike)):
        given = [kernel_paths]
    else:
        given = list(kernel_paths)
    env = config.kernel_path()
    return [Path(p) for p in given + env]


def _import_directory(directory: Path, repo: str) -> ModuleType:
    key = str(directory.resolve())
    mod = _LOADED.get(key)
    if mod is not None:
        return mod
    slug = re.sub(r"\W", "_", repo)
    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    name = f"_lazyt_kernel_repo_{slug}_{digest}"
    spec = importlib.util.spec_from_file_location(
        name, directory / "__init__.py", submodule_search_locations=[str(directory)])
    if spec is None or spec.loader is None:  # pragma: no cover - a directory with __init__.py
        raise KernelHubError(f"kernel repo {repo!r}: cannot import {directory}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    _LOADED[key] = mod
    return mod


def load_repo(repo: str, kernel_paths=None) -> ModuleType:
    """The module of kernel repo `repo` ("owner/name" directory, or an importable module)."""
    if not isinstance(repo, str) or not repo:
        raise KernelHubError(f"kernel repo must be a non-empty string, got {repo!r}")
    roots = kernel_roots(kernel_paths)
    if "/" in repo:
        owner, _, name = repo.partition("/")
        if not owner or not name or "/" in name:
            raise KernelHubError(f"kernel repo {repo!r}: expected 'owner/name'")
        for root in roots:
            d = root / owner / name
            if (d / "__init__.py").is_file():
                return _import_directory(d, repo)
        looked = ", ".join(str(r / owner / name) for r in roots) or "no roots given"
        raise KernelHubError(f"kernel repo {repo!r} not found (looked for __init__.py in: "
                             f"{looked}); add its root directory to {ENV_VAR} or pass "
                             "kernel_paths=[...]")
    try:
        return importlib.import_module(repo)
    except ModuleNotFoundError as e:
        if e.name is not None and not repo.startswith(e.name):
            raise  # the repo exists but fails to import one of its own dependencies
        raise KernelHubError(f"kernel repo {repo!r}: no directory repo 'owner/name' and no "
                             f"importable module of that name") from None


def parse_spec(spec: str) -> tuple:
    """`"repo:ClassName"` -> (repo, ClassName)."""
    if not isinstance(spec, str) or ":" not in spec:
        raise KernelHubError(f"kernel {spec!r}: expected 'repo:ClassName', e.g. "
                             "'owner/my-kernels:CustomRMSNorm'")
    repo, _, cls_name = spec.rpartition(":")
    if not repo or not cls_name.isidentifier():
        raise KernelHubError(f"kernel {spec!r}: expected 'repo:ClassName'")
    return repo, cls_name


def _defines_init(cls: type) -> type | None:
    for klass in cls.__mro__:
        if klass in (Module, object):
            continue
        if "__init__" in vars(klass):
            return klass
    return None


def load_kernel(spec: str, kernel_paths=None) -> tuple:
    """(kernel class, Layout class) for `"repo:ClassName"`, both checked."""
    repo, cls_name = parse_spec(spec)
    module = load_repo(repo, kernel_paths)
    layers = getattr(module, "layers", None)
    if layers is None:
        raise KernelHubError(f"kernel repo {repo!r} ({getattr(module, '__file__', module)}) "
                             "exposes no `layers` class or namespace holding its kernels")
    kernel = getattr(layers, cls_name, None)
    if kernel is None:
        have = sorted(n for n in dir(layers) if not n.startswith("_"))
        raise KernelHubError(f"kernel repo {repo!r}: `layers` has no {cls_name!r}; it has "
                             f"{', '.join(have) or 'nothing'}")
    if not inspect.isclass(kernel) or not callable(getattr(kernel, "forward", None)):
        raise KernelHubError(f"kernel {spec!r}: {cls_name} must be a class with a forward "
                             "method")
    owner = _defines_init(kernel)
    if owner is not None:
        raise KernelHubError(f"kernel {spec!r}: {cls_name} must be stateless, but "
                             f"{owner.__name__} defines __init__; parameters belong in "
                             f"{cls_name}Layout")
    home = sys.modules.get(kernel.__module__)
    layout_name = cls_name + "Layout"
    layout = getattr(home, layout_name, None)
    if layout is None:
        raise KernelHubError(f"kernel {spec!r}: no {layout_name} class in module "
                             f"{kernel.__module__!r}, where {cls_name} is defined (the Layout "
                             "holds the kernel's parameters and must sit next to it)")
    if not (inspect.isclass(layout) and issubclass(layout, Module)):
        raise KernelHubError(f"kernel {spec!r}: {layout_name} must be a lazyt.nn.Module "
                             "subclass")
    return kernel, layout
