"""What a mesh file's bytes claim, checked before it is parsed: triangles counted
(`mesh.too_many_triangles`), texture sizes from image headers (`texture.too_large`), glTF
buffers against their declared lengths (`mesh.corrupt`)."""

from __future__ import annotations

import io
import json
import re
import urllib.parse
import warnings
from pathlib import Path

import numpy as np

from normalize.errors import AssetError
from normalize.meshes.reading import _confined_file, _corrupt, read_mesh_bytes
from normalize.paths import is_inside

#: Triangles (and a third of the vertices) of one mesh file, counted from its bytes before it
#: is parsed (`mesh.too_many_triangles`); real meshes have up to a few hundred thousand
MAX_MESH_TRIANGLES = 2_000_000
#: Pixels of one texture or height-field image, read from its header (`texture.too_large`):
#: a 30000 x 30000 PNG would take 3.6 GB decoded
MAX_TEXTURE_PIXELS = 8192 * 8192
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".tif", ".tiff", ".webp")

_OBJ_FACE = re.compile(rb"^f[ \t][^\n]*", re.MULTILINE)
#: bytes per face line above which an OBJ's faces are counted corner by corner: an n-gon is
#: n - 2 triangles, and one line of a million corners is a million triangles
OBJ_BYTES_PER_FACE = 256
_DAE_COUNT = re.compile(
    rb"<(?:triangles|polylist|polygons|trifans|tristrips)\b[^>]*?\bcount\s*=\s*[\"'](\d+)"
)
_DAE_TAG = re.compile(
    rb"<(/?)(geometry|node|visual_scene|instance_geometry|instance_node|instance_visual_scene|"
    rb"triangles|polylist|polygons|trifans|tristrips)\b([^>]*)>"
)
_DAE_ATTRIBUTE = re.compile(rb"\b(id|url|count)\s*=\s*[\"']([^\"']*)[\"']")
_DAE_PRIMITIVES = (b"triangles", b"polylist", b"polygons", b"trifans", b"tristrips")


def _collada_placed_triangles(data: bytes, cap: int) -> int:
    """The primitive counts of a COLLADA file multiplied out over its scene: every node placed
    by the scene (`<instance_visual_scene>`, else every visual scene) counts the geometries it
    instances, the nodes it instances (`<instance_node>`, by id) and its child nodes, so that
    nodes instancing nodes ten times over four levels count ten thousand times. Read from the
    tags with one linear scan, nothing parsed; an instance cycle counts once; every count is
    bounded by `cap` (the answer is min(count, cap))."""
    geometry: dict[bytes, int] = {}
    parts: list[list[tuple[str, object]]] = []  # per node: ("geometry"|"node", id) or ("child", i)
    node_ids: dict[bytes, int] = {}
    scenes: dict[bytes, list[int]] = {}
    chosen: list[bytes] = []
    stack: list[tuple[bytes, object]] = []  # open geometry / node / visual_scene elements
    for match in _DAE_TAG.finditer(data):
        closing, tag, rest = match.group(1), match.group(2), match.group(3)
        attributes = dict(_DAE_ATTRIBUTE.findall(rest))
        if closing:
            if stack and stack[-1][0] == tag:
                stack.pop()
            continue
        empty = rest.rstrip().endswith(b"/")
        inside = stack[-1] if stack else (None, None)
        if tag in _DAE_PRIMITIVES:
            if inside[0] == b"geometry" and attributes.get(b"count", b"").isdigit():
                key = inside[1]
                geometry[key] = min(cap, geometry.get(key, 0) + int(attributes[b"count"]))
        elif tag == b"geometry":
            if not empty:
                stack.append((tag, attributes.get(b"id", b"")))
        elif tag == b"visual_scene":
            key = attributes.get(b"id", b"")
            scenes.setdefault(key, [])
            if not empty:
                stack.append((tag, key))
        elif tag == b"node":
            index = len(parts)
            parts.append([])
            if b"id" in attributes:
                node_ids.setdefault(attributes[b"id"], index)
            if inside[0] == b"node":
                parts[inside[1]].append(("child", index))
            elif inside[0] == b"visual_scene":
                scenes[inside[1]].append(index)
            if not empty:
                stack.append((tag, index))
        elif tag == b"instance_visual_scene":
            chosen.append(attributes.get(b"url", b"").lstrip(b"#"))
        elif inside[0] == b"node":  # instance_geometry, instance_node
            kind = "geometry" if tag == b"instance_geometry" else "node"
            parts[inside[1]].append((kind, attributes.get(b"url", b"").lstrip(b"#")))

    counted: dict[int, int] = {}

    def node_count(root: int) -> int:  # depth first without recursion: nodes nest deeply
        todo, visiting = [root], set()
        while todo:
            index = todo[-1]
            if index in counted:
                todo.pop()
                continue
            children = [
                c
                for kind, target in parts[index]
                for c in (
                    [target]
                    if kind == "child"
                    else [node_ids[target]]
                    if kind == "node" and target in node_ids
                    else []
                )
            ]
            waiting = [c for c in children if c not in counted and c not in visiting]
            if index not in visiting and waiting:
                visiting.add(index)
                todo.extend(waiting)
                continue
            total = sum(geometry.get(t, 0) for kind, t in parts[index] if kind == "geometry")
            total += sum(counted.get(c, 0) for c in children)  # a cycle's back edge: 0
            counted[index] = min(cap, total)
            visiting.discard(index)
            todo.pop()
        return counted[root]

    roots = [i for key in (chosen or list(scenes)) for i in scenes.get(key, [])]
    return min(cap, sum(node_count(i) for i in roots))


def _gltf_json(data: bytes, suffix: str) -> dict | None:
    """The JSON document of a GLB or GLTF file, None when it cannot be read (trimesh then
    refuses the file)."""
    try:
        if suffix == ".glb":
            length, kind = int.from_bytes(data[12:16], "little"), data[16:20]
            if data[:4] != b"glTF" or kind != b"JSON":
                return None
            data = data[20 : 20 + length]
        document = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


def _gltf_triangles(document: dict) -> int:
    """Triangles a glTF document makes: each mesh's primitives, once per node that places it."""
    accessors = document.get("accessors") or []

    def count(index) -> int:
        if isinstance(index, int) and 0 <= index < len(accessors):
            accessor = accessors[index]
            if isinstance(accessor, dict) and isinstance(accessor.get("count"), int):
                return accessor["count"]
        return 0

    per_mesh = []
    for mesh in document.get("meshes") or []:
        total = 0
        for primitive in (mesh or {}).get("primitives") or [] if isinstance(mesh, dict) else []:
            if not isinstance(primitive, dict):
                continue
            attributes = primitive.get("attributes") or {}
            corners = count(primitive.get("indices")) or count(attributes.get("POSITION"))
            total += corners // 3
        per_mesh.append(total)
    nodes = [n for n in document.get("nodes") or [] if isinstance(n, dict) and "mesh" in n]
    if not nodes:
        return sum(per_mesh)
    meshes = [n["mesh"] for n in nodes]
    return sum(per_mesh[m] for m in meshes if isinstance(m, int) and 0 <= m < len(per_mesh))


def counted_triangles(data: bytes, suffix: str) -> int:
    """A cheap lower bound on the triangles (or a third of the vertices, if more) a mesh
    file's bytes make, without parsing them: OBJ face and vertex lines, the binary STL count or
    ASCII facets, COLLADA primitive counts (multiplied out over the nodes that place them),
    glTF accessor counts per placed mesh."""
    if suffix == ".obj":
        faces = data.count(b"\nf ") + data.startswith(b"f ")
        vertices = data.count(b"\nv ") + data.startswith(b"v ")
        if len(data) > OBJ_BYTES_PER_FACE * max(faces, 1):  # long face lines: polygons
            faces = sum(max(1, len(m.split()) - 3) for m in _OBJ_FACE.findall(data))
        return max(faces, vertices // 3)
    if suffix == ".stl":
        binary = int.from_bytes(data[80:84], "little") if len(data) >= 84 else -1
        if len(data) == 84 + 50 * binary:
            return binary
        return data.count(b"endfacet")
    if suffix == ".dae":
        listed = sum(int(n) for n in _DAE_COUNT.findall(data))
        return max(listed, _collada_placed_triangles(data, MAX_MESH_TRIANGLES + 1))
    if suffix in (".glb", ".gltf"):
        document = _gltf_json(data, suffix)
        return 0 if document is None else _gltf_triangles(document)
    if suffix == ".msh":
        counts = _msh_counts(data)
        return 0 if counts is None else max(counts[3], counts[0] // 3)
    return 0


def check_triangles(data: bytes, path: Path, element: str | None = None) -> None:
    """`mesh.too_many_triangles` when the file counts more than MAX_MESH_TRIANGLES."""
    triangles = counted_triangles(data, path.suffix.lower())
    if triangles > MAX_MESH_TRIANGLES:
        raise AssetError(
            f"mesh {path.name} has at least {triangles} triangles (or a third as many "
            f"vertices), above the limit of {MAX_MESH_TRIANGLES} (see docs/limits.md)",
            code="mesh.too_many_triangles",
            stage="mesh",
            path=str(path),
            element=element,
        )


def check_texture(data: bytes, path: Path, element: str | None = None, stage: str = "mesh") -> None:
    """`texture.too_large` when the image header of `data` claims more than
    MAX_TEXTURE_PIXELS pixels. Only the header is read (PIL's Image.open decodes nothing);
    bytes PIL does not know are left to whoever reads them."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
        size = f"{width} x {height}"
    except Image.DecompressionBombError:  # PIL's own bound, far above ours
        width, height, size = MAX_TEXTURE_PIXELS + 1, 1, "more than 2 x Image.MAX_IMAGE_PIXELS"
    except Exception:  # not an image PIL knows: nothing claimed
        return
    if width * height > MAX_TEXTURE_PIXELS:
        raise AssetError(
            f"texture {path.name} is {size} pixels, above the limit of "
            f"{MAX_TEXTURE_PIXELS} pixels (see docs/limits.md); it was not decoded",
            code="texture.too_large",
            stage=stage,
            path=str(path),
            element=element,
        )


def _check_gltf_images(data: bytes, path: Path, root: Path | None, element) -> None:
    """`check_texture` on every image of a glTF file: embedded in a GLB buffer view, or a
    file beside it (read through `read_mesh_bytes`, confined)."""
    suffix = path.suffix.lower()
    document = _gltf_json(data, suffix)
    if document is None:
        return
    views = document.get("bufferViews") or []
    binary_start = None
    if suffix == ".glb":
        json_length = int.from_bytes(data[12:16], "little")
        binary_start = 20 + json_length + 8  # the BIN chunk's header is 8 bytes
    for image in document.get("images") or []:
        if not isinstance(image, dict):
            continue
        view = image.get("bufferView")
        if binary_start is not None and isinstance(view, int) and 0 <= view < len(views):
            v = views[view] if isinstance(views[view], dict) else {}
            offset = binary_start + int(v.get("byteOffset", 0) or 0)
            check_texture(data[offset : offset + int(v.get("byteLength", 0) or 0)], path, element)
        uri = image.get("uri")
        if isinstance(uri, str) and uri and not uri.startswith("data:"):
            confined_to = root if root is not None and is_inside(path, root) else path.parent
            texture = _confined_file(uri, path.parent, confined_to)
            if texture is not None and texture.suffix.lower() in IMAGE_SUFFIXES:
                check_texture(read_mesh_bytes(texture, element, "texture"), texture, element)


#: A GLB's BIN chunk may exceed its buffer's byteLength by this much padding (glTF 2.0, GLB).
GLB_PADDING = 3


def _held_bytes(buffer: dict, index: int, data: bytes, path: Path, root: Path | None, element):
    """How many bytes buffer `index` of a glTF file holds: its GLB BIN chunk, its data URI
    decoded, or the size of the file its URI names (None when that file does not exist)."""
    uri = buffer.get("uri")
    if uri is None:
        if path.suffix.lower() != ".glb" or index != 0:
            raise _corrupt(path, f"buffer {index} has no uri and no GLB BIN chunk", element)
        json_length = int.from_bytes(data[12:16], "little")
        return int.from_bytes(data[20 + json_length : 24 + json_length], "little")
    if not isinstance(uri, str):
        raise _corrupt(path, f"buffer {index} has a uri that is not a string", element)
    if uri.startswith("data:"):
        header, _, payload = uri.partition(",")
        if header.endswith(";base64"):
            payload = payload.rstrip()
            return len(payload) * 3 // 4 - (len(payload) - len(payload.rstrip("=")))
        return len(urllib.parse.unquote_to_bytes(payload))
    confined_to = root if root is not None and is_inside(path, root) else path.parent
    target = _confined_file(uri, path.parent, confined_to)
    return None if target is None else target.stat().st_size


def _check_gltf_buffers(data: bytes, path: Path, root: Path | None, element) -> None:
    """`mesh.corrupt` unless every buffer of a glTF file holds the byteLength it declares (a GLB
    BIN chunk up to GLB_PADDING bytes more) and every buffer view lies inside its buffer, as
    the glTF 2.0 specification requires. A buffer file that does not exist is left to the
    parser's own error."""
    document = _gltf_json(data, path.suffix.lower())
    if document is None:
        return
    declared = []
    for index, buffer in enumerate(document.get("buffers") or []):
        length = buffer.get("byteLength") if isinstance(buffer, dict) else None
        if not isinstance(length, int) or length < 1:
            raise _corrupt(path, f"buffer {index} declares no valid byteLength", element)
        held = _held_bytes(buffer, index, data, path, root, element)
        padding = GLB_PADDING if buffer.get("uri") is None else 0
        if held is not None and not length <= held <= length + padding:
            raise _corrupt(
                path, f"buffer {index} declares {length} bytes but holds {held}", element
            )
        declared.append(length)
    for index, view in enumerate(document.get("bufferViews") or []):
        view = view if isinstance(view, dict) else {}
        buffer, offset, length = (
            view.get("buffer"),
            view.get("byteOffset", 0),
            view.get("byteLength"),
        )
        if not (
            isinstance(buffer, int)
            and 0 <= buffer < len(declared)
            and isinstance(offset, int)
            and isinstance(length, int)
            and offset >= 0
            and length >= 1
            and offset + length <= declared[buffer]
        ):
            raise _corrupt(path, f"buffer view {index} does not lie inside its buffer", element)


MSH_HEADER = np.dtype("<i4")  # nvertex, nnormal, ntexcoord, nface


def _msh_counts(data: bytes) -> tuple[int, int, int, int] | None:
    """The four counts of a MuJoCo binary mesh's header, None when it has none."""
    if len(data) < 4 * MSH_HEADER.itemsize:
        return None
    return tuple(int(v) for v in np.frombuffer(data, MSH_HEADER, 4))
