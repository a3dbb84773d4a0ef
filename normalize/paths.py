"""Resolve file references of a source asset without ever leaving the source root.

A reference may be relative to the referring file, `package://name/rest` (looked up in configured
package roots, which are trusted, then by walking up from the referring file to the source root:
a folder named `name`, or whose ROS package.xml declares it), or `file://` (an absolute path,
accepted only inside the source root). Every resolved path is checked after
symlinks are followed; anything outside the root raises `AssetError` with a `path.*` code.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from urllib.parse import unquote, urlparse

from normalize import inputs
from normalize.errors import AssetError
from normalize.limits import check_file_name

_real_dirs: ContextVar[dict[str, str] | None] = ContextVar("arena_real_dirs", default=None)


@contextlib.contextmanager
def memoized_realpaths() -> Iterator[None]:
    """Inside the block, the real path of every folder is found once: for reading one file
    whose many references share a few folders (a URDF with hundreds of meshes). The file
    system is assumed not to change during the block; the last component of every path is
    still checked for a symlink each time."""
    token = _real_dirs.set({})
    try:
        yield
    finally:
        _real_dirs.reset(token)


def realpath(path: str | os.PathLike) -> str:
    """`os.path.realpath(path)`, using the folder memo of `memoized_realpaths` when active."""
    memo = _real_dirs.get()
    path = os.fspath(path)
    if memo is None:
        return os.path.realpath(path)
    folder, name = os.path.split(path)
    if name in ("", ".", "..") or not folder:
        return os.path.realpath(path)
    real_folder = memo.get(folder)
    if real_folder is None:
        real_folder = memo[folder] = os.path.realpath(folder)
    real = os.path.join(real_folder, name)
    return os.path.realpath(real) if os.path.islink(real) else real


def is_inside(path: Path, root: Path) -> bool:
    """True when `path`, with every symlink followed, lies inside `root`."""
    real = realpath(path)
    real_root = realpath(root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def confine(
    path: Path, root: Path, *, referrer: str | None = None, element: str | None = None
) -> Path:
    """`path` itself if it stays inside `root` once symlinks are followed, else `AssetError`:
    `path.symlink_escape` when the path lies inside the root as written but a symlink leads out,
    `path.outside_root` otherwise."""
    if not is_inside(path, root):
        written = os.path.normpath(os.path.abspath(path))
        roots = {os.path.normpath(os.path.abspath(root)), realpath(root)}
        via_link = any(written == r or written.startswith(r + os.sep) for r in roots)
        raise AssetError(
            f"{path} is outside the source root {root}"
            + (" (a symlink leads out of the root)" if via_link else ""),
            code="path.symlink_escape" if via_link else "path.outside_root",
            stage="resolve",
            path=referrer,
            element=element,
            target=str(path),
        )
    inputs.record(path)
    return path


def _ancestors_within(start: Path, root: Path):
    """`start` and its parents up to and including `root`."""
    real_root = realpath(root)
    directory = start
    while True:
        yield directory
        if realpath(directory) == real_root or directory.parent == directory:
            return
        directory = directory.parent


_PACKAGE_NAME = re.compile(rb"<name>\s*([^<\s]+)\s*</name>")


def package_name(folder: Path) -> str | None:
    """The `<name>` a ROS `package.xml` in `folder` declares (read from its first 64 KiB)."""
    try:
        with open(folder / "package.xml", "rb") as handle:
            match = _PACKAGE_NAME.search(handle.read(65536))
    except OSError:
        return None
    return match.group(1).decode("utf-8", "replace") if match else None


def _is_package(folder: Path, package: str) -> bool:
    return folder.name == package or package_name(folder) == package


def package_folders(
    package: str, *, referrer: Path, root: Path, package_roots: Sequence[Path] = ()
) -> tuple[list[Path], list[Path]]:
    """(folders that are package `package`, every folder looked at), in lookup order: in each
    configured package root, the root itself or its subfolder `package`; then from the
    referring file's folder up to the source root, each folder itself (named `package` or
    with a package.xml declaring it) or its subfolder `package`."""
    found, looked = [], []
    bases = [Path(r) for r in package_roots]
    bases += list(_ancestors_within(referrer.parent, root))
    for base in bases:
        for folder in (base, base / package):
            if folder in looked:
                continue
            looked.append(folder)
            if folder.is_dir() and _is_package(folder, package):
                found.append(folder)
    return found, looked


def resolve_reference(
    reference: str,
    *,
    referrer: Path,
    root: Path,
    package_roots: Sequence[Path] = (),
    element: str | None = None,
) -> Path:
    """The file a reference in `referrer` points to, confined to `root`.

    A `package://name/rest` target is `rest` in the first folder that is package `name`
    (`package_folders`); one in a configured package root may lie outside `root` (the roots
    are trusted explicitly), every other one must stay inside it.

    Raises AssetError: `path.remote` for URLs other than package:// and file://,
    `path.outside_root` / `path.symlink_escape` when the target leaves the root,
    `path.package_unresolved` when no folder is package `name` (the message names the package
    and every folder looked at). The target is not required to exist; callers report missing
    files with their own code.
    """
    ref = reference.strip()
    check_file_name(ref, "referenced", referrer, element)  # before any stat can fail on it
    where = {"path": str(referrer), "element": element}
    parsed = urlparse(ref)
    scheme = parsed.scheme.lower()
    if scheme == "package":
        package = parsed.netloc
        rest = unquote(parsed.path).lstrip("/")
        found, looked = package_folders(
            package, referrer=referrer, root=root, package_roots=package_roots
        )
        if not found:
            raise AssetError(
                f"package {package!r} of {ref!r} cannot be resolved: no folder is that package "
                f"(looked in {', '.join(str(f) for f in looked)}); pass its folder with "
                "--package-root (arena validate) or package_roots (sources file)",
                code="path.package_unresolved",
                stage="resolve",
                hint=f"pass --package-root DIR, DIR being the folder of package {package!r} or "
                "the folder holding it",
                **where,
            )
        targets = [folder / rest for folder in found]
        target = next((t for t in targets if t.exists()), targets[0])
        trusted = [r for r in package_roots if is_inside(target, r)]
        confine_to = trusted[0] if trusted else root
        return confine(target, confine_to, referrer=str(referrer), element=element)
    if scheme == "file":
        target = Path(unquote(parsed.path))
        return confine(target, root, referrer=str(referrer), element=element)
    if scheme and len(scheme) > 1:
        raise AssetError(
            f"remote or unsupported reference {ref!r}", code="path.remote", stage="resolve", **where
        )
    target = Path(ref)
    if not target.is_absolute():
        target = referrer.parent / target
    return confine(target, root, referrer=str(referrer), element=element)
