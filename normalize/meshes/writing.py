"""OBJ output in an object's mesh folder: unique names (`OutputNames`), OBJ copies with their
material libraries and textures, other formats converted to OBJ."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from normalize.changes import Change
from normalize.meshes import store
from normalize.meshes.distinct import used_vertices
from normalize.meshes.limits import check_texture
from normalize.meshes.loading import load_mesh
from normalize.meshes.reading import _confined_file, _stat_key, read_mesh_bytes
from normalize.meshes.store import _disk_path, _disk_read, _disk_write
from normalize.timing import timed

_MTLLIB = re.compile(rb"^[ \t]*mtllib[ \t]+([^\r\n]*?)[ \t]*(\r?\n|\Z)", re.MULTILINE)
_TEXTURE_KEYS = {b"bump", b"disp", b"decal", b"refl", b"norm"}


class OutputNames:
    """Unique file names inside one object's mesh folder, stable per source file."""

    def __init__(self):
        self.by_source: dict[tuple[str, str], str] = {}
        self.used: set[str] = set()

    def name(self, source: Path | str, suffix: str, stem: str | None = None) -> tuple[str, bool]:
        """(name, new) for the output of `source` with `suffix`; new is False when already
        allocated (the file is then already written)."""
        key = (str(source), suffix)
        if key in self.by_source:
            return self.by_source[key], False
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem or Path(str(source)).stem) or "mesh"
        candidate, n = f"{stem}{suffix}", 0
        while candidate.lower() in self.used:
            n += 1
            candidate = f"{stem}_{n}{suffix}"
        self.used.add(candidate.lower())
        self.by_source[key] = candidate
        return candidate, True


def _copy_mtl(
    mtl: Path, out_dir: Path, names: OutputNames, root: Path, changes: list[Change]
) -> str:
    """Copy a material library with its textures into `out_dir`; returns its output name."""
    name, new = names.name(mtl, ".mtl")
    if not new:
        return name
    lines = []
    for line in read_mesh_bytes(mtl, what="material library").splitlines():
        parts = line.split()
        key = parts[0].lower() if parts else b""
        if len(parts) >= 2 and (key.startswith(b"map_") or key in _TEXTURE_KEYS):
            reference = parts[-1].decode("utf-8", "replace")
            texture = _confined_file(reference, mtl.parent, root)
            if texture is None:
                changes.append(
                    Change(
                        "texture.missing",
                        f"texture {reference} named by {mtl.name} does not exist; "
                        "its material line was dropped",
                        element=f"file {mtl.name}",
                    )
                )
                continue
            tex_name, tex_new = names.name(texture, texture.suffix.lower())
            if tex_new:
                image = read_mesh_bytes(texture, what="texture")
                check_texture(image, texture, f"file {mtl.name}")
                (out_dir / tex_name).write_bytes(image)
            line = b" ".join([*parts[:-1], tex_name.encode()])
        lines.append(line)
    (out_dir / name).write_bytes(b"\n".join(lines) + b"\n")
    return name


def write_obj_copy(
    source: Path, out_dir: Path, names: OutputNames, root: Path, changes: list[Change]
) -> str:
    """Copy an OBJ file (geometry lines untouched) with its material libraries and textures,
    rewriting their references to the copied names; returns the OBJ's output name."""
    name, new = names.name(source, ".obj")
    if not new:
        return name

    def material(match: re.Match) -> bytes:
        reference = match.group(1).decode("utf-8", "replace")
        mtl = _confined_file(reference, source.parent, root)
        if mtl is None:
            changes.append(
                Change(
                    "mesh.material_missing",
                    f"material library {reference} named by {source.name} does not exist; the "
                    "reference was dropped",
                    element=f"file {source.name}",
                )
            )
            return b""
        copied = _copy_mtl(mtl, out_dir, names, root, changes)
        return b"mtllib " + copied.encode() + match.group(2)

    with timed("meshes"):
        data = _with_mtllib_replaced(read_mesh_bytes(source), material)
        completed = completed_texcoords(data)
        if completed is not None:
            data = completed
            changes.append(
                Change(
                    "mesh.texcoords_completed",
                    f"{source.name} has faces with texture coordinates and faces without "
                    "(MuJoCo then discards them all, with a warning): the faces without now "
                    "name a texture coordinate (0, 0) added first",
                    element=f"file {source.name}",
                )
            )
        (out_dir / name).write_bytes(data)
    return name


def _with_mtllib_replaced(data: bytes, material) -> bytes:
    """`_MTLLIB.sub(material, data)`, trying the pattern only at the start of lines holding
    "mtllib" (the pattern alone is tried at every byte of the file)."""
    parts, end = [], 0
    at = data.find(b"mtllib")
    while at != -1:
        match = _MTLLIB.match(data, data.rfind(b"\n", 0, at) + 1)
        if match is not None:
            parts += [data[end : match.start()], material(match)]
            end = match.end()
        at = data.find(b"mtllib", max(at + 1, end))
    return b"".join([*parts, data[end:]]) if parts else data


_FACE_WITHOUT_UV = re.compile(rb"^[ \t]*f[ \t]+[^/\s]+(\s|//)", re.MULTILINE)
_FACE_WITH_UV = re.compile(rb"^[ \t]*f[ \t]+[^/\s]+/[^/\s]", re.MULTILINE)


def completed_texcoords(data: bytes) -> bytes | None:
    """OBJ text where every face names a texture coordinate, when some do and some do not
    (None otherwise): a `vt 0 0` is added as the first texture coordinate, positive texture
    indices move up by one and faces without one name it."""
    if not (_FACE_WITHOUT_UV.search(data) and _FACE_WITH_UV.search(data)):
        return None
    out = [b"vt 0 0"]
    for line in data.splitlines():
        parts = line.split()
        if not parts or parts[0] != b"f":
            out.append(line)
            continue
        corners = []
        for token in parts[1:]:
            fields = token.split(b"/")
            uv = fields[1] if len(fields) > 1 else b""
            if not uv:
                uv = b"1"
            elif int(uv) > 0:
                uv = b"%d" % (int(uv) + 1)
            normal = b"/" + fields[2] if len(fields) > 2 else b""
            corners.append(fields[0] + b"/" + uv + normal)
        out.append(b"f " + b" ".join(corners))
    return b"\n".join(out) + b"\n"


def _obj_text(vertices: np.ndarray, faces: np.ndarray) -> str:
    """OBJ text of a triangle mesh; %.17g reads back to the same doubles."""
    v = ("v %.17g %.17g %.17g\n" * len(vertices)) % tuple(vertices.ravel().tolist())
    f = ("f %d %d %d\n" * len(faces)) % tuple((faces + 1).ravel().tolist())
    return v + f


def write_generated_obj(path: Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Write a mesh made here (a hull, a convex part, a primitive's mesh) as OBJ, and keep it
    as if it had been read: loading the file again (the USD writer, the checks) finds it by its
    status instead of parsing it. Kept only where the text reads back to exactly these arrays
    (`_obj_text` writes doubles exactly; trimesh drops vertices no face uses)."""
    data = _obj_text(vertices, faces).encode("utf-8")
    path.write_bytes(data)
    if len(faces) == 0 or len(used_vertices(faces)) != len(vertices):
        return
    mesh = store.Mesh(
        hashlib.sha256(data).hexdigest() + ".obj",
        np.array(vertices, dtype=float),
        np.array(faces, dtype=np.int64),
    )
    stat_key = _stat_key(path)
    if stat_key is not None:
        store._store(mesh)
        store._sha_by_stat[stat_key] = mesh.sha256


def write_obj_converted(source: Path, out_dir: Path, names: OutputNames, root: Path) -> str:
    """Write a non-OBJ mesh file as an OBJ holding its triangles (coordinates written exactly);
    returns the output name."""
    name, new = names.name(source, ".obj")
    if new:
        mesh = load_mesh(source, root=root)
        with timed("meshes"):
            stored = _disk_path(mesh.sha256, ".converted.obj")
            data = _disk_read(stored)
            if data is None:
                data = _obj_text(mesh.vertices, mesh.faces).encode("utf-8")
                _disk_write(stored, data)
            (out_dir / name).write_bytes(data)
    return name
