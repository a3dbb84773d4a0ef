"""Link contents: visual and collision shapes (primitives, meshes; shapes skipped or dropped)
and inertials, expressed in the link frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normalize.adapters.sdf.elements import _child, _children, _text
from normalize.adapters.sdf.includes import model_uri_target
from normalize.adapters.sdf.models import _LinkSpec
from normalize.changes import Change, shape_dropped
from normalize.errors import AssetError
from normalize.meshes import resolve_mesh_file
from normalize.model import Geometry, Inertial, Link
from normalize.transforms import invert

# Shapes without a surface of the object: an infinite ground plane, the empty shape.
_SKIPPED_SHAPES = ("plane", "empty")
# Shapes with a surface the model cannot hold: dropped, recorded and warned about.
_DROPPED_SHAPES = ("heightmap", "image", "polyline")


class _Links:
    """The reader's links and their contents (a base of `_SdfReader`)."""

    problems: list[AssetError] | None = None  # collecting (`each_problem`): none raised

    def collected(self, node, file, read, *args):
        """`read(*args)`; its AssetError is given `file` and the line of `node`, then raised,
        or when collecting recorded (None returned)."""
        try:
            return read(*args)
        except AssetError as exc:
            exc.path = exc.path or str(file)
            exc.line = exc.line or node.sourceline
            if self.problems is None:
                raise
            self.problems.append(exc)
            return None

    def link(self, spec: _LinkSpec, frame: np.ndarray) -> Link:
        """The link, its contents expressed in `frame` (its link frame, in model coordinates)."""
        to_link = invert(frame)
        element = f"link {spec.name}"
        visuals, collisions = [], []
        for tag, out in (("visual", visuals), ("collision", collisions)):
            for node in _children(spec.node, tag):
                where = f"{element} <{tag}>"
                geometry = self.collected(
                    node, spec.file, self.geometry, node, spec, to_link, where
                )
                if geometry is not None:
                    out.append(geometry)
        inertial = None
        node = _child(spec.node, "inertial")
        if node is not None:
            inertial = self.inertial(node, spec, to_link, element)
        return Link(spec.name, visuals, collisions, inertial, (spec.name,))

    def content_pose(self, node, spec: _LinkSpec, to_link, element) -> np.ndarray:
        pose, relative_to = self.pose(node, element, spec.file)
        base = spec.name
        if relative_to:
            base = self.frame_name(spec.scope, relative_to, element, spec.file)
        return to_link @ self.world_pose(base) @ pose

    def geometry(self, node, spec: _LinkSpec, to_link, element) -> Geometry | None:
        label = node.get("name")
        where = f"{element} {label}" if label else element
        container = _child(node, "geometry")
        shapes = [] if container is None else [c for c in container if isinstance(c.tag, str)]
        if len(shapes) != 1:
            raise self.error(
                f"<geometry> must hold exactly one shape, found {len(shapes)}",
                "sdf.missing" if not shapes else "geometry.unsupported",
                where,
                spec.file,
            )
        shape = shapes[0]
        kind = shape.tag
        if kind in _SKIPPED_SHAPES:
            self.changes.append(
                Change("sdf.geom_skipped", f"a {kind} has no surface of the object; skipped", where)
            )
            return None
        if kind in _DROPPED_SHAPES or (kind == "mesh" and _child(shape, "submesh") is not None):
            extent = None
            if kind == "heightmap" and _text(shape, "size") is not None:
                extent = self.vector(_text(shape, "size"), 3, "heightmap size", where, spec.file)
            what = "a <submesh> of a mesh" if kind == "mesh" else kind
            change, record = shape_dropped(what, where, "no equivalent shape", extent)
            self.changes.append(change)
            self.dropped.append(record)
            return None
        origin = self.content_pose(node, spec, to_link, where)
        file = spec.file
        if kind == "mesh":
            return self.mesh(shape, origin, label, where, file)
        if kind == "box":
            size = tuple(self.vector(_text(shape, "size"), 3, "box size", where, file))
        elif kind == "sphere":
            size = (self.scalar(shape, "radius", 1.0, where, file),)
        elif kind == "ellipsoid":
            size = tuple(self.vector(_text(shape, "radii", "1 1 1"), 3, "radii", where, file))
        elif kind in ("cylinder", "capsule"):
            size = (
                self.scalar(shape, "radius", 1.0, where, file),
                self.scalar(shape, "length", 1.0, where, file),
            )
        else:
            raise self.error(
                f"geometry <{kind}> is not supported", "geometry.unsupported", where, file
            )
        if any(v < 0 for v in size):
            raise self.error(f"{kind} has a negative size {size}", "geometry.invalid", where, file)
        return Geometry(kind, origin=origin, size=size, name=label)

    def mesh(self, shape, origin, label, where, file: Path) -> Geometry | None:
        uri = _text(shape, "uri")
        if uri is None:
            raise self.error("<mesh> has no <uri>", "sdf.missing", where, file)
        model_file = None
        if uri.lower().startswith("model://"):
            model_file = model_uri_target(uri, file, self.root, self.source.package_roots)
        target = resolve_mesh_file(
            uri,
            referrer=file,
            root=self.root,
            package_roots=self.source.package_roots,
            element=where,
            changes=self.changes,
            target=model_file,
        )
        if target is None:
            return None
        scale = np.ones(3)
        if _text(shape, "scale") is not None:
            scale = self.vector(_text(shape, "scale"), 3, "mesh scale", where, file)
        return Geometry("mesh", origin=origin, filename=str(target), scale=scale, name=label)

    def inertial(self, node, spec: _LinkSpec, to_link, element) -> Inertial | None:
        if node.get("auto", "false").strip().lower() in ("true", "1"):
            self.changes.append(
                Change(
                    "sdf.inertial_auto",
                    "<inertial auto='true'> asks the simulator to compute the inertia; left "
                    "to the normalizer",
                    element,
                )
            )
            return None
        file = spec.file
        pose = self.content_pose(node, spec, to_link, element)
        mass = self.scalar(node, "mass", 1.0, element, file)
        inertia = _child(node, "inertia")
        values = {}
        for key, default in (
            ("ixx", 1),
            ("ixy", 0),
            ("ixz", 0),
            ("iyy", 1),
            ("iyz", 0),
            ("izz", 1),
        ):
            values[key] = (
                float(default)
                if inertia is None
                else self.scalar(inertia, key, float(default), element, file)
            )
        tensor = np.array(
            [
                [values["ixx"], values["ixy"], values["ixz"]],
                [values["ixy"], values["iyy"], values["iyz"]],
                [values["ixz"], values["iyz"], values["izz"]],
            ]
        )
        rot = pose[:3, :3]
        if mass < 0:
            self.changes.append(
                Change(
                    "inertial.invalid_dropped",
                    f"inertial with negative mass {mass:g} dropped",
                    element,
                )
            )
            return None
        return Inertial(mass, pose[:3, 3], rot @ tensor @ rot.T, method="source")
