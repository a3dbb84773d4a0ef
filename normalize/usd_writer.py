"""Write a normalized object as USD for Isaac Sim, Isaac Lab and other UsdPhysics readers, with
usd-core's own API (`pxr`, the `usd` extra): `object.usda` beside its `object.urdf`, and the
points and triangles of its meshes in `object_meshes.usdc` beside it.

The model is the written object (meshes under `meshes/`, helical joints split as in the URDF).
`object.usda` (metersPerUnit 1, kilogramsPerUnit 1, upAxis Z) holds:

    /<object>                   Xform, the default prim, PhysicsArticulationRootAPI
      /<link>                   Xform at the link's rest pose in the base frame, RigidBodyAPI,
                                MassAPI (mass, centre of mass, principal moments and axes)
        /visuals/<shape>        Mesh, Cube, Sphere, Cylinder or Capsule with the URDF's sizes
        /collisions/<shape>     the same with CollisionAPI (meshes: MeshCollisionAPI convexHull),
                                purpose guide (not rendered)
      /joints/root_joint        FixedJoint from the world to the base: a fixed base, as MuJoCo
                                loads the URDF
      /joints/<joint>           RevoluteJoint (limits in degrees; continuous: none),
                                PrismaticJoint (metres; unbounded: none) or FixedJoint

A mesh shape references `/mesh_<i>` of `object_meshes.usdc`, written once per mesh file (a file
used by several shapes, or as visual and collision, is stored once); its placement and scale
are its own. Binary, because mesh data as text is large: on the corpus the text form of the
meshes took 76 % of the OBJ files' bytes, the binary 20 % (docs/release.md).

UsdPhysics joints turn about or slide along the X, Y or Z axis of the joint frame: the frame is
the URDF joint frame turned so that the coordinate axis nearest the URDF axis lies on it
(`axis_frame`; an axis along x, y or z is not turned). Inertia tensors are written as principal
moments and the rotation of their principal axes (numpy's `eigh`). Joint frames, limits, masses
and inertias are 32-bit floats (the schema's types); link poses and shape placements are
doubles. Links without mass get MuJoCo's bounds (1e-9 kg, 1e-12 kg m^2): UsdPhysics reads a
mass of 0 as "compute it from the collision shapes", which such a link does not have.

UsdPhysics has no joint coupling: a mimic joint is written as a plain joint carrying its
coupling in custom attributes (`arena:mimic:joint`, a relationship to the joint it follows,
`arena:mimic:multiplier`, `arena:mimic:offset`, SI units: q = multiplier * q_joint + offset),
which a USD simulator does not enforce. Helical joints are split as in the URDF, so their
prismatic part is such a follower.

Collision shapes come from `link_colliders`: each link's collision geometry, meshes hulled by the
simulator (approximation convexHull); convex parts computed per link will replace them there.
Visual materials and texture coordinates are not written (appearance lives in the OBJ/MTL files).

`write_usd(obj, folder)` returns None when usd-core is not installed, and for an object whose
names are not USD identifiers (canonical objects' names always are).
"""

from __future__ import annotations

import errno
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from normalize.helical import split_helical
from normalize.meshes import load_mesh
from normalize.mjcf_writer import BOUND_INERTIA, BOUND_MASS
from normalize.model import ArticulatedObject, Geometry, Inertial, Link
from normalize.transforms import matrix_quaternion

USD_NAME = "object.usda"
GEOMETRY_NAME = "object_meshes.usdc"
ROOT_JOINT = "root_joint"
JOINTS = "joints"
VISUALS = "visuals"
COLLISIONS = "collisions"
CONVEX_HULL = "convexHull"
MIMIC_JOINT = "arena:mimic:joint"
MIMIC_MULTIPLIER = "arena:mimic:multiplier"
MIMIC_OFFSET = "arena:mimic:offset"
AXES = "XYZ"


@dataclass(frozen=True)
class Collider:
    """A collision shape of a link as written: its geometry and, for a mesh, the
    MeshCollisionAPI approximation the simulator builds from it."""

    geometry: Geometry
    approximation: str | None


def link_colliders(link: Link) -> tuple[Collider, ...]:
    """The collision shapes written for `link`: its collision geometry, meshes as convex hulls."""
    return tuple(Collider(g, CONVEX_HULL if g.kind == "mesh" else None) for g in link.collisions)


def axis_frame(axis: np.ndarray) -> tuple[str, np.ndarray]:
    """(UsdPhysics axis token, rotation R) with R @ e = axis for the token's unit vector e: the
    token is the coordinate axis with the largest component of `axis`, R the smallest turn onto
    it (a half turn first when that component is negative); R is the identity when `axis` is
    that coordinate axis."""
    axis = np.asarray(axis, dtype=float)
    k = int(np.argmax(np.abs(axis)))
    e = np.eye(3)[k]
    flip = np.eye(3)
    if axis[k] < 0.0:  # a half turn about the next coordinate axis takes e to -e exactly
        m = np.eye(3)[(k + 1) % 3]
        flip = 2.0 * np.outer(m, m) - np.eye(3)
        e = -e
    v = np.cross(e, axis)
    skew = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    turn = np.eye(3) + skew + skew @ skew / (1.0 + float(e @ axis))
    return AXES[k], turn @ flip


def principal_inertia(inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(principal moments, rotation R of the principal axes) with inertia = R diag(moments) R^T."""
    moments, axes = np.linalg.eigh(np.asarray(inertia, dtype=float))
    if np.linalg.det(axes) < 0.0:
        axes[:, 2] = -axes[:, 2]
    return moments, axes


def usable_names(obj: ArticulatedObject) -> bool:
    """Whether every name `write_usd` makes a prim of is a USD identifier that does not clash
    with the stage's own prims (`joints`, `root_joint`)."""
    from pxr import Sdf

    names = [link.name for link in obj.links] + [joint.name for joint in obj.joints]
    names += [g.name for link in obj.links for g in (*link.visuals, *link.collisions) if g.name]
    reserved = {JOINTS, ROOT_JOINT}
    return all(Sdf.Path.IsValidIdentifier(n) for n in names) and not reserved & set(names)


def _quatf(rotation):
    from pxr import Gf

    w, x, y, z = matrix_quaternion(rotation)
    return Gf.Quatf(float(w), float(x), float(y), float(z))


def _place(xformable, pose: np.ndarray, scale=None) -> None:
    """Translate and orient (doubles) `xformable` by the rigid 4x4 `pose`, then scale it."""
    from pxr import Gf, UsdGeom

    double = UsdGeom.XformOp.PrecisionDouble
    if np.any(pose[:3, 3] != 0.0):
        xformable.AddTranslateOp(double).Set(Gf.Vec3d(*(float(v) for v in pose[:3, 3])))
    if not np.array_equal(pose[:3, :3], np.eye(3)):
        w, x, y, z = (float(v) for v in matrix_quaternion(pose[:3, :3]))
        xformable.AddOrientOp(double).Set(Gf.Quatd(w, x, y, z))
    if scale is not None and np.any(np.asarray(scale) != 1.0):
        xformable.AddScaleOp(double).Set(Gf.Vec3d(*(float(v) for v in scale)))


class _Writer:
    """Builds the two layers. The shapes' references to the geometry file are added to the
    layer once the stage editing it is gone: a stage would compose them, and a relative path
    does not resolve from a layer in memory."""

    def __init__(self, obj: ArticulatedObject, folder: Path):
        from pxr import Sdf, Tf, Usd, UsdGeom, UsdPhysics

        self.obj, self.folder = obj, folder
        self.layer = Sdf.Layer.CreateAnonymous(".usda")  # held here: the stage goes first
        self.stage = Usd.Stage.Open(self.layer)
        UsdGeom.SetStageUpAxis(self.stage, UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(self.stage, 1.0)
        UsdPhysics.SetStageKilogramsPerUnit(self.stage, 1.0)
        self.root = UsdGeom.Xform.Define(self.stage, "/" + Tf.MakeValidIdentifier(obj.name))
        self.stage.SetDefaultPrim(self.root.GetPrim())
        UsdPhysics.ArticulationRootAPI.Apply(self.root.GetPrim())
        self.geometry = Usd.Stage.CreateInMemory()
        UsdGeom.SetStageUpAxis(self.geometry, UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(self.geometry, 1.0)
        self.meshes: dict[str, str] = {}  # mesh file -> its prim path in the geometry file
        self.references: list[tuple] = []  # (shape's Sdf.Path, its mesh's path in the file)

    def path(self, *names: str):
        return self.root.GetPath().AppendPath("/".join(names))

    def write(self) -> Path:
        from pxr import Sdf

        poses = self.obj.link_poses()
        for link in self.obj.links:
            self.link(link, poses[link.name])
        self.joints()
        if self.meshes:
            _export(self.geometry.GetRootLayer(), self.folder / GEOMETRY_NAME)
        self.stage = None
        for shape, mesh in self.references:
            spec = self.layer.GetPrimAtPath(shape)
            spec.referenceList.Prepend(Sdf.Reference(f"./{GEOMETRY_NAME}", mesh))
        path = self.folder / USD_NAME
        _export(self.layer, path)
        return path

    def link(self, link: Link, pose: np.ndarray) -> None:
        from pxr import UsdGeom, UsdPhysics

        xform = UsdGeom.Xform.Define(self.stage, self.path(link.name))
        _place(xform, pose)
        prim = xform.GetPrim()
        UsdPhysics.RigidBodyAPI.Apply(prim)
        self.mass(UsdPhysics.MassAPI.Apply(prim), link)
        if link.visuals:
            UsdGeom.Xform.Define(self.stage, self.path(link.name, VISUALS))
        if link.collisions:
            UsdGeom.Xform.Define(self.stage, self.path(link.name, COLLISIONS))
        for i, g in enumerate(link.visuals):
            self.shape(g, (link.name, VISUALS, g.name or f"{link.name}_visual_{i}"))
        for i, collider in enumerate(link_colliders(link)):
            g = collider.geometry
            shape = self.shape(g, (link.name, COLLISIONS, g.name or f"{link.name}_collision_{i}"))
            shape.CreatePurposeAttr(UsdGeom.Tokens.guide)
            UsdPhysics.CollisionAPI.Apply(shape.GetPrim())
            if collider.approximation is not None:
                mesh_api = UsdPhysics.MeshCollisionAPI.Apply(shape.GetPrim())
                mesh_api.CreateApproximationAttr(collider.approximation)

    def mass(self, api, link: Link) -> None:
        from pxr import Gf

        inertial = link.inertial
        if inertial is None or inertial.mass <= 0.0:
            inertial = Inertial(BOUND_MASS, np.zeros(3), BOUND_INERTIA * np.eye(3), "bound")
        moments, axes = principal_inertia(inertial.inertia)
        api.CreateMassAttr(inertial.mass)
        api.CreateCenterOfMassAttr(Gf.Vec3f(*(float(v) for v in inertial.com)))
        api.CreateDiagonalInertiaAttr(Gf.Vec3f(*(float(v) for v in moments)))
        api.CreatePrincipalAxesAttr(_quatf(axes))

    def shape(self, g: Geometry, names: tuple[str, ...]):
        """The prim of one visual or collision shape, placed in its link."""
        from pxr import UsdGeom

        path = self.path(*names)
        scale = None
        if g.kind == "mesh":
            shape = UsdGeom.Mesh.Define(self.stage, path)
            self.references.append((path, self.mesh(g.filename)))
            scale = g.scale
        elif g.kind == "box":
            shape = UsdGeom.Cube.Define(self.stage, path)
            shape.CreateSizeAttr(1.0)
            shape.CreateExtentAttr([(-0.5, -0.5, -0.5), (0.5, 0.5, 0.5)])
            scale = g.size
        elif g.kind == "sphere":
            shape = UsdGeom.Sphere.Define(self.stage, path)
            r = g.size[0]
            shape.CreateRadiusAttr(r)
            shape.CreateExtentAttr([(-r, -r, -r), (r, r, r)])
        elif g.kind in ("cylinder", "capsule"):
            schema = UsdGeom.Cylinder if g.kind == "cylinder" else UsdGeom.Capsule
            shape = schema.Define(self.stage, path)
            r, length = g.size
            shape.CreateRadiusAttr(r)
            shape.CreateHeightAttr(length)
            shape.CreateAxisAttr(UsdGeom.Tokens.z)
            half = length / 2.0 + (r if g.kind == "capsule" else 0.0)
            shape.CreateExtentAttr([(-r, -r, -half), (r, r, half)])
        else:
            raise ValueError(f"geometry kind {g.kind!r} must be a mesh before writing")
        _place(shape, g.origin, scale)
        return shape

    def mesh(self, filename: str) -> str:
        """The path, in the geometry file, of the mesh holding a mesh file's points and
        triangles (written once per file)."""
        from pxr import UsdGeom, Vt

        if filename in self.meshes:
            return self.meshes[filename]
        path = f"/mesh_{len(self.meshes)}"
        loaded = load_mesh(self.folder / filename)
        points = np.ascontiguousarray(loaded.vertices, dtype=np.float32)
        mesh = UsdGeom.Mesh.Define(self.geometry, path)
        mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(points))
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray(len(loaded.faces), 3))
        indices = np.ascontiguousarray(loaded.faces, dtype=np.int32).ravel()
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(indices))
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        bounds = np.stack([points.min(axis=0), points.max(axis=0)])
        mesh.CreateExtentAttr(Vt.Vec3fArray.FromNumpy(bounds))
        mesh.GetPrim().SetCustomDataByKey("file", filename)
        self.meshes[filename] = path
        return path

    def joints(self) -> None:
        from pxr import Gf, Sdf, UsdGeom, UsdPhysics

        UsdGeom.Scope.Define(self.stage, self.path(JOINTS))
        fixed = UsdPhysics.FixedJoint.Define(self.stage, self.path(JOINTS, ROOT_JOINT))
        fixed.CreateBody1Rel().SetTargets([self.path(self.obj.root)])
        for joint in self.obj.joints:
            path = self.path(JOINTS, joint.name)
            if joint.type == "fixed":
                usd_joint = UsdPhysics.FixedJoint.Define(self.stage, path)
                turn = np.eye(3)
            else:
                revolute = joint.type in ("revolute", "continuous")
                schema = UsdPhysics.RevoluteJoint if revolute else UsdPhysics.PrismaticJoint
                usd_joint = schema.Define(self.stage, path)
                token, turn = axis_frame(joint.axis)
                usd_joint.CreateAxisAttr(token)
                if math.isfinite(joint.lower):
                    lower, upper = joint.lower, joint.upper
                    if revolute:
                        lower, upper = math.degrees(lower), math.degrees(upper)
                    usd_joint.CreateLowerLimitAttr(lower)
                    usd_joint.CreateUpperLimitAttr(upper)
            usd_joint.CreateBody0Rel().SetTargets([self.path(joint.parent)])
            usd_joint.CreateBody1Rel().SetTargets([self.path(joint.child)])
            usd_joint.CreateLocalPos0Attr(Gf.Vec3f(*(float(v) for v in joint.origin[:3, 3])))
            usd_joint.CreateLocalRot0Attr(_quatf(joint.origin[:3, :3] @ turn))
            usd_joint.CreateLocalPos1Attr(Gf.Vec3f(0.0, 0.0, 0.0))
            usd_joint.CreateLocalRot1Attr(_quatf(turn))
            if joint.mimic is not None:
                prim = usd_joint.GetPrim()
                target = self.path(JOINTS, joint.mimic.joint)
                prim.CreateRelationship(MIMIC_JOINT, custom=True).SetTargets([target])
                double = Sdf.ValueTypeNames.Double
                multiplier = prim.CreateAttribute(MIMIC_MULTIPLIER, double, custom=True)
                multiplier.Set(joint.mimic.multiplier)
                prim.CreateAttribute(MIMIC_OFFSET, double, custom=True).Set(joint.mimic.offset)


def installed() -> bool:
    """Whether usd-core (the `pxr` package, the `usd` extra) is installed."""
    import importlib.util

    return importlib.util.find_spec("pxr") is not None


def usd_version() -> str | None:
    """The installed usd-core's version ("26.11"), None without it."""
    if not installed():
        return None
    from pxr import Usd

    return ".".join(str(v) for v in Usd.GetVersion()[1:])


def _export(layer, path: Path) -> None:
    """Write `layer` to `path`. usd-core reports a failed write as a `Tf.ErrorException`: it is
    raised as the OSError it stands for (ENOSPC, EDQUOT, EROFS, else EIO), so that a full disk
    stops the build (`normalize.errors.write_failure`) instead of rejecting the object."""
    from pxr import Tf

    try:
        written = layer.Export(str(path))
    except Tf.ErrorException as exc:
        said = str(exc)
        code = next(
            (c for c in (errno.ENOSPC, errno.EDQUOT, errno.EROFS) if os.strerror(c) in said),
            errno.EIO,
        )
        message = f"usd-core could not write the file: {os.strerror(code)}"
        raise OSError(code, message, str(path)) from None
    if not written:
        raise OSError(errno.EIO, "usd-core could not write the file", str(path))


def write_usd(obj: ArticulatedObject, folder: Path) -> Path | None:
    """Write `folder/object.usda` for the written object `obj` (mesh filenames relative to
    `folder`); None when usd-core is not installed or a name is no USD identifier."""
    if not installed():
        return None
    obj = split_helical(obj)
    if not usable_names(obj):
        return None
    return _Writer(obj, Path(folder)).write()
