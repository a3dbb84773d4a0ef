"""Mesh files found and read: references resolved inside the source root, the format and
size checked, `mesh.missing` and `mesh.corrupt` errors."""

from __future__ import annotations

import os
from pathlib import Path

from normalize import files, inputs
from normalize.changes import Change
from normalize.errors import AssetError
from normalize.meshes import store
from normalize.paths import is_inside, resolve_reference

MESH_SUFFIXES = (".obj", ".stl", ".dae", ".glb", ".gltf", ".msh")
MAX_MESH_BYTES = 256 * 1024 * 1024


def resolve_mesh_file(
    reference: str,
    *,
    referrer: Path,
    root: Path,
    package_roots=(),
    element: str | None = None,
    changes: list[Change],
    target: Path | None = None,
) -> Path | None:
    """The mesh file a reference in `referrer` names, confined to `root` (or `target` when the
    caller resolved it itself). A remote URL is never fetched: the shape is dropped with a record
    and None returned. Raises AssetError `mesh.format` for an unsupported format and
    `mesh.missing` for a file that is not there."""
    if target is None:
        try:
            target = resolve_reference(
                reference,
                referrer=referrer,
                root=root,
                package_roots=package_roots,
                element=element,
            )
        except AssetError as exc:
            if exc.code != "path.remote":
                raise
            changes.append(
                Change(
                    "mesh.remote_dropped",
                    f"mesh {reference!r} is a remote URL; it was not fetched and this shape was "
                    "dropped",
                    element=element,
                )
            )
            return None
    where = {"stage": "mesh", "path": str(referrer), "element": element}
    _check_format(target, f"mesh {reference!r}: format", where)
    if target.is_dir() or not files.regular_status(target):  # FIFO, device: file.not_regular
        raise AssetError(
            f"mesh {reference!r} does not exist (looked for {target})",
            code="mesh.missing",
            hint=files.nearest_file_hint(target, referrer.parent),
            target=str(target),
            **where,
        )
    return target


def _check_format(path: Path, what: str, where: dict) -> None:
    """Raise `mesh.format` when `path` is not one of MESH_SUFFIXES; `what` starts the message."""
    if path.suffix.lower() not in MESH_SUFFIXES:
        raise AssetError(
            f"{what} {path.suffix or '(none)'} is not supported ({', '.join(MESH_SUFFIXES)})",
            code="mesh.format",
            **where,
        )


def _stat_key(path: Path) -> tuple | None:
    """Identity of a file's current content without reading it (path, inode, size, mtime), so
    a mesh used again is not re-read to find its hash; None when it cannot be stat'ed."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_ino, st.st_size, st.st_mtime_ns)


def _corrupt(path: Path, why: str, element: str | None) -> AssetError:
    return AssetError(
        f"mesh {path.name} is corrupt: {why}",
        code="mesh.corrupt",
        stage="mesh",
        path=str(path),
        element=element,
    )


def read_mesh_bytes(path: Path, element: str | None = None, what: str = "mesh file") -> bytes:
    """The bytes of a mesh file (or of a material library, texture or GLTF buffer: `what`);
    `mesh.missing` when absent, `mesh.too_large` above the limit, `file.not_regular` for a
    FIFO or device (`normalize.files.read_regular`: never a blocking open)."""
    path = Path(path)
    generated = store._generated.get(str(path))
    if generated is not None:
        return generated
    inputs.record(path)
    try:
        if path.is_dir():
            raise FileNotFoundError(path)
        return files.read_regular(
            path,
            MAX_MESH_BYTES,
            too_large="mesh.too_large",
            stage="mesh",
            element=element,
            what=what,
        )
    except FileNotFoundError:
        raise AssetError(
            f"{what} {path.name} does not exist",
            code="mesh.missing",
            stage="mesh",
            path=str(path),
            element=element,
        ) from None


def _confined_file(reference: str, base: Path, root: Path) -> Path | None:
    """`base/reference` when it exists and stays inside `root`; None when it does not exist.
    Raises `path.outside_root` when it leaves the root."""
    ref = reference.strip().strip('"')
    target = Path(ref) if os.path.isabs(ref) else base / ref
    if not is_inside(target, root):
        raise AssetError(
            f"material or texture {ref!r} is outside the source root {root}",
            code="path.outside_root",
            stage="resolve",
            path=str(base),
        )
    inputs.record(target)
    return target if not target.is_dir() and files.regular_status(target) else None
