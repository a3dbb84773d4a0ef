"""Write an object as URDF following the common convention (docs/convention.md).

`write_object(obj, out_dir)` writes `out_dir/object.urdf` and the meshes it uses under
`out_dir/meshes/`, with only relative paths. `export_object` does the same and also returns the
written model (mesh filenames relative to `out_dir`, capsules turned into meshes) and the
changes writing made (format conversions, missing materials or textures).

Collision geometry is convex or primitive: each collision mesh is written as its convex hull
(`meshes/<name>_collision.obj`), which is what MuJoCo, PyBullet and SAPIEN collide a mesh as, so
every simulator reads the same shape; a mesh that is convex already is written as it is.
Hulls are split into convex parts where a moving part needs the room
(`normalize.collision_parts`); a link whose own collision meshes from the source hold a part
after that collides as the parts of its visual meshes instead, where that leaves less. The
source's own collision meshes stay available in `object_source_collision.urdf` beside it
(`SOURCE_COLLISION_NAME`, written when any mesh was replaced by its hull).

Floats are written with `repr`, rotations as the rpy triple that reproduces the rotation matrix
bit for bit (see `exact_rpy`), so that `normalize.urdf.read_object` gives back the same numbers.
Helical joints are split into a rotational joint, a massless link and a prismatic joint that
mimics it (`normalize.helical.split_helical`), which yourdfpy, MuJoCo and PyBullet load and
`read_object` recomposes. Unbounded prismatic joints are written with lower="-inf" upper="inf".
Every `<limit>` carries `effort` and `velocity`, as the URDF specification requires: the
source's values, or 0 where it gives none (the convention records that as
`limits.actuation_unspecified`). A `<mujoco><compiler .../></mujoco>` element (MuJoCo's URDF
extension, ignored by other parsers) lets MuJoCo load massless intermediate links.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from lxml import etree

from normalize.changes import Change
from normalize.collision_parts import PART_THICKNESS, PRIMITIVE_CORNERS, Shape, clear_mechanisms
from normalize.helical import split_helical
from normalize.mechanism import DEPTH_TOLERANCE
from normalize.meshes import (
    MIN_COLLISION_THICKNESS,
    OutputNames,
    convex_collision,
    doubled_obj,
    flat_normal,
    geometry_bounds,
    inward_offset,
    load_mesh,
    thickened_collision,
    write_capsule_obj,
    write_collision_obj,
    write_obj_converted,
    write_obj_copy,
    write_unit_sphere_obj,
)
from normalize.meshes.collision import hull_width, settled_hull, thinnest_move
from normalize.mjcf_writer import write_mjcf
from normalize.model import ArticulatedObject, Geometry, Inertial, Joint, Link
from normalize.paths import is_inside
from normalize.timing import timed
from normalize.transforms import matrix_to_rpy, rpy_to_matrix

URDF_NAME = "object.urdf"
#: The same object with the source's collision meshes instead of their convex hulls
SOURCE_COLLISION_NAME = "object_source_collision.urdf"
MESH_FOLDER = "meshes"
EXACT_RPY_ULPS = 2


def exact_rpy(rotation: np.ndarray) -> np.ndarray | None:
    """An rpy triple whose `rpy_to_matrix` equals `rotation` bit for bit, searched within a few
    ulps of `matrix_to_rpy(rotation)`; None when there is none nearby."""
    rpy = matrix_to_rpy(rotation)
    if np.array_equal(rpy_to_matrix(rpy), rotation):
        return rpy
    options = []
    for value in rpy:
        near = [value]
        up = down = value
        for _ in range(EXACT_RPY_ULPS):
            up, down = np.nextafter(up, math.inf), np.nextafter(down, -math.inf)
            near += [up, down]
        options.append(near)
    for candidate in itertools.product(*options):
        if np.array_equal(rpy_to_matrix(candidate), rotation):
            return np.array(candidate)
    return None


def _num(value) -> str:
    return repr(float(value))


def _text(values) -> str:
    return " ".join(_num(v) for v in values)


def _origin(parent, transform: np.ndarray) -> None:
    if np.array_equal(transform, np.eye(4)):
        return
    rot = transform[:3, :3]
    rpy = np.zeros(3)
    if not np.array_equal(rot, np.eye(3)):
        found = exact_rpy(rot)
        rpy = found if found is not None else matrix_to_rpy(rot)
    etree.SubElement(parent, "origin", xyz=_text(transform[:3, 3]), rpy=_text(rpy))


def _geometry(parent, tag: str, g: Geometry) -> None:
    node = etree.SubElement(parent, tag)
    if g.name:
        node.set("name", g.name)
    _origin(node, g.origin)
    shape = etree.SubElement(node, "geometry")
    if g.kind == "mesh":
        attrs = {"filename": g.filename}
        if not np.array_equal(g.scale, np.ones(3)):
            attrs["scale"] = _text(g.scale)
        etree.SubElement(shape, "mesh", **attrs)
    elif g.kind == "box":
        etree.SubElement(shape, "box", size=_text(g.size))
    elif g.kind == "sphere":
        etree.SubElement(shape, "sphere", radius=_num(g.size[0]))
    elif g.kind == "cylinder":
        etree.SubElement(shape, "cylinder", radius=_num(g.size[0]), length=_num(g.size[1]))
    else:
        raise ValueError(f"geometry kind {g.kind!r} must be turned into a mesh before writing")


#: What a link without an inertial is written with: mass 0, so that no simulator invents one
#: (PyBullet gives a link without `<inertial>` 1 kg and a unit tensor; MuJoCo raises it to the
#: compiler's `boundmass`). `read_object` reads it back as no inertial.
MASSLESS = Inertial(0.0, np.zeros(3), np.zeros((3, 3)), method="none")


def _inertial(parent, inertial: Inertial) -> None:
    node = etree.SubElement(parent, "inertial")
    if inertial.com.any():
        etree.SubElement(node, "origin", xyz=_text(inertial.com), rpy="0.0 0.0 0.0")
    etree.SubElement(node, "mass", value=_num(inertial.mass))
    i = inertial.inertia
    etree.SubElement(
        node,
        "inertia",
        ixx=repr(float(i[0, 0])),
        ixy=repr(float(i[0, 1])),
        ixz=repr(float(i[0, 2])),
        iyy=repr(float(i[1, 1])),
        iyz=repr(float(i[1, 2])),
        izz=repr(float(i[2, 2])),
    )


def _link(parent, link: Link) -> None:
    node = etree.SubElement(parent, "link", name=link.name)
    _inertial(node, link.inertial if link.inertial is not None else MASSLESS)
    for g in link.visuals:
        _geometry(node, "visual", g)
    for g in link.collisions:
        _geometry(node, "collision", g)


def has_limit_element(joint: Joint) -> bool:
    """Is a `<limit>` written for `joint`: always for revolute and prismatic joints (their range),
    for continuous ones only when the source gave an effort or a velocity."""
    if joint.type in ("revolute", "prismatic"):
        return True
    return joint.type == "continuous" and (joint.effort is not None or joint.velocity is not None)


def _joint(parent, joint: Joint) -> None:
    node = etree.SubElement(parent, "joint", name=joint.name, type=joint.type)
    _origin(node, joint.origin)
    etree.SubElement(node, "parent", link=joint.parent)
    etree.SubElement(node, "child", link=joint.child)
    if not joint.moving:
        return
    etree.SubElement(node, "axis", xyz=_text(joint.axis))
    if has_limit_element(joint):
        limit = {}
        if joint.type in ("revolute", "prismatic"):
            limit = {"lower": _num(joint.lower), "upper": _num(joint.upper)}
        # Both are required on every <limit>: the source's values, else 0 ("not specified").
        limit["effort"] = _num(joint.effort or 0.0)
        limit["velocity"] = _num(joint.velocity or 0.0)
        etree.SubElement(node, "limit", **limit)
    if joint.mimic is not None:
        etree.SubElement(
            node,
            "mimic",
            joint=joint.mimic.joint,
            multiplier=_num(joint.mimic.multiplier),
            offset=_num(joint.mimic.offset),
        )


# MuJoCo's URDF extension (other parsers ignore it): load massless intermediate links (helical
# and multi-DOF chains), keep mesh paths relative to the file, keep visual geometry, keep every
# link a body (the base included) and take every inertial from the file.
MUJOCO_COMPILER = {
    "boundmass": "1e-09",
    "boundinertia": "1e-12",
    "strippath": "false",
    "discardvisual": "false",
    "fusestatic": "false",
    "inertiafromgeom": "false",
}


def urdf_text(obj: ArticulatedObject) -> bytes:
    """The URDF document of an object whose meshes already have their written filenames."""
    obj = split_helical(obj)
    robot = etree.Element("robot", name=obj.name)
    for link in obj.links:
        _link(robot, link)
    for joint in obj.joints:
        _joint(robot, joint)
    etree.SubElement(etree.SubElement(robot, "mujoco"), "compiler", **MUJOCO_COMPILER)
    return etree.tostring(robot, pretty_print=True, xml_declaration=True, encoding="utf-8")


@dataclass(frozen=True)
class Written:
    """urdf_path: the written file; object: the model as written (relative mesh filenames);
    changes: what writing changed (mesh conversions, missing materials and textures);
    mesh_sources: each written mesh file (relative, e.g. meshes/original-12.obj) -> the source
    mesh file it was written from (absolute), so that a problem found in the written mesh can
    name the file the user has."""

    urdf_path: Path
    object: ArticulatedObject
    changes: list[Change]
    mesh_sources: dict[str, str] = field(default_factory=dict)


def _stem(filename: str) -> str:
    """A mesh file's stem with only the characters output names keep."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(filename).stem)


def _rest_centre(links, poses: dict, root: Path | None) -> np.ndarray | None:
    """Centre of the rest-pose box of `links`' shapes (visuals, else collisions); None when
    they have none."""
    lows, highs = [], []
    for link in links:
        for g in link.visuals or link.collisions:
            found = geometry_bounds(g, poses[link.name], root=root)
            if found is not None:
                lows.append(found[0])
                highs.append(found[1])
    if not lows:
        return None
    return (np.min(lows, axis=0) + np.max(highs, axis=0)) / 2.0


def _written_meshes(
    obj: ArticulatedObject, out_dir: Path, root: Path | None, sources: dict[str, str]
) -> tuple[ArticulatedObject, ArticulatedObject | None, list[Change]]:
    """Write every mesh (and capsule) of `obj` under out_dir/meshes; (the object with the
    written relative filenames and convex collision meshes, the same with the source's collision
    meshes or None when they are the same, the changes). `sources` receives written filename ->
    source mesh file."""
    mesh_dir = out_dir / MESH_FOLDER
    names = OutputNames()
    changes: list[Change] = []
    noted: set[tuple[str, str]] = set()

    def note(code: str, message: str, element: str) -> None:
        if (code, message) not in noted:
            noted.add((code, message))
            changes.append(Change(code, message, element=element))

    def written(g: Geometry, element: str) -> Geometry:
        if g.kind not in ("mesh", "capsule", "ellipsoid"):
            return g
        mesh_dir.mkdir(parents=True, exist_ok=True)
        if g.kind == "capsule":
            name = write_capsule_obj(g.size[0], g.size[1], mesh_dir, names)
            note(
                "geometry.capsule_meshed",
                "capsule written as a triangle mesh (URDF has no capsule)",
                element,
            )
            return Geometry("mesh", origin=g.origin, filename=f"{MESH_FOLDER}/{name}", name=g.name)
        if g.kind == "ellipsoid":
            name = write_unit_sphere_obj(mesh_dir, names)
            note(
                "geometry.ellipsoid_meshed",
                "ellipsoid written as a unit-sphere triangle mesh scaled by its semi-axes (URDF "
                "has no ellipsoid)",
                element,
            )
            filename = f"{MESH_FOLDER}/{name}"
            return Geometry("mesh", origin=g.origin, filename=filename, scale=g.size, name=g.name)
        source = Path(g.filename)
        if not source.is_absolute():
            raise ValueError(f"mesh {g.filename} must be an absolute path before writing")
        # A mesh from a trusted package root outside `root` keeps its materials beside it.
        confine_to = root if root is not None and is_inside(source, root) else source.parent
        if source.suffix.lower() == ".obj":
            name = write_obj_copy(source, mesh_dir, names, confine_to, changes)
        else:
            name = write_obj_converted(source, mesh_dir, names, confine_to)
            note(
                "mesh.converted",
                f"{source.name} converted to OBJ (triangles only; its materials are not kept)",
                element,
            )
        sources[f"{MESH_FOLDER}/{name}"] = str(source)
        return replace(g, filename=f"{MESH_FOLDER}/{name}")

    doubled: set[str] = set()
    poses = obj.link_poses()
    centres: dict[str, np.ndarray | None] = {}

    def source_mesh(g: Geometry, element: str):
        return load_mesh(Path(g.filename), root=root or Path(g.filename).parent, element=element)

    def centre(key: str, links) -> np.ndarray | None:
        if key not in centres:
            centres[key] = _rest_centre(links, poses, root)
        return centres[key]

    def toward(link: Link, g: Geometry, mesh) -> np.ndarray:
        """The point a thin mesh is thickened towards, in the frame of `g`'s mesh (unscaled
        units): its link's rest-pose centre, so that the link's box stays the same, or the
        object's when a flat mesh's plane passes through the link's centre (a link that is
        one flat panel)."""
        inverse = np.linalg.inv(poses[link.name] @ g.origin)
        normal = flat_normal(mesh)
        local = None
        for key, links in ((link.name, (link,)), ("", obj.links)):
            point = centre(key, links)
            if point is None:
                continue
            local = (inverse @ np.append(point, 1.0))[:3] / g.scale
            across = (local - mesh.vertices.mean(axis=0)) * g.scale
            if normal is None or abs(float(normal @ across)) > MIN_COLLISION_THICKNESS:
                break
        return np.zeros(3) if local is None else local

    def visual(link: Link, g: Geometry, element: str) -> Geometry:
        """`g` written; a flat mesh as two layers MIN_COLLISION_THICKNESS apart, the second
        towards its link's centre (`toward`)."""
        if g.kind != "mesh":
            return written(g, element)
        mesh = source_mesh(g, element)
        normal = flat_normal(mesh)
        out = written(g, element)
        if normal is None or out.filename in doubled:
            return out
        doubled.add(out.filename)
        path = out_dir / out.filename
        offset = inward_offset(normal, mesh, g.scale, toward(link, g, mesh))
        path.write_bytes(doubled_obj(path.read_bytes(), offset))
        changes.append(
            Change(
                "visual.doubled",
                f"visual mesh of {element} is flat (MuJoCo cannot compute its volume and "
                f"refuses the file): written as two layers {MIN_COLLISION_THICKNESS:g} m apart, "
                "materials and texture coordinates kept",
                element=f"file {out.filename}",
            )
        )
        return out

    thickened: set[str] = set()
    # the vertices of the collision files written from arrays here (thickened hulls, hulls),
    # for the convex parts: a name's first arrays are its file's (setdefault)
    collision_vertices: dict[str, np.ndarray] = {}

    def collidable(link: Link, g: Geometry, element: str) -> Geometry:
        """`g` written, or a thickened hull of it when it is too thin for a convex-hull
        collider."""
        if g.kind != "mesh":
            return written(g, element)
        mesh = source_mesh(g, element)
        grown = thickened_collision(mesh, g.scale, toward(link, g, mesh))
        if grown is None:
            return written(g, element)
        key = f"{mesh.sha256}:{g.scale.tolist()}"
        name = write_collision_obj(*grown, mesh_dir, names, key, _stem(g.filename))
        thickened.add(f"{MESH_FOLDER}/{name}")
        collision_vertices.setdefault(f"{MESH_FOLDER}/{name}", grown[0])
        changes.append(
            Change(
                "collision.thickened",
                f"collision mesh {Path(g.filename).name} is thinner than "
                f"{MIN_COLLISION_THICKNESS:g} m (flat, coplanar or degenerate): the convex hull "
                f"of it and of its copy {MIN_COLLISION_THICKNESS:g} m inwards is the collision "
                f"shape {MESH_FOLDER}/{name} (the visual is unchanged)",
                element=element,
            )
        )
        sources[f"{MESH_FOLDER}/{name}"] = g.filename
        return replace(g, filename=f"{MESH_FOLDER}/{name}")

    hulled: list[str] = []
    hull_files: set[str] = set()

    def convex(g: Geometry, out: Geometry, element: str) -> Geometry:
        """`out` (the written `g`), or the convex hull of `g`'s mesh written in its place."""
        if g.kind != "mesh" or out.filename in thickened:
            return out  # a primitive (a capsule or ellipsoid mesh) or a hull: convex already
        mesh = source_mesh(g, element)
        hull = convex_collision(mesh)
        if hull is None:
            return out
        name = write_collision_obj(*hull, mesh_dir, names, f"hull:{mesh.sha256}", _stem(g.filename))
        sources[f"{MESH_FOLDER}/{name}"] = g.filename
        hulled.append(Path(g.filename).name)
        hull_files.add(f"{MESH_FOLDER}/{name}")
        collision_vertices.setdefault(f"{MESH_FOLDER}/{name}", hull[0])
        return replace(out, filename=f"{MESH_FOLDER}/{name}")

    def shipped(link: Link, element: str) -> tuple[tuple, tuple]:
        """`link`'s collisions written (`collidable`: what the source's collision URDF keeps)
        and as shipped (`convex`)."""
        collisions = tuple(collidable(link, g, element) for g in link.collisions)
        hulls = tuple(
            convex(g, c, element) for g, c in zip(link.collisions, collisions, strict=True)
        )
        return collisions, hulls

    links, source_links = [], []
    for link in obj.links:
        element = f"link {link.name}"
        visuals = tuple(visual(link, g, element) for g in link.visuals)
        collisions, hulls = shipped(link, element)
        source_links.append(replace(link, visuals=visuals, collisions=collisions))
        links.append(replace(link, visuals=visuals, collisions=hulls))
    if not hulled:
        return obj.replace(links=tuple(links)), None, changes
    changes.append(
        Change(
            "collision.convex_hull",
            f"{len(hulled)} collision mesh(es) written as their convex hulls, the shapes MuJoCo, "
            f"PyBullet and SAPIEN collide them as ({', '.join(sorted(set(hulled))[:5])}"
            f"{', ...' if len(set(hulled)) > 5 else ''}); {SOURCE_COLLISION_NAME} keeps the "
            "source's collision meshes",
        )
    )
    cleared = _cleared(obj, links, out_dir, source_mesh, hull_files, collision_vertices)
    holding = _holding_with_visuals(obj, cleared)
    if holding:
        # the source's own collision meshes of these links hold a moving part: try the links'
        # visual meshes instead (primitives stay), hulled and split as ours, and keep what
        # leaves less
        mark = len(changes)
        trial_obj = obj.replace(
            links=tuple(
                _colliding_as_visuals(link) if link.name in holding else link for link in obj.links
            )
        )
        trial_links = [
            replace(
                link,
                collisions=tuple(
                    replace(hull, name=f"{link.name}_collision_{i}")
                    for i, hull in enumerate(shipped(given, f"link {link.name}")[1])
                ),
            )
            if link.name in holding
            else link
            for given, link in zip(trial_obj.links, links, strict=True)
        ]
        trial = _cleared(
            trial_obj, trial_links, out_dir, source_mesh, hull_files, collision_vertices
        )
        if trial is not None and trial.deepest_left < cleared.deepest_left:
            changes.append(_from_visuals_change(obj, holding, cleared, trial))
            links, cleared = trial_links, trial
        else:
            del changes[mark:]
    links = _with_convex_parts(links, cleared, out_dir, names, changes, sources)
    referenced = {
        g.filename for link in (*links, *source_links) for g in (*link.visuals, *link.collisions)
    }
    for filename in (hull_files | thickened) - referenced:  # shipped as parts, or not taken
        (out_dir / filename).unlink()
        sources.pop(filename, None)
    return obj.replace(links=tuple(links)), obj.replace(links=tuple(source_links)), changes


def _cleared(obj, links, out_dir: Path, source_mesh, hull_files: set[str], collision_vertices):
    """`clear_mechanisms` of the written `links`' collision shapes (`_collision_shapes`)."""
    with timed("collision"):
        shapes = _collision_shapes(obj, links, out_dir, source_mesh, hull_files, collision_vertices)
        return clear_mechanisms(obj, shapes)


def _colliding_as_visuals(link: Link) -> Link:
    """`link` with its visual meshes as its collision meshes, beside its primitives."""
    meshes = tuple(g for g in link.visuals if g.kind == "mesh")
    return replace(link, collisions=(*meshes, *(g for g in link.collisions if g.kind != "mesh")))


def _holding_with_visuals(obj, cleared) -> set[str]:
    """The links whose source collision meshes hold a part of ours after the splitting
    (`Cleared.holding`) and that have other visual meshes to collide as instead."""
    if cleared is None:
        return set()
    held = (link for link in obj.links if link.name in cleared.holding)
    return {
        link.name
        for link in held
        if (visuals := {g.filename for g in link.visuals if g.kind == "mesh"})
        and visuals != {g.filename for g in link.collisions if g.kind == "mesh"}
    }


def _from_visuals_change(obj, holding: set[str], before, after) -> Change:
    """The change naming the collision meshes the source made for the `holding` links (those
    that are not also their visual meshes, else all) and the deepest contact before and after."""
    given, made = set(), set()
    for link in (link for link in obj.links if link.name in holding):
        visuals = {g.filename for g in link.visuals}
        for g in (g for g in link.collisions if g.kind == "mesh"):
            given.add(Path(g.filename).name)
            if g.filename not in visuals:
                made.add(Path(g.filename).name)
    files = made or given
    shown = ", ".join(sorted(files)[:5]) + (", ..." if len(files) > 5 else "")
    return Change(
        "collision.from_visuals",
        f"the collision meshes the source made for link(s) {', '.join(sorted(holding))} "
        f"({shown}) held a moving part {1000 * before.deepest_left:.1f} mm deep: those links "
        f"collide as the convex parts of their visual meshes instead "
        f"({1000 * after.deepest_left:.1f} mm left); {SOURCE_COLLISION_NAME} keeps the "
        "source's collision meshes",
    )


def _collision_shapes(
    obj, links, out_dir: Path, source_mesh, hull_files: set[str], collision_vertices: dict
) -> dict:
    """Every collision shape of the written `links` by (link, index), for the convex parts:
    the hulls we wrote (`hull_files`) as their source meshes' triangles (to split), the others
    as written (`collision_vertices` of the files written from arrays, else read back)."""
    shapes = {}
    visual_files = {
        link.name: {g.filename for g in link.visuals if g.kind == "mesh"} for link in obj.links
    }
    for source_link, link in zip(obj.links, links, strict=True):
        for i, (g, c) in enumerate(zip(source_link.collisions, link.collisions, strict=True)):
            if c.kind in PRIMITIVE_CORNERS:
                corners = PRIMITIVE_CORNERS[c.kind](c.size)
                points = corners @ c.origin[:3, :3].T + c.origin[:3, 3]
                shapes[link.name, i] = Shape(
                    link.name, points, primitive=(c.kind, c.size, c.origin)
                )
                continue
            if c.kind != "mesh":
                continue
            # ours to split: a hull of one of the link's visual meshes (the source's collision
            # is its visual); collision meshes the source made for collision keep their hulls
            hull = c.filename in hull_files and g.filename in visual_files[link.name]
            if hull:
                mesh = source_mesh(g, f"link {link.name}")
                unscaled, faces = mesh.vertices, np.asarray(mesh.faces)
            elif c.filename in collision_vertices:
                unscaled = collision_vertices[c.filename]
            else:
                element = f"file {c.filename}"
                unscaled = load_mesh(out_dir / c.filename, root=out_dir, element=element).vertices
            vertices = (unscaled * c.scale) @ c.origin[:3, :3].T + c.origin[:3, 3]
            parts = [(vertices, faces)] if hull else []
            shapes[link.name, i] = Shape(link.name, vertices, parts)
    return shapes


def _thick_hull(points: np.ndarray, scale: np.ndarray, toward: np.ndarray):
    """`settled_hull` of a part's points (mesh frame), copies moved by PART_THICKNESS towards
    `toward` (`thinnest_move`) added while its corners are thinner than MIN_COLLISION_THICKNESS
    after `scale` (as normalizing the written part measures it)."""
    hull = settled_hull(points)
    for _ in range(3):
        if hull is None or hull_width(hull[0] * scale) >= MIN_COLLISION_THICKNESS:
            break
        move = thinnest_move(hull[0], scale, toward, PART_THICKNESS)
        hull = settled_hull(np.concatenate([hull[0], hull[0] + move]))
    return hull


def _with_convex_parts(links, cleared, out_dir: Path, names, changes: list, sources) -> list:
    """`links` with the hulls split into convex parts where moving parts need the room
    (`cleared`: `normalize.collision_parts`), the split recorded in `changes`; `sources`
    receives each part's source mesh file."""
    if cleared is None or not cleared.parts:
        return links
    out, split_names, count = [], set(), 0
    for link in links:
        collisions = []
        for i, c in enumerate(link.collisions):
            if (link.name, i) not in cleared.parts:
                collisions.append(c)
                continue
            inverse = np.linalg.inv(c.origin)
            stem = Path(c.filename).stem.removesuffix("_collision")
            for k, points in enumerate(cleared.parts[link.name, i]):
                local = (points @ inverse[:3, :3].T + inverse[:3, 3]) / c.scale
                toward = (inverse @ np.append(points.mean(axis=0), 1.0))[:3] / c.scale
                hull = _thick_hull(local, c.scale, toward)
                if hull is None:
                    continue
                vertices, faces = hull
                key = hashlib.sha256(vertices.tobytes() + faces.tobytes()).hexdigest()
                name = write_collision_obj(
                    vertices,
                    faces,
                    out_dir / MESH_FOLDER,
                    names,
                    f"part:{key}",
                    f"{stem}_part{k}",
                )
                sources[f"{MESH_FOLDER}/{name}"] = sources[c.filename]
                collisions.append(replace(c, filename=f"{MESH_FOLDER}/{name}"))
                count += 1
            split_names.add(Path(c.filename).name)
        if len(collisions) != len(link.collisions):  # canonical names, numbered again
            collisions = [
                replace(c, name=f"{link.name}_collision_{i}") for i, c in enumerate(collisions)
            ]
        out.append(replace(link, collisions=tuple(collisions)))
    shown = ", ".join(sorted(split_names)[:5]) + (", ..." if len(split_names) > 5 else "")
    left = (
        f"; {cleared.contacts_left} contact(s) deeper than {1000 * DEPTH_TOLERANCE:g} mm left "
        f"after {cleared.rounds} round(s)"
        if cleared.contacts_left
        else ""
    )
    changes.append(
        Change(
            "collision.convex_parts",
            f"{len(split_names)} convex hull(s) split into {count} convex parts so that the moving "
            f"parts clear them at rest and over their ranges ({shown}){left}",
        )
    )
    return out


def export_object(
    obj: ArticulatedObject, out_dir: Path, *, root: Path | None = None, mjcf: bool = True
) -> Written:
    """Write `obj` into `out_dir` (object.urdf + meshes/, and, with `mjcf`, object.xml, its
    MJCF, when MuJoCo is installed: `normalize.mjcf_writer`). `root` confines the material and
    texture files copied with OBJ meshes (default: each mesh's own folder)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sources: dict[str, str] = {}
    written_obj, source_collision, changes = _written_meshes(obj, out_dir, root, sources)
    path = out_dir / URDF_NAME
    path.write_bytes(urdf_text(written_obj))
    if source_collision is not None:
        (out_dir / SOURCE_COLLISION_NAME).write_bytes(urdf_text(source_collision))
    if mjcf:
        write_mjcf(written_obj, out_dir)
    return Written(path, written_obj, changes, sources)


def write_object(obj: ArticulatedObject, out_dir: Path, *, root: Path | None = None) -> Path:
    """Write `obj` as `out_dir/object.urdf` with its meshes; returns the URDF path."""
    return export_object(obj, out_dir, root=root).urdf_path
