"""Geoms of a body as visuals and collisions (primitives, source meshes, meshes generated from
compiled data) and the body's inertial, in its link frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normalize.adapters.mjcf.build import _Build, _pose
from normalize.adapters.mjcf.compile import _mj
from normalize.changes import Change
from normalize.meshes import generated_obj, height_field_mesh, resolve_mesh_file
from normalize.model import Geometry, Inertial
from normalize.paths import confine
from normalize.transforms import invert, quaternion_matrix

# MuJoCo's viewer shows geom groups 0-2 by default; those are our visuals.
VISIBLE_GROUPS = (0, 1, 2)


def _geometries(model, body: int, to_link: np.ndarray, root: Path, path: str, build: _Build):
    """(visuals, collisions) of one body, in its link frame (`to_link` maps body to link)."""
    mj = _mj()
    kinds = {
        mj.mjtGeom.mjGEOM_BOX: "box",
        mj.mjtGeom.mjGEOM_SPHERE: "sphere",
        mj.mjtGeom.mjGEOM_CYLINDER: "cylinder",
        mj.mjtGeom.mjGEOM_CAPSULE: "capsule",
        mj.mjtGeom.mjGEOM_ELLIPSOID: "ellipsoid",
        mj.mjtGeom.mjGEOM_MESH: "mesh",
    }
    visuals, collisions = [], []
    start = int(model.body_geomadr[body])
    for g in range(start, start + int(model.body_geomnum[body])):
        name = model.geom(g).name or f"geom{g}"
        gtype = int(model.geom_type[g])
        kind = kinds.get(gtype)
        material = int(model.geom_matid[g])
        alpha = model.mat_rgba[material][3] if material >= 0 else model.geom_rgba[g][3]
        visible = int(model.geom_group[g]) in VISIBLE_GROUPS and alpha > 0
        colliding = bool(model.geom_contype[g]) or bool(model.geom_conaffinity[g])
        if not (visible or colliding):
            build.changes.append(
                Change(
                    "mjcf.geom_skipped",
                    f"geom {name} is neither shown by default (group "
                    f"{int(model.geom_group[g])}, alpha {alpha:g}) nor colliding; skipped",
                    element=f"geom {name}",
                )
            )
            continue
        if gtype == mj.mjtGeom.mjGEOM_PLANE:  # an infinite ground, not part of the object
            build.changes.append(
                Change(
                    "mjcf.geom_skipped",
                    f"plane geom {name} (an infinite ground plane) skipped",
                    element=f"geom {name}",
                )
            )
            continue
        pose = to_link @ _pose(model.geom_pos[g], model.geom_quat[g])
        size = model.geom_size[g]
        if kind == "mesh":
            geometry = _mesh_geometry(model, g, name, pose, root, path, build)
            if geometry is None:
                continue
        elif gtype == mj.mjtGeom.mjGEOM_HFIELD:
            geometry = _height_field_geometry(model, g, name, pose, build)
        elif gtype == mj.mjtGeom.mjGEOM_SDF and int(model.geom_dataid[g]) >= 0:
            what = f"signed-distance-field geom {name}: its plugin's mesh"
            geometry = _compiled_mesh(model, int(model.geom_dataid[g]), name, pose, what, build)
        elif kind is None:  # e.g. a signed-distance-field geom without a mesh
            type_name = mj.mjtGeom(gtype).name.removeprefix("mjGEOM_").lower()
            extent = 2.0 * model.geom_aabb[g][3:]
            build.drop(type_name, f"geom {name}", "no equivalent shape", extent)
            continue
        elif kind == "box":
            geometry = Geometry("box", origin=pose, size=tuple(2.0 * size), name=name)
        elif kind == "sphere":
            geometry = Geometry("sphere", origin=pose, size=(size[0],), name=name)
        elif kind == "ellipsoid":
            geometry = Geometry("ellipsoid", origin=pose, size=tuple(size[:3]), name=name)
        else:
            geometry = Geometry(kind, origin=pose, size=(size[0], 2.0 * size[1]), name=name)
        if visible:
            visuals.append(geometry)
        if colliding:
            collisions.append(geometry)
    return visuals, collisions


def _compiled_mesh(model, mesh: int, name, pose, what: str, build: _Build) -> Geometry:
    """A mesh that has no file (inline vertices, an SDF plugin's mesh) as MuJoCo compiled it,
    in the compiled geom frame, written to a generated OBJ (`mjcf.mesh_generated`)."""
    vertices = model.mesh_vert[model.mesh_vertadr[mesh] :][: model.mesh_vertnum[mesh]]
    faces = model.mesh_face[model.mesh_faceadr[mesh] :][: model.mesh_facenum[mesh]]
    build.changes.append(
        Change(
            "mjcf.mesh_generated",
            f"{what}, written as a triangle mesh from MuJoCo's compiled vertices",
            element=f"geom {name}",
        )
    )
    return Geometry("mesh", origin=pose, filename=str(generated_obj(vertices, faces)), name=name)


def _height_field_geometry(model, g, name, pose, build: _Build) -> Geometry:
    """A height field geom as the closed triangle mesh of its samples (`height_field_mesh`)."""
    field = int(model.geom_dataid[g])
    rows, cols = int(model.hfield_nrow[field]), int(model.hfield_ncol[field])
    start = int(model.hfield_adr[field])
    elevation = model.hfield_data[start : start + rows * cols].reshape(rows, cols)
    vertices, faces = height_field_mesh(elevation, model.hfield_size[field])
    build.changes.append(
        Change(
            "mjcf.mesh_generated",
            f"height field geom {name} ({rows} x {cols} samples) converted to a closed triangle "
            "mesh",
            element=f"geom {name}",
        )
    )
    return Geometry("mesh", origin=pose, filename=str(generated_obj(vertices, faces)), name=name)


def _mesh_geometry(model, g, name, pose, root: Path, path: str, build: _Build):
    """The source mesh file at the pose MuJoCo compiled it: MuJoCo moves mesh vertices into
    their inertial frame (v_compiled = R^T (scale * v_file - p), with p, R = mesh_pos,
    mesh_quat) and the geom frame with them, so the file's frame is geom @ inv(p, R)."""
    mesh = int(model.geom_dataid[g])
    address = int(model.mesh_pathadr[mesh])
    file = model.paths[address:].split(b"\0", 1)[0].decode() if address >= 0 else ""
    if not file:
        return _compiled_mesh(model, mesh, name, pose, f"mesh geom {name}: inline vertices", build)
    target = Path(file)
    if not target.is_absolute():
        target = Path(path).parent / target
    element = f"geom {name}"
    confine(target, root, referrer=path, element=element)
    resolve_mesh_file(
        file, referrer=Path(path), root=root, element=element, changes=build.changes, target=target
    )
    offset = _pose(model.mesh_pos[mesh], model.mesh_quat[mesh])
    return Geometry(
        "mesh",
        origin=pose @ invert(offset),
        filename=str(target),
        scale=np.array(model.mesh_scale[mesh], dtype=float),
        name=name,
    )


def _inertial(model, body: int, to_link: np.ndarray) -> Inertial | None:
    mass = float(model.body_mass[body])
    if mass == 0.0:
        return None
    rot = quaternion_matrix(model.body_iquat[body])
    inertia = rot @ np.diag(model.body_inertia[body]) @ rot.T
    com = to_link[:3, :3] @ model.body_ipos[body] + to_link[:3, 3]
    inertia = to_link[:3, :3] @ inertia @ to_link[:3, :3].T
    return Inertial(mass, com, inertia, method="source")
