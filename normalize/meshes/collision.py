"""Collision meshes simulators accept: every collision mesh as its convex hull (what MuJoCo,
PyBullet and SAPIEN collide it as), meshes thinner than `MIN_COLLISION_THICKNESS` thickened into a
hull, flat visuals written as two layers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import trimesh
from scipy.spatial import ConvexHull, QhullError, cKDTree

from normalize.meshes.convex import _convex_hull
from normalize.meshes.distinct import distinct_rows, distinct_rows_inverse
from normalize.meshes.loading import load_mesh
from normalize.meshes.mass import MESH_DENSITY, SHELL_THICKNESS, mass_properties
from normalize.meshes.primitives import _primitive_surface
from normalize.meshes.store import RECENT_MESHES, Mesh, Recent
from normalize.meshes.writing import OutputNames, write_generated_obj
from normalize.timing import timed

#: A collision mesh thinner than this (m, across its convex hull) is written as its convex hull
#: grown by this much along every axis: simulators that collide convex hulls (MuJoCo) refuse a
#: flat, coplanar or near-degenerate point set.
MIN_COLLISION_THICKNESS = SHELL_THICKNESS
_hulls = Recent(RECENT_MESHES // 4)  # hull arrays: up to a few kB each
_thick_enough = Recent(RECENT_MESHES)  # (content, scale) -> True: collides as it is
_convex_hulls = Recent(RECENT_MESHES // 4)  # content -> hull arrays, or None when convex already


def hull_width(points: np.ndarray) -> float:
    """The extent of `points` along their thinnest principal direction (0 when they do not
    span three dimensions)."""
    return _distinct_points_width(distinct_rows(points))


def _distinct_points_width(unique: np.ndarray) -> float:
    """`hull_width` of points already made distinct (and sorted) by `distinct_rows`."""
    if len(unique) < 4:
        return 0.0
    centred = unique - unique.mean(axis=0)
    direction = np.linalg.svd(centred, full_matrices=False)[2][-1]
    projected = centred @ direction
    return float(projected.max() - projected.min())


def thinnest_move(
    points: np.ndarray, scale, toward: np.ndarray, thickness: float = MIN_COLLISION_THICKNESS
) -> np.ndarray:
    """The move (in the units of `points`) that is `thickness` long after `scale`, across the
    thinnest principal direction of `points` after `scale`, towards `toward` (a point in the
    frame and units of `points`): flat points with their copy moved by it are that thick."""
    scaled = points * scale
    centre = scaled.mean(axis=0)
    normal = np.linalg.svd(scaled - centre, full_matrices=False)[2][-1]
    if float(normal @ (toward * scale - centre)) < 0:
        normal = -normal
    return normal * thickness / scale


def inward_offset(
    normal: np.ndarray, mesh: Mesh, scale: np.ndarray, toward: np.ndarray
) -> np.ndarray:
    """The move (mesh units) by MIN_COLLISION_THICKNESS after `scale` across the plane of
    `normal` (mesh units), on the side of `toward` (a point in the mesh's frame, mesh units:
    its link's centre), so that thickening keeps the link's box."""
    direction = normal / scale  # a plane's normal after scaling
    direction /= np.linalg.norm(direction)
    if float(direction @ ((toward - mesh.vertices.mean(axis=0)) * scale)) < 0:
        direction = -direction
    return direction * MIN_COLLISION_THICKNESS / scale


def thickened_collision(
    mesh: Mesh, scale: np.ndarray, toward: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(vertices, faces) of the convex hull of `mesh` and of its copy moved by
    `MIN_COLLISION_THICKNESS` across its thinnest direction, towards `toward` (mesh frame; in
    the mesh's own units, so that after `scale` it is that thick), repeated while the hull is
    still thinner (a needle); a point or segment is grown by that much in every axis instead.
    None when the mesh at `scale` is thick enough to collide as it is. The result is thick
    enough, so normalizing it again leaves it alone. Cached by content, scale and moves."""
    scale = np.asarray(scale, dtype=float)
    thick_key = (mesh.sha256, tuple(scale.tolist()))
    if thick_key in _thick_enough:
        return None
    with timed("inertia"):
        unscaled = bool(np.all(scale == 1.0))  # then the mesh's own width, cached
        width = _mesh_width(mesh) if unscaled else hull_width(mesh.vertices * scale)
        if width >= MIN_COLLISION_THICKNESS:
            _thick_enough[thick_key] = True
            return None
        points = distinct_rows(mesh.vertices)
        moves = []
        for _ in range(3):  # a plate needs one move, a needle two
            if hull_width(points * scale) >= MIN_COLLISION_THICKNESS:
                break
            centred = points * scale - (points * scale).mean(axis=0)
            values, directions = np.linalg.svd(centred, full_matrices=False)[1:]
            if len(points) >= 3 and values[1] > FLAT_FRACTION * max(values[0], 1e-300):
                # not `thinnest_move`: the side is judged from the mesh's own centre and the
                # direction normalized again after scaling (`inward_offset`, as the visual's
                # second layer); either change would move the written hulls
                normal = directions[-1] * scale  # the thinnest direction, as a plane normal
                offsets = np.array([np.zeros(3), inward_offset(normal, mesh, scale, toward)])
            else:  # a point or a segment
                half = MIN_COLLISION_THICKNESS / 2.0 / np.abs(scale)
                offsets = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T * half
            moves.append(tuple(offsets.ravel().tolist()))
            points = distinct_rows((points[:, None, :] + offsets[None, :, :]).reshape(-1, 3))
        key = (mesh.sha256, tuple(scale.tolist()), tuple(moves))
        if key not in _hulls:
            hull = trimesh.convex.convex_hull(points)
            _hulls[key] = (np.asarray(hull.vertices, dtype=float), np.asarray(hull.faces))
        return _hulls[key]


def convex_collision(mesh: Mesh) -> tuple[np.ndarray, np.ndarray] | None:
    """(vertices, faces) of the convex hull of `mesh`, outward-wound, in its own units; None when
    `mesh` is convex already (closed, every vertex a corner of its hull and every face on its
    surface: writing its hull would change nothing; an open box's hull fills its opening) or
    qhull refuses its points (thinner than a plate: see `thickened_collision`). Cached by
    content."""
    if mesh.sha256 not in _convex_hulls:
        with timed("meshes"):
            _convex_hulls[mesh.sha256] = _convex_collision(mesh.vertices, mesh.faces)
    return _convex_hulls[mesh.sha256]


def _convex_collision(
    vertices: np.ndarray, faces: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """`convex_collision` of a mesh's `vertices` and `faces`, uncached."""
    points = distinct_rows(vertices)
    triangles = _convex_hull(points)
    if triangles is None:  # qhull refuses flat and degenerate point sets
        return None
    hull_vertices, hull_faces = distinct_rows_inverse(triangles.reshape(-1, 3))
    hull_faces = hull_faces.reshape(-1, 3)
    if (
        len(hull_vertices) == len(points)
        and _closed(vertices, faces)
        and _on_hull(vertices, faces, hull_vertices, hull_faces)
    ):
        return None
    return hull_vertices, hull_faces


def _closed(vertices: np.ndarray, faces: np.ndarray) -> bool:
    """Whether the triangles close a surface: with vertices merged by position and a triangle
    given on both sides counted once, every edge bounds exactly two triangles."""
    index = distinct_rows_inverse(vertices)[1]
    triangles = distinct_rows(np.sort(index[faces], axis=1))
    triangles = triangles[(triangles[:, 0] < triangles[:, 1]) & (triangles[:, 1] < triangles[:, 2])]
    if len(triangles) == 0:
        return False
    edges = distinct_rows_inverse(triangles[:, [0, 1, 1, 2, 0, 2]].reshape(-1, 2))[1]
    return bool(np.all(np.bincount(edges) == 2))


def settled_hull(points: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(vertices, faces) of the convex hull of `points` that `convex_collision` keeps as it is
    (qhull's hull of a thin point set can keep a point its next hull drops: hulled again until
    it settles, at most 3 times), so normalizing the written mesh again changes nothing; None
    when qhull refuses the points."""
    found = None
    for _ in range(3):
        triangles = _convex_hull(points)
        if triangles is None:
            return found
        vertices, faces = distinct_rows_inverse(triangles.reshape(-1, 3))
        found = vertices, faces.reshape(-1, 3)
        again = _convex_collision(*found)
        if again is None:
            return found
        points = again[0]
    return found


#: How far (over the mesh's box diagonal) a face centre may lie inside the hull and still be
#: on its surface
ON_HULL_TOLERANCE = 1e-9


def _on_hull(
    vertices: np.ndarray, faces: np.ndarray, hull_vertices: np.ndarray, hull_faces: np.ndarray
) -> bool:
    """Whether every face of a mesh (`vertices`, `faces`) lies on the surface of its convex hull
    (`hull_vertices`, `hull_faces`, outward-wound): its centre on one of the hull's face planes
    (the three corners are on the hull's side of it, so they lie in that plane too)."""
    corners = hull_vertices[hull_faces]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    lengths = np.linalg.norm(normals, axis=1)
    normals = normals[lengths > 0] / lengths[lengths > 0, None]
    offsets = -np.einsum("ij,ij->i", normals, corners[lengths > 0, 0])
    tolerance = ON_HULL_TOLERANCE * float(np.linalg.norm(np.ptp(vertices, axis=0)))
    centres = vertices[faces].mean(axis=1)
    for chunk in np.array_split(centres, max(1, len(centres) // 1024)):
        if np.any((chunk @ normals.T + offsets).max(axis=1) < -tolerance):
            return False
    return True


def write_collision_obj(
    vertices: np.ndarray, faces: np.ndarray, out_dir: Path, names: OutputNames, key: str, stem: str
) -> str:
    """Write a generated collision mesh (`key` identifies it) as OBJ; returns the output name."""
    name, new = names.name(f"collision:{key}", ".obj", stem=f"{stem}_collision")
    if new:
        with timed("meshes"):
            write_generated_obj(out_dir / name, vertices, faces)
    return name


#: A mesh whose points lie in one plane to within this fraction of its size is flat: MuJoCo
#: cannot compute its volume (it refuses the file), so a flat visual is written as two layers.
FLAT_FRACTION = 1e-9


_flat = Recent(RECENT_MESHES)
_widths = Recent(RECENT_MESHES)  # content -> hull_width of its vertices


def flat_normal(mesh: Mesh) -> np.ndarray | None:
    """The unit normal of a mesh whose points are coplanar (or fewer than 4), else None
    (cached by content)."""
    if mesh.sha256 not in _flat:
        with timed("inertia"):
            _flat[mesh.sha256] = _flat_normal(mesh)
    return _flat[mesh.sha256]


def _mesh_width(mesh: Mesh) -> float:
    """`hull_width` of a mesh's vertices (cached by content)."""
    if mesh.sha256 not in _widths:
        _widths[mesh.sha256] = hull_width(mesh.vertices)
    return _widths[mesh.sha256]


def _flat_normal(mesh: Mesh) -> np.ndarray | None:
    unique = distinct_rows(mesh.vertices)
    width = _widths[mesh.sha256] = _distinct_points_width(unique)
    size = float(np.max(unique.max(axis=0) - unique.min(axis=0))) if len(unique) else 0.0
    if len(unique) >= 4 and width > FLAT_FRACTION * size:
        return None
    centred = unique - unique.mean(axis=0)
    if len(unique) < 3:  # a point or a segment: any direction across it
        direction = centred[-1] if len(unique) == 2 else np.array([0.0, 0.0, 1.0])
        normal = np.cross(direction, [1.0, 0.0, 0.0])
        if np.linalg.norm(normal) < 1e-12:
            normal = np.cross(direction, [0.0, 1.0, 0.0])
        return normal / np.linalg.norm(normal)
    return np.linalg.svd(centred, full_matrices=False)[2][-1]


def _vertex_ref(token: bytes, count: int) -> int:
    """1-based absolute vertex index of an OBJ index token (negative ones count back)."""
    index = int(token)
    return count + index + 1 if index < 0 else index


def doubled_obj(data: bytes, offset: np.ndarray) -> bytes:
    """OBJ text of a flat mesh as two layers, as it is and moved by `offset`, the second with
    reversed faces: every other line (materials, texture coordinates, normals, groups) as it
    was, so it looks the same; vertex k becomes vertices 2k - 1 (front) and 2k (back)."""
    out: list[bytes] = []
    count = 0
    for line in data.splitlines():
        parts = line.split()
        key = parts[0] if parts else b""
        if key == b"v" and len(parts) >= 4:
            point = np.array([float(p) for p in parts[1:4]])
            rest = b" ".join(parts[4:])
            for shifted in (point, point + offset):
                text = "v {:.17g} {:.17g} {:.17g}".format(*shifted).encode()
                out.append(text + (b" " + rest if rest else b""))
            count += 1
        elif key == b"f" and len(parts) >= 4:
            corners = []
            for token in parts[1:]:
                head, sep, tail = token.partition(b"/")
                k = _vertex_ref(head, count)
                corners.append((2 * k - 1, 2 * k, sep + tail))
            out.append(b"f " + b" ".join(b"%d%s" % (a, t) for a, _, t in corners))
            out.append(b"f " + b" ".join(b"%d%s" % (b, t) for _, b, t in reversed(corners)))
        elif key in (b"l", b"p"):
            refs = [b"%d" % (2 * _vertex_ref(t.partition(b"/")[0], count) - 1) for t in parts[1:]]
            out.append(key + b" " + b" ".join(refs))
        else:
            out.append(line)
    return b"\n".join(out) + b"\n"


#: Points sampled on a link's collision shapes and, besides its vertices, on its visual surface
#: for `collision_fidelity`
FIDELITY_SAMPLES = 2048


def collision_fidelity(link, folder: Path) -> tuple[int, float | None, float | None]:
    """How well a written link's collision shapes (files relative to `folder`) match its visual
    ones: (the number of collision shapes, each convex or a primitive; the one-sided Hausdorff
    distance from the collision surface to the visual surface over the diagonal of the visual
    box; the collision shapes' volume over the visual volume). The distance is measured from the
    collision vertices and FIDELITY_SAMPLES points sampled on the collision faces to the nearest
    visual vertex or one of as many points sampled on the visual faces: within about the
    samples' spacing of the exact one (about 1.5 cm on a link 0.6 m across). The volume ratio is
    given only where every visual shape is closed, and counts overlapping collision shapes
    twice. None where the link has no collision or no visual shapes (or they have no area)."""
    count = len(link.collisions)
    visual, collision = _surface(link.visuals, folder), _surface(link.collisions, folder)
    if visual is None or collision is None:
        return count, None, None
    low, high = visual.bounds
    diagonal = float(np.linalg.norm(high - low))
    if not diagonal > 0:
        return count, None, None
    with timed("export"):
        targets = np.concatenate([visual.vertices, visual.sample(FIDELITY_SAMPLES, seed=0)])
        probes = np.concatenate([collision.vertices, collision.sample(FIDELITY_SAMPLES, seed=0)])
        distance = float(cKDTree(targets).query(probes)[0].max())
        visual_volume = _closed_volume(link.visuals, folder)
        collision_volume = _convex_volume(link.collisions, folder)
    ratio = None
    if visual_volume and collision_volume is not None:
        ratio = collision_volume / visual_volume
    return count, distance / diagonal, ratio


def _closed_volume(shapes, folder: Path) -> float | None:
    """The summed volume of `shapes` (files relative to `folder`), None when one of them is not
    closed (weighed by its hull or as a shell). Mass properties are cached by content."""
    total = 0.0
    for g in shapes:
        if g.kind == "mesh":
            g = replace(g, filename=str(folder / g.filename))
        found = mass_properties(g, root=folder)
        if found is None or found[3] != "mesh_volume" and not found[3].endswith("_formula"):
            return None
        total += found[0] / MESH_DENSITY
    return total


def _convex_volume(shapes, folder: Path) -> float:
    """The summed volume of convex `shapes` (files relative to `folder`): each mesh's hull."""
    total = 0.0
    for g in shapes:
        if g.kind == "mesh":
            mesh = load_mesh(folder / g.filename, root=folder, element=f"file {g.filename}")
            try:
                total += ConvexHull(mesh.vertices * g.scale).volume
            except (QhullError, ValueError):  # flat: no volume
                continue
        else:
            found = mass_properties(g, root=folder)
            total += 0.0 if found is None else found[0] / MESH_DENSITY
    return total


def _surface(shapes, folder: Path):
    """The shapes' triangles as one trimesh in the link frame, or None when they have no area."""
    parts = []
    for g in shapes:
        if g.kind == "mesh":
            mesh = load_mesh(folder / g.filename, root=folder, element=f"file {g.filename}")
            vertices, faces = mesh.vertices * g.scale, mesh.faces
        else:
            surface = _primitive_surface(g)
            vertices, faces = np.asarray(surface.vertices), np.asarray(surface.faces)
        parts.append((vertices @ g.origin[:3, :3].T + g.origin[:3, 3], faces))
    if not parts:
        return None
    offsets = np.cumsum([0] + [len(v) for v, _ in parts[:-1]])
    surface = trimesh.Trimesh(
        np.concatenate([v for v, _ in parts]),
        np.concatenate([f + k for (_, f), k in zip(parts, offsets, strict=True)]),
        process=False,
    )
    return surface if surface.area > 0 else None
