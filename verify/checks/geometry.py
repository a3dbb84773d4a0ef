"""Geometry of the normalized object: mesh files, bounds, size, and what normalization dropped.

Every mesh must resolve inside the object folder (symlinks followed), exist and load with
trimesh (`normalize.meshes.load_mesh`, which also refuses NaN vertices, faces past the vertex
list and files without triangles). A mesh without surface (total triangle area 0) or with fewer
than 4 vertices cannot bound a volume and is reported as degenerate. The rest-pose bounding box
of all shapes must be finite; an object whose largest extent is above 20 m or below 1 mm is
flagged. Textures, material libraries and shapes that normalization had to drop (its changes
`texture.missing`, `mesh.material_missing`, `mesh.remote_dropped`, `geometry.shape_dropped`) are
warnings with their count; when the dropped shapes are more than `DROPPED_SHARE` of the object's
surface (each shape measured by the surface of its box in its link frame, in the source), the
object also fails `geometry.shape_dropped_share`, which sends it to review.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from normalize.changes import SHAPE_DROPPED, box_surface
from normalize.convention import link_shapes
from normalize.errors import AssetError
from normalize.meshes import geometry_bounds, load_mesh
from normalize.meshes.distinct import distinct_rows
from normalize.model import Geometry
from normalize.paths import is_inside
from verify.checks import Context, flagged, single
from verify.report import CheckResult

MAX_EXTENT = 20.0  # metres
MIN_EXTENT = 1e-3  # metres
#: A mesh whose total area is below this fraction of its squared bounding-box diagonal has no
#: surface.
AREA_FRACTION = 1e-12

_PROBLEMS: dict[str, tuple[bool, bool]] = {}
MAX_CACHED = 100_000

#: Normalization changes that verification reports as warnings: check id -> (what, change codes).
DROPPED = {
    "geometry.texture_missing": ("texture image(s)", ("texture.missing",)),
    "geometry.material_missing": ("material library file(s)", ("mesh.material_missing",)),
    "geometry.shape_dropped": ("shape(s)", ("mesh.remote_dropped", SHAPE_DROPPED)),
}
#: Above this share of the object's surface, dropped shapes send the object to review.
DROPPED_SHARE = 0.25


def absolute(g: Geometry, folder: Path) -> Geometry:
    """`g` with its mesh filename made absolute (meshes are written relative to the folder)."""
    if g.kind != "mesh" or Path(g.filename).is_absolute():
        return g
    return replace(g, filename=str(folder / g.filename))


def run(ctx: Context) -> list[CheckResult]:
    obj, folder = ctx.reread, ctx.folder
    out: list[CheckResult] = []
    meshes: dict[str, object] = {}
    outside, missing, unloadable, degenerate = [], [], [], []
    mesh_files = sorted(
        {
            g.filename
            for link in obj.links
            for g in (*link.visuals, *link.collisions)
            if g.kind == "mesh"
        }
    )
    for name in mesh_files:
        path = folder / name
        element = f"file {name}"
        if not is_inside(path, folder):
            outside.append(element)
            continue
        if not path.is_file():
            missing.append(element)
            continue
        try:
            mesh = load_mesh(path, root=folder, element=element)
        except AssetError as exc:
            unloadable.append((element, str(exc)))
            continue
        meshes[name] = mesh
        flat, few = _mesh_problems(mesh)
        if flat or few:
            degenerate.append(element)
    ctx.notes["meshes"] = meshes
    doubled = {c.element for c in ctx.result.changes if c.code == "visual.doubled"}
    degenerate += sorted(doubled - set(degenerate))

    count = len(mesh_files)
    out += flagged(
        "geometry.mesh_outside_root",
        "error",
        outside,
        problem=f"resolves outside the object folder {folder}",
        passed_message=f"{count} mesh file(s), all inside the object folder",
    )
    out += flagged(
        "geometry.mesh_missing",
        "error",
        missing,
        problem="does not exist",
        passed_message=f"{count} mesh file(s), all present",
    )
    if unloadable:
        out += [
            single("geometry.mesh_load", "error", False, message, element=element)
            for element, message in unloadable
        ]
    else:
        out.append(
            single(
                "geometry.mesh_load",
                "error",
                True,
                f"{len(meshes)} mesh file(s) load with trimesh",
                value=len(meshes),
            )
        )
    out += flagged(
        "geometry.mesh_degenerate",
        "warning",
        degenerate,
        problem="the source mesh is flat, has no surface or fewer than 4 vertices, so it bounds "
        "no volume (a flat visual is written as two layers, `visual.doubled`, so that MuJoCo "
        "accepts it)",
        passed_message="no mesh is degenerate",
    )
    out += _bounds(ctx, meshes)
    out += _dropped(ctx)
    return out


def fewer_than_four_vertices(mesh) -> bool:
    """Whether a mesh has fewer than 4 distinct vertices (only small meshes can)."""
    vertices = mesh.vertices
    if len(vertices) > 64:
        return len(distinct_rows(vertices[:64])) < 4 and len(distinct_rows(vertices)) < 4
    return len(distinct_rows(vertices)) < 4


def _mesh_problems(mesh) -> tuple[bool, bool]:
    """(no surface, fewer than 4 distinct vertices) of a loaded mesh (cached by content:
    meshes are shared between objects)."""
    found = _PROBLEMS.get(mesh.sha256)
    if found is None:
        vertices = mesh.vertices
        tri = vertices[mesh.faces]
        area = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
        diagonal = float(np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0)))
        flat = not 0.5 * area.sum() > AREA_FRACTION * diagonal**2
        found = (flat, fewer_than_four_vertices(mesh))
        if len(_PROBLEMS) >= MAX_CACHED:
            _PROBLEMS.clear()
        _PROBLEMS[mesh.sha256] = found
    return found


def _bounds(ctx: Context, meshes: dict) -> list[CheckResult]:
    obj, folder = ctx.reread, ctx.folder
    poses = ctx.rest_poses
    lows, highs = [], []
    for link in obj.links:
        for g in link_shapes(link):
            if g.kind == "mesh" and g.filename not in meshes:
                continue  # reported above
            found = geometry_bounds(absolute(g, folder), poses[link.name], root=folder)
            if found is not None:
                lows.append(found[0])
                highs.append(found[1])
    if not lows:
        ctx.notes["extent"] = None
        return [
            single(
                "geometry.present",
                "warning",
                False,
                "the object has no geometry that loads (no visual or collision shapes)",
                value=0,
                threshold=1,
            )
        ]
    low, high = np.min(lows, axis=0), np.max(highs, axis=0)
    finite = bool(np.all(np.isfinite(low)) and np.all(np.isfinite(high)))
    extent = float(np.max(high - low)) if finite else float("inf")
    ctx.notes["extent"] = extent if finite else None
    ctx.notes["box"] = (low, high) if finite else (None, None)
    out = [
        single(
            "geometry.present",
            "warning",
            True,
            f"{len(lows)} shape(s) at rest",
            value=len(lows),
            threshold=1,
        ),
        single(
            "geometry.bounds_finite",
            "error",
            finite,
            f"rest-pose bounding box {low.tolist()} .. {high.tolist()}",
            value=extent,
        ),
    ]
    if finite:
        sensible = MIN_EXTENT <= extent <= MAX_EXTENT
        out.append(
            single(
                "geometry.extent",
                "warning",
                sensible,
                f"largest extent of the rest-pose bounding box is {extent:.4g} m"
                + ("" if sensible else f", outside [{MIN_EXTENT:g}, {MAX_EXTENT:g}] m"),
                value=extent,
                threshold=f"[{MIN_EXTENT:g}, {MAX_EXTENT:g}]",
            )
        )
    return out


def _dropped(ctx: Context) -> list[CheckResult]:
    out = []
    for check_id, (what, codes) in DROPPED.items():
        changes = [c for c in ctx.result.changes if c.code in codes]
        if not changes:
            out.append(single(check_id, "warning", True, f"no {what} dropped", value=0))
            continue
        shown = "; ".join(c.message for c in changes[:3])
        more = f" (and {len(changes) - 3} more)" if len(changes) > 3 else ""
        out.append(
            single(
                check_id,
                "warning",
                False,
                f"{len(changes)} {what} dropped: {shown}{more}",
                value=len(changes),
                threshold=0,
                element=changes[0].element,
            )
        )
    out.append(_dropped_share(ctx))
    return out


def _dropped_share(ctx: Context) -> CheckResult:
    """The dropped shapes' share of the source object's surface (each shape by the surface of
    its box in its link frame; shapes of unknown size are left out)."""
    raw = ctx.result.raw
    dropped = [d for d in raw.source.extra.get("dropped_shapes", ()) if d["area"] is not None]
    lost = sum(d["area"] for d in dropped)
    if not lost:
        return single("geometry.shape_dropped_share", "warning", True, "no shape dropped", value=0)
    kept = 0.0
    for link in raw.links:
        for g in link_shapes(link):
            found = geometry_bounds(g, np.eye(4), root=ctx.source.path)
            area = None if found is None else box_surface(found[1] - found[0])
            kept += area or 0.0
    share = lost / (lost + kept)
    passed = share <= DROPPED_SHARE
    return single(
        "geometry.shape_dropped_share",
        "warning",
        passed,
        f"dropped shapes are {share:.0%} of the object's surface"
        + ("" if passed else f" (above {DROPPED_SHARE:.0%}: the object needs review)"),
        value=share,
        threshold=DROPPED_SHARE,
        element=dropped[0]["element"],
    )
