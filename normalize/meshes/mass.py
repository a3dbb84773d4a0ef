"""Mass, centre of mass and inertia of shapes at uniform density: primitives by formula,
meshes by their volume or convex hull, flat ones and hollow parts as shells."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import trimesh

from normalize.meshes import store
from normalize.meshes.convex import _convex_hull
from normalize.meshes.loading import load_mesh
from normalize.meshes.primitives import _primitive_surface
from normalize.meshes.store import Mesh, _store_mass, _stored_mass
from normalize.model import Geometry
from normalize.timing import timed

MESH_DENSITY = 1000.0  # kg/m^3, water: the uniform density of computed inertials
SHELL_THICKNESS = 0.001  # m: flat meshes (no enclosed volume) are weighed as a thin shell
WALL_THICKNESS = 0.015  # m: a hollow part (a carcass, a housing) weighed as walls of a board


def _primitive_mass(geometry: Geometry, density: float):
    """(mass, inertia about the centre, in the shape frame) of a primitive; centre at origin."""
    size = geometry.size
    if geometry.kind == "box":
        a, b, c = size[:3]
        m = density * a * b * c
        return m, np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 12.0
    if geometry.kind == "sphere":
        r = size[0]
        m = density * 4.0 / 3.0 * math.pi * r**3
        return m, np.eye(3) * 0.4 * m * r * r
    if geometry.kind == "ellipsoid":
        a, b, c = size[:3]
        m = density * 4.0 / 3.0 * math.pi * a * b * c
        return m, np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 5.0
    r, length = size[0], size[1]
    m_cyl = density * math.pi * r * r * length
    ixx = m_cyl * (3 * r * r + length * length) / 12.0
    izz = m_cyl * r * r / 2.0
    if geometry.kind == "capsule":
        # Two hemispheres: centre of mass 3r/8 from the flat face; 83/320 m r^2 about it.
        m_hemi = density * 2.0 / 3.0 * math.pi * r**3
        d = length / 2.0 + 3.0 * r / 8.0
        ixx += 2.0 * (83.0 / 320.0 * m_hemi * r * r + m_hemi * d * d)
        izz += 2.0 * 0.4 * m_hemi * r * r
        m_cyl += 2.0 * m_hemi
    return m_cyl, np.diag([ixx, ixx, izz])


def _shell_mass(
    vertices: np.ndarray,
    faces: np.ndarray,
    density: float,
    thickness: float = SHELL_THICKNESS,
    method: str = "mesh_surface_shell",
):
    """Mass moments of a triangle surface as a shell of `thickness`."""
    tri = vertices[faces]
    areas = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    area = areas.sum()
    if not area > 0:
        return None
    areal = density * thickness
    mass = areal * area
    com = (areas[:, None] * tri.mean(axis=1)).sum(axis=0) / area
    # Second moment of a triangle about the origin: A/12 (sum v v^T + s s^T), s = sum of vertices.
    corner = tri - com
    total = corner.sum(axis=1)
    second = areal * np.einsum(
        "f,fij->ij",
        areas / 12.0,
        np.einsum("fvi,fvj->fij", corner, corner) + np.einsum("fi,fj->fij", total, total),
    )
    inertia = np.trace(second) * np.eye(3) - second
    return float(mass), com, inertia, method


def _mesh_mass(mesh: Mesh, scale: np.ndarray, density: float):
    """(mass, com, inertia about com, method) of a scaled mesh in its own frame, or None when it
    has neither volume nor area."""
    key = (mesh.sha256, tuple(float(s) for s in scale), float(density))
    if key in store._mass_cache:
        return store._mass_cache[key]
    found, result = _stored_mass(key)
    if not found:
        result = _computed_mass(mesh, scale, density)
        _store_mass(key, result)
    store._mass_cache[key] = result
    return result


def _computed_mass(mesh: Mesh, scale: np.ndarray, density: float):
    faces = mesh.faces if np.prod(scale) > 0 else mesh.faces[:, ::-1]
    result = None
    with np.errstate(all="ignore"):
        tm = trimesh.Trimesh(mesh.vertices * scale, faces, process=True)
        if tm.is_watertight and tm.is_winding_consistent and abs(tm.volume) > 0:
            if tm.volume < 0:
                tm.invert()
            method, solid = "mesh_volume", tm.triangles
        else:
            method, solid = "mesh_convex_hull", _convex_hull(np.asarray(tm.vertices))
        props = None if solid is None else trimesh.triangles.mass_properties(solid, density=density)
        if props is not None and props.volume > 0:
            result = (
                float(props.mass),
                np.array(props.center_mass),
                np.array(props.inertia),
                method,
            )
        elif len(tm.faces):
            result = _shell_mass(np.asarray(tm.vertices), np.asarray(tm.faces), density)
        if result is not None and not all(np.all(np.isfinite(v)) for v in result[:3]):
            result = None
    return result


def mass_properties(
    geometry: Geometry, *, density: float = MESH_DENSITY, root: Path | None = None
) -> tuple[float, np.ndarray, np.ndarray, str] | None:
    """(mass, com, inertia about the com, method) of a shape at uniform `density`, in the frame
    of the link holding it; None when the shape encloses no volume (flat or empty)."""
    if geometry.kind == "mesh":
        mesh = load_mesh(Path(geometry.filename), root=root, element=geometry.name)
        with timed("inertia"):
            found = _mesh_mass(mesh, geometry.scale, density)
        if found is None:
            return None
        mass, com, inertia, method = found
    else:
        mass, inertia = _primitive_mass(geometry, density)
        com, method = np.zeros(3), f"{geometry.kind}_formula"
        if not mass > 0:
            return None
    rot, shift = geometry.origin[:3, :3], geometry.origin[:3, 3]
    return mass, rot @ com + shift, rot @ inertia @ rot.T, method


def wall_mass_properties(
    geometry: Geometry,
    *,
    thickness: float = WALL_THICKNESS,
    density: float = MESH_DENSITY,
    root: Path | None = None,
) -> tuple[float, np.ndarray, np.ndarray, str] | None:
    """(mass, com, inertia about the com, "<kind>_wall_shell") of a shape weighed as walls of
    `thickness` (its surface area times the thickness, at `density`), in the frame of the link
    holding it: the model of a hollow part, such as a cabinet's carcass. Primitives are weighed
    by their triangulated surface. None when the shape has no area."""
    if geometry.kind == "mesh":
        mesh = load_mesh(Path(geometry.filename), root=root, element=geometry.name)
        vertices, faces = mesh.vertices * geometry.scale, mesh.faces
    else:
        surface = _primitive_surface(geometry)
        vertices, faces = np.asarray(surface.vertices), np.asarray(surface.faces)
    with timed("inertia"):
        found = _shell_mass(vertices, faces, density, thickness, f"{geometry.kind}_wall_shell")
    if found is None:
        return None
    mass, com, inertia, method = found
    rot, shift = geometry.origin[:3, :3], geometry.origin[:3, 3]
    return mass, rot @ com + shift, rot @ inertia @ rot.T, method
