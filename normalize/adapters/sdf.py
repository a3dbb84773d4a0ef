"""SDFormat adapter (format `sdf`, versions 1.4 to 1.11).

Reads the first `<model>` of an entry file (directly under `<sdf>` or inside a `<world>`),
with nested and `<include>`d models flattened into one tree under `::`-scoped names. Files are
parsed with the hardened parser; every file reference stays inside the source root. The mapping
(poses, axes, limits, screw pitch, multi-DOF joints, loops) is documented in docs/formats.md.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from normalize.adapters.mjcf import discover_xml_entries
from normalize.adapters.registry import register
from normalize.changes import Change, shape_dropped
from normalize.discovery import Candidate
from normalize.errors import AssetError, ClosedLoopError, DuplicateNameError
from normalize.files import regular_status
from normalize.limits import MAX_INCLUDES, check_count
from normalize.meshes import resolve_mesh_file
from normalize.model import (
    ArticulatedObject,
    Geometry,
    Inertial,
    Joint,
    Link,
    Mimic,
    SourceInfo,
    unit_axis,
)
from normalize.multidof import decompose_joint
from normalize.paths import confine, realpath, resolve_reference
from normalize.safe_xml import parse_xml, parse_xml_bytes, read_limited
from normalize.sources import SourceConfig
from normalize.transforms import (
    from_rotation_translation,
    invert,
    make_transform,
    quaternion_matrix,
)

DEFAULT_ENTRY = "**/*.sdf"
VERSIONS = ("1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11")
# SDFormat's default joint limits are +-1e16, meaning "no limit"; any bound this large or
# infinite is read as unbounded.
UNBOUNDED = 1e16
# The deprecated <thread_pitch> (rad/m) and <screw_thread_pitch> (m/rev) agree when they give
# the same pitch to this relative tolerance (files write a handful of digits of 2 pi).
PITCH_AGREEMENT = 1e-3
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_NON_FINITE = re.compile(r"^[+-]?(nan|inf|infinity)$", re.IGNORECASE)
# Shapes without a surface of the object: an infinite ground plane, the empty shape.
_SKIPPED_SHAPES = ("plane", "empty")
# Shapes with a surface the model cannot hold: dropped, recorded and warned about.
_DROPPED_SHAPES = ("heightmap", "image", "polyline")
MODEL_FRAME = "__model__"


def _child(node, tag):
    return next((c for c in node if c.tag == tag), None)


def _children(node, tag):
    return [c for c in node if c.tag == tag]


def _text(node, tag, default=None):
    child = _child(node, tag)
    if child is None or child.text is None or not child.text.strip():
        return default
    return child.text.strip()


def _scoped(scope: str, name: str) -> str:
    return f"{scope}::{name}" if scope else name


@dataclass
class _Frame:
    """A named frame of the pose graph: its pose relative to another frame."""

    pose: np.ndarray
    relative_to: str  # scoped name, or "" for the top model frame


@dataclass
class _JointSpec:
    """parent, child: the links the joint connects (the frames named in the file resolved to
    the links they are attached to); frame: the joint frame's key in the pose graph."""

    name: str
    node: object
    scope: str
    file: Path
    version: tuple[int, int]
    parent: str
    child: str
    frame: str


@dataclass
class _LinkSpec:
    name: str
    node: object
    scope: str
    file: Path


@dataclass
class _Model:
    """frames: the pose graph; attached: frame -> the frame it is attached to (joints: their
    child; `<frame>`s: attached_to, else their model frame; model frames: the canonical link,
    else the first nested model's frame); links are attached to themselves."""

    frames: dict[str, _Frame] = field(default_factory=dict)
    links: list[_LinkSpec] = field(default_factory=list)
    joints: list[_JointSpec] = field(default_factory=list)
    attached: dict[str, str] = field(default_factory=dict)


def joint_key(scoped: str, version: tuple[int, int]) -> str:
    """The pose-graph key of a joint frame: its name from SDFormat 1.7 on, where every sibling
    has a unique name; before 1.7 names are unique per element type only (a link and a joint
    may share one), so joints get their own namespace."""
    return scoped if version >= (1, 7) else f"{scoped} (joint)"


class _SdfReader:
    def __init__(self, candidate: Candidate, changes: list[Change]):
        self.source = candidate.source
        self.root = candidate.source.path
        self.entry = candidate.path
        self.source_id = candidate.source_id
        self.changes = changes
        self.model = _Model()
        self.resolved: dict[str, np.ndarray] = {"": np.eye(4)}
        self.dropped: list[dict] = []  # see normalize.changes.shape_dropped
        self.includes = 0  # <include> elements expanded so far (bounded: MAX_INCLUDES)

    # ------------------------------------------------------------------ errors and numbers
    def error(self, message, code, element=None, path=None, stage="parse"):
        return AssetError(
            message, code=code, stage=stage, path=str(path or self.entry), element=element
        )

    def number(self, text: str, what: str, element: str, path: Path) -> float:
        token = text.strip()
        if _NUMBER.match(token):
            return float(token)
        if _NON_FINITE.match(token):
            if math.isinf(float(token)):
                return float(token)
            raise self.error(f"{what} is NaN", "parse.nan", element, path)
        raise self.error(f"{what} {token!r} is not a number", "parse.number", element, path)

    def vector(self, text, n: int, what: str, element: str, path: Path) -> np.ndarray:
        values = [self.number(t, what, element, path) for t in (text or "").split()]
        if len(values) != n:
            raise self.error(
                f"{what} {text!r} has {len(values)} numbers, expected {n}",
                "parse.vector",
                element,
                path,
            )
        if not np.all(np.isfinite(values)):
            raise self.error(f"{what} {text!r} is not finite", "parse.infinite", element, path)
        return np.array(values, dtype=float)

    def scalar(self, node, tag, default, element, path) -> float:
        text = _text(node, tag)
        return default if text is None else self.number(text, f"<{tag}>", element, path)

    # ------------------------------------------------------------------ poses
    def pose(self, node, element: str, path: Path) -> tuple[np.ndarray, str | None]:
        """(pose, relative_to attribute or None) of `node`'s <pose> child."""
        pose = _child(node, "pose")
        if pose is None:
            return np.eye(4), None
        if pose.get("frame"):
            raise self.error(
                f"<pose frame={pose.get('frame')!r}> (SDFormat 1.5-1.6 frame semantics) is not "
                "supported",
                "sdf.unsupported",
                element,
                path,
            )
        text = pose.text or "0 0 0 0 0 0"
        if pose.get("rotation_format", "euler_rpy") == "quat_xyzw":
            values = self.vector(text, 7, "pose", element, path)
            x, y, z, w = values[3:]
            norm = math.sqrt(w * w + x * x + y * y + z * z)
            if norm == 0:
                raise self.error("pose quaternion is zero", "parse.vector", element, path)
            rotation = quaternion_matrix((w / norm, x / norm, y / norm, z / norm))
            return from_rotation_translation(rotation, values[:3]), pose.get("relative_to")
        values = self.vector(text, 6, "pose", element, path)
        rpy = values[3:]
        if pose.get("degrees", "false").strip().lower() in ("true", "1"):
            rpy = np.radians(rpy)
        return make_transform(values[:3], rpy), pose.get("relative_to")

    def frame_name(self, scope: str, name: str, element: str, path: Path) -> str:
        """The scoped frame a name refers to inside `scope`."""
        if name == MODEL_FRAME:
            return _scoped(scope, MODEL_FRAME) if scope else ""
        if name == "world":
            return "world"
        scoped = _scoped(scope, name)
        if scoped not in self.model.frames and _scoped(scoped, MODEL_FRAME) in self.model.frames:
            return _scoped(scoped, MODEL_FRAME)  # a nested model's name is its model frame
        if scoped not in self.model.frames:
            raise self.error(f"frame {name!r} is not defined", "sdf.unknown_name", element, path)
        return scoped

    def world_pose(self, name: str) -> np.ndarray:
        """Pose of a scoped frame in the top model frame (memoized; cycles refused)."""
        if name in self.resolved:
            return self.resolved[name]
        chain, current = [], name
        while current not in self.resolved:
            if current in chain:
                raise self.error(
                    "pose frames refer to each other in a cycle: " + " -> ".join(chain),
                    "sdf.pose_cycle",
                    f"frame {name}",
                )
            chain.append(current)
            current = self.model.frames[current].relative_to
        for item in reversed(chain):
            frame = self.model.frames[item]
            self.resolved[item] = self.resolved[frame.relative_to] @ frame.pose
        return self.resolved[name]

    # ------------------------------------------------------------------ reading models
    def add_frame(self, name, pose, relative_to, element, path):
        if name in self.model.frames:
            raise DuplicateNameError(
                f"name {name!r} is used twice in one model", element=element, path=str(path)
            )
        self.model.frames[name] = _Frame(pose, relative_to)

    def read_model(self, node, scope: str, file: Path, version, stack: tuple[Path, ...]):
        """Collect the links, joints and frames of a (possibly nested) model."""
        model_frame = _scoped(scope, MODEL_FRAME) if scope else ""
        if node.get("placement_frame") or _child(node, "placement_frame") is not None:
            raise self.error(
                "placement_frame is not supported", "sdf.unsupported", f"model {scope}", file
            )
        # Names first, so that poses may refer to frames declared later in the file.
        pending = []
        first_link = first_model = None
        for child in node:
            tag, name = child.tag, child.get("name")
            if tag in ("link", "joint", "frame") and not name:
                raise self.error(f"<{tag}> without a name", "sdf.missing", f"<{tag}>", file)
            if tag == "link":
                self.model.links.append(_LinkSpec(_scoped(scope, name), child, scope, file))
                check_count("links", len(self.model.links), self.source.max_links, file)
                pending.append((tag, name, child))
                first_link = first_link or _scoped(scope, name)
            elif tag in ("frame", "joint", "model", "include"):
                pending.append((tag, name, child))
        for tag, name, child in pending:
            if tag in ("link", "frame"):
                default = model_frame
                if tag == "frame" and child.get("attached_to"):
                    default = None
                self.add_frame(_scoped(scope, name), np.eye(4), default, f"{tag} {name}", file)
                if tag == "frame":
                    self.model.attached[_scoped(scope, name)] = model_frame
            elif tag == "joint":
                key = joint_key(_scoped(scope, name), version)
                self.add_frame(key, np.eye(4), None, f"joint {name}", file)
        for tag, name, child in pending:
            if tag == "model":
                inner = self.nested(child, scope, name, file, version, stack, model_frame)
            elif tag == "include":
                inner = self.include(child, scope, file, stack, model_frame)
            else:
                continue
            first_model = first_model or _scoped(inner, MODEL_FRAME)
        # The model frame is attached to its canonical link: the one named, else the first
        # link, else the first nested model's frame (for joints and frames that name a model).
        canonical = first_link or first_model
        if node.get("canonical_link"):
            where = f"model {scope or '(top)'}"
            canonical = self.frame_name(scope, node.get("canonical_link"), where, file)
        if canonical:
            self.model.attached[model_frame] = canonical
        for tag, name, child in pending:
            if tag not in ("link", "frame", "joint"):
                continue
            scoped = _scoped(scope, name)
            element = f"{tag} {scoped}"
            pose, relative_to = self.pose(child, element, file)
            key = joint_key(scoped, version) if tag == "joint" else scoped
            frame = self.model.frames[key]
            frame.pose = pose
            if tag == "joint":
                ends = []
                for role in ("parent", "child"):
                    text = _text(child, role)
                    if text is None:
                        raise self.error(f"joint has no <{role}>", "sdf.missing", element, file)
                    ends.append(self.frame_name(scope, text, element, file))
                spec = _JointSpec(scoped, child, scope, file, version, *ends, frame=key)
                self.model.joints.append(spec)
                check_count("joints", len(self.model.joints), self.source.max_links, file)
                frame.relative_to = ends[1]  # SDFormat: a joint's pose is in its child's frame
                self.model.attached[key] = ends[1]
            elif tag == "frame" and child.get("attached_to"):
                target = self.frame_name(scope, child.get("attached_to"), element, file)
                frame.relative_to = self.model.attached[scoped] = target
            if relative_to:
                frame.relative_to = self.frame_name(scope, relative_to, element, file)

    def nested(self, node, scope, name, file, version, stack, model_frame):
        if not name:
            raise self.error("nested <model> without a name", "sdf.missing", "<model>", file)
        inner = _scoped(scope, name)
        pose, relative_to = self.pose(node, f"model {inner}", file)
        target = model_frame
        if relative_to:
            target = self.frame_name(scope, relative_to, f"model {inner}", file)
        self.add_frame(_scoped(inner, MODEL_FRAME), pose, target, f"model {inner}", file)
        self.read_model(node, inner, file, version, stack)
        return inner

    def include(self, node, scope, file, stack, model_frame):
        uri = _text(node, "uri")
        if uri is None:
            raise self.error("<include> without <uri>", "sdf.missing", "<include>", file)
        self.includes += 1
        check_count("<include> elements", self.includes, MAX_INCLUDES, file)
        target = include_target(uri, file, self.source)
        real = Path(os.path.realpath(target))
        if real in stack:
            raise self.error(
                "include cycle: " + " -> ".join(p.name for p in (*stack, real)),
                "sdf.include_cycle",
                f"include {uri}",
                file,
            )
        included, version = self.first_model(target)
        name = _text(node, "name") or included.get("name")
        if not name:
            raise self.error("included model has no name", "sdf.missing", f"include {uri}", file)
        inner = _scoped(scope, name)
        pose, relative_to = self.pose(node, f"include {uri}", file)
        if _child(node, "pose") is None:
            pose, relative_to = self.pose(included, f"model {inner}", target)
        where = model_frame
        if relative_to:
            where = self.frame_name(scope, relative_to, f"include {uri}", file)
        self.add_frame(_scoped(inner, MODEL_FRAME), pose, where, f"model {inner}", file)
        self.read_model(included, inner, target, version, (*stack, real))
        return inner

    def first_model(self, path: Path):
        """(first <model> element, version) of an SDFormat file."""
        xml = parse_xml(path, self.source.max_file_bytes, self.changes)
        if xml.tag != "sdf":
            raise self.error(f"root element is <{xml.tag}>, not <sdf>", "sdf.not_sdf", path=path)
        version = xml.get("version", "").strip()
        if version not in VERSIONS:
            raise self.error(
                f"SDFormat version {version or '(missing)'!r} is not supported "
                f"({', '.join(VERSIONS)})",
                "sdf.version",
                "sdf",
                path,
            )
        models = _children(xml, "model")
        for world in _children(xml, "world"):
            models += _children(world, "model")
        if not models:
            raise self.error("the file holds no <model>", "sdf.no_model", "sdf", path)
        if len(models) > 1:
            self.changes.append(
                Change(
                    "sdf.models_ignored",
                    f"{len(models)} models in {path.name}; only the first, "
                    f"{models[0].get('name')!r}, is read",
                    element=f"model {models[0].get('name')}",
                )
            )
        major, minor = (int(v) for v in version.split("."))
        return models[0], (major, minor)

    # ------------------------------------------------------------------ links
    def link(self, spec: _LinkSpec, frame: np.ndarray) -> Link:
        """The link, its contents expressed in `frame` (its link frame, in model coordinates)."""
        to_link = invert(frame)
        element = f"link {spec.name}"
        visuals, collisions = [], []
        for tag, out in (("visual", visuals), ("collision", collisions)):
            for node in _children(spec.node, tag):
                geometry = self.geometry(node, spec, to_link, f"{element} <{tag}>")
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

    # ------------------------------------------------------------------ joints
    def axis(self, spec: _JointSpec, tag: str, element: str, required=True):
        """(unit axis in the joint frame, (lower, upper) with None for unbounded, axis node)."""
        node = _child(spec.node, tag)
        if node is None:
            if required:
                raise self.error(f"joint has no <{tag}>", "sdf.missing", element, spec.file)
            return None, (None, None), None
        xyz = _child(node, "xyz")
        vector = self.vector(
            xyz.text if xyz is not None else "0 0 1", 3, f"{tag} xyz", element, spec.file
        )
        vector = unit_axis(
            vector, what=tag, element=element, changes=self.changes, path=str(spec.file)
        )
        joint_frame = self.world_pose(spec.frame)
        expressed = self.axis_frame(spec, node, xyz, element)
        if expressed is not None:
            rotation = joint_frame[:3, :3].T @ self.world_pose(expressed)[:3, :3]
            vector = rotation @ vector
        limit = _child(node, "limit")
        bounds = (None, None)
        if limit is not None:
            bounds = tuple(
                self.bound(_text(limit, key), key, element, spec.file) for key in ("lower", "upper")
            )
        return vector, bounds, node

    def axis_frame(self, spec: _JointSpec, node, xyz, element) -> str | None:
        """The frame the axis is expressed in when it is not the joint frame."""
        model_frame = _scoped(spec.scope, MODEL_FRAME) if spec.scope else ""
        if spec.version < (1, 5):
            return model_frame
        if spec.version < (1, 7):
            flag = _text(node, "use_parent_model_frame", "false").lower()
            return model_frame if flag in ("true", "1") else None
        expressed = xyz.get("expressed_in") if xyz is not None else None
        if expressed:
            return self.frame_name(spec.scope, expressed, element, spec.file)
        return None

    def actuation(self, axis_node, element: str, file) -> dict[str, float | None]:
        """{'effort', 'velocity'} of the axis's `<limit>`: the value when positive, else None.
        SDFormat's default -1 means "no limit", which the model holds as None; an infinite
        value is no limit either."""
        limit = None if axis_node is None else _child(axis_node, "limit")
        out: dict[str, float | None] = {"effort": None, "velocity": None}
        for key in out:
            text = None if limit is None else _text(limit, key)
            if text is not None:
                value = self.number(text, f"limit {key}", element, file)
                out[key] = value if 0 < value < math.inf else None
        return out

    def bound(self, text, key, element, file) -> float | None:
        if text is None:
            return None
        value = self.number(text, f"limit {key}", element, file)
        return None if abs(value) >= UNBOUNDED else value

    def limits(self, bounds, kind, spec, element) -> tuple[float, float] | None:
        """(lower, upper) when bounded both ways, None when unbounded; one-sided limits and
        reversed ones (unless allowed) are refused."""
        lower, upper = bounds
        if lower is None and upper is None:
            return None
        if lower is None or upper is None:
            raise self.error(
                f"{kind} joint is limited on one side only ({lower}, {upper})",
                "limits.one_sided",
                element,
                spec.file,
            )
        if lower > upper:
            allowance = self.source.allowance("limits.reversed", self.source_id)
            if allowance is None:
                raise self.error(
                    f"lower limit {lower!r} exceeds upper limit {upper!r}",
                    "limits.reversed",
                    element,
                    spec.file,
                )
            self.changes.append(
                Change(
                    "limits.swapped",
                    f"lower limit {lower!r} exceeds upper limit {upper!r}; swapped (allowed by "
                    "the source's limits.reversed allowance)",
                    element,
                )
            )
            lower, upper = upper, lower
        return lower, upper

    def screw_pitch(self, spec: _JointSpec, element: str) -> float:
        """Pitch in metres per radian (positive: right-handed) from <screw_thread_pitch>
        (m/rev, positive right-handed) or the deprecated <thread_pitch> (rad/m, positive
        left-handed, so pitch = -1 / thread_pitch)."""
        current = _text(spec.node, "screw_thread_pitch")
        old = _text(spec.node, "thread_pitch")
        if current is None and old is None:
            raise self.error(
                "screw joint has neither <screw_thread_pitch> nor <thread_pitch>; its pitch is "
                "not guessed",
                "joint.screw_pitch_missing",
                element,
                spec.file,
                stage="model",
            )
        pitch = None
        if current is not None:
            pitch = self.number(current, "screw_thread_pitch", element, spec.file) / (2 * math.pi)
        if old is not None:
            value = self.number(old, "thread_pitch", element, spec.file)
            if value == 0:
                raise self.error(
                    "thread_pitch is 0 (an infinite pitch)",
                    "joint.screw_pitch_invalid",
                    element,
                    spec.file,
                )
            from_old = -1.0 / value
            if pitch is None:
                pitch = from_old
            elif not math.isclose(pitch, from_old, rel_tol=PITCH_AGREEMENT):
                self.changes.append(
                    Change(
                        "sdf.thread_pitch_conflict",
                        f"<screw_thread_pitch> gives {pitch:.12g} m/rad but the deprecated "
                        f"<thread_pitch> {value:g} rad/m gives {from_old:.12g} m/rad; "
                        "<screw_thread_pitch> takes precedence, as in SDFormat",
                        element,
                    )
                )
        return pitch

    def joint(self, spec: _JointSpec, origin: np.ndarray):
        """(extra links, joints, mimic node or None) for one SDF joint."""
        element = f"joint {spec.name}"
        kind = spec.node.get("type", "")
        common = {"name": spec.name, "parent": spec.parent, "child": spec.child, "origin": origin}
        if kind == "fixed":
            return [], [Joint(type="fixed", **common)], None
        if kind in ("revolute", "continuous", "prismatic", "screw"):
            axis, bounds, axis_node = self.axis(spec, "axis", element)
            limits = None if kind == "continuous" else self.limits(bounds, kind, spec, element)
            lower, upper = limits or (-math.inf, math.inf)
            pitch = 0.0
            if kind == "revolute" and limits is None:
                kind = "continuous"
                self.changes.append(
                    Change(
                        "sdf.revolute_unbounded",
                        f"revolute joint without finite limits (none, or |limit| >= "
                        f"{UNBOUNDED:g}) read as continuous",
                        element,
                    )
                )
            elif kind == "screw":
                kind, pitch = "helical", self.screw_pitch(spec, element)
            joint = Joint(
                type=kind,
                axis=axis,
                lower=lower,
                upper=upper,
                pitch=pitch,
                **self.actuation(axis_node, element, spec.file),
                **common,
            )
            return [], [joint], _child(axis_node, "mimic")
        if kind in ("universal", "revolute2"):
            first, first_bounds, _ = self.axis(spec, "axis", element)
            second, second_bounds, _ = self.axis(spec, "axis2", element)
            limits = [self.limits(b, kind, spec, element) for b in (first_bounds, second_bounds)]
            links, joints, change = decompose_joint(
                kind, axes=(first, second), limits=limits, **common
            )
            self.changes.append(change)
            return links, joints, None
        if kind == "ball":
            links, joints, change = decompose_joint("ball", **common)
            self.changes.append(change)
            return links, joints, None
        raise self.error(
            f"joint type {kind!r} is not supported",
            "joint.unsupported",
            element,
            spec.file,
            stage="model",
        )

    def mimic(self, node, follower: Joint, joints: dict[str, Joint], scope, file) -> None:
        """SDFormat 1.11 <mimic>: follower = multiplier (leader - reference) + offset."""
        element = f"joint {follower.name}"
        leader = _scoped(scope, node.get("joint", ""))
        if leader not in joints or node.get("axis", "axis") != "axis":
            self.changes.append(
                Change(
                    "sdf.mimic_ignored",
                    f"mimics {node.get('joint')!r} {node.get('axis', 'axis')}, which is not a "
                    "one-DOF joint of this model",
                    element,
                )
            )
            return
        multiplier = self.scalar(node, "multiplier", 1.0, element, file)
        offset = self.scalar(node, "offset", 0.0, element, file)
        reference = self.scalar(node, "reference", 0.0, element, file)
        joints[follower.name] = replace(
            follower, mimic=Mimic(leader, multiplier, offset - multiplier * reference)
        )

    # ------------------------------------------------------------------ object
    def read_entities(self):
        """(model name, its joints) after reading every link, joint and frame name and pose."""
        node, version = self.first_model(self.entry)
        name = node.get("name") or self.entry.stem
        model_pose, _ = self.pose(node, f"model {name}", self.entry)
        # The world frame, seen from the model frame (used by joints to "world").
        self.resolved["world"] = invert(model_pose)
        self.read_model(node, "", self.entry, version, (Path(os.path.realpath(self.entry)),))
        links = {link.name for link in self.model.links}
        for spec in self.model.joints:
            element = f"joint {spec.name}"
            spec.parent = self.attached_link(spec.parent, links, element, spec.file)
            spec.child = self.attached_link(spec.child, links, element, spec.file)
        return name, self.model.joints

    def attached_link(self, frame: str, links: set[str], element: str, path: Path) -> str:
        """The link (or `world`) a frame is attached to: a joint's parent or child may name a
        link, a `<frame>`, a joint or a model frame (SDFormat 1.8+); they move with it."""
        chain, current = [], frame
        while current not in links and current != "world":
            if current in chain or current not in self.model.attached:
                problem = (
                    "is attached to frames in a cycle: " + " -> ".join([*chain, current])
                    if current in chain
                    else f"is attached to {current or 'the model frame'!r}, which has no link"
                )
                code = "sdf.pose_cycle" if current in chain else "sdf.missing"
                raise self.error(f"frame {frame!r} {problem}", code, element, path)
            chain.append(current)
            current = self.model.attached[current]
        return current

    def each_joint(self) -> dict[str, list[Joint] | AssetError]:
        """Every joint converted on its own, in the frame of its parent link's SDF frame."""
        _, specs = self.read_entities()
        out: dict[str, list[Joint] | AssetError] = {}
        for spec in specs:
            origin = invert(self.world_pose(spec.parent)) @ self.world_pose(spec.frame)
            try:
                out[spec.name] = self.joint(spec, origin)[1]
            except AssetError as exc:
                out[spec.name] = exc
        return out

    def read(self) -> ArticulatedObject:
        name, specs = self.read_entities()
        check_tree(specs, self.entry)
        uses_world = any(s.parent == "world" for s in specs)
        frames = {}  # link name -> our link frame in model coordinates
        for spec in specs:
            frames[spec.child] = self.world_pose(spec.frame)
        for link in self.model.links:
            # The root link's frame is the model frame: the model's axes (z up) stay the
            # world's even when the root link's <pose> is rotated.
            frames.setdefault(link.name, np.eye(4))
        links = [Link("world")] if uses_world else []
        if uses_world:
            frames["world"] = self.resolved["world"]
        links += [self.link(spec, frames[spec.name]) for spec in self.model.links]
        joints: dict[str, Joint] = {}
        mimics = []
        for spec in specs:
            origin = invert(frames[spec.parent]) @ self.world_pose(spec.frame)
            extra, new, mimic = self.joint(spec, origin)
            links += extra
            joints.update((j.name, j) for j in new)
            if mimic is not None:
                mimics.append((mimic, spec))
        for mimic, spec in mimics:
            self.mimic(mimic, joints[spec.name], joints, spec.scope, spec.file)
        source_frames = {
            link.name: invert(frames[link.name]) @ self.world_pose(link.name)
            for link in self.model.links
        }
        info = SourceInfo(
            library=self.source.name,
            labels={"robot_name": name},
            changes=tuple(self.changes),
            extra={
                "source_frames": source_frames,
                "dropped_shapes": tuple(self.dropped),
            },
        )
        return ArticulatedObject(name, links, list(joints.values()), info)


def read_joints(candidate: Candidate) -> tuple[dict[str, list[Joint] | AssetError], list[Change]]:
    """Each joint of a candidate's model converted on its own (no tree or loop check), or the
    AssetError refusing it, and the changes recorded: what a rejected model's joints would have
    been."""
    changes: list[Change] = []
    return _SdfReader(candidate, changes).each_joint(), changes


def check_tree(specs: list[_JointSpec], path: Path) -> None:
    """Refuse joints that close a kinematic loop (the model cannot hold them, and cutting one
    would change the mechanism's mobility) and joints whose child is the world."""
    group: dict[str, str] = {}

    def find(x: str) -> str:
        while group.get(x, x) != x:
            x = group[x]
        return x

    for spec in specs:
        if spec.child == "world":
            raise AssetError(
                "the world cannot be a joint's child",
                code="model.root",
                stage="model",
                path=str(path),
                element=f"joint {spec.name}",
            )
        a, b = find(spec.parent), find(spec.child)
        if a == b:
            raise ClosedLoopError(
                f"joint {spec.name} ({spec.parent} -> {spec.child}) closes a kinematic loop; "
                "closed loops are refused, not cut",
                element=f"joint {spec.name}",
                path=str(path),
            )
        group[a] = b


# --------------------------------------------------------------------------- file references
def model_uri_target(uri: str, referrer: Path, root: Path, package_roots=()) -> Path:
    """A `model://name/rest` URI resolved like Gazebo's model path, but only inside the source
    root: a folder called `name` in a configured package root or in a folder between the
    referring file and the root. Anything else is refused with ``path.remote``."""
    try:
        target = resolve_reference(
            "package://" + uri[len("model://") :],
            referrer=referrer,
            root=root,
            package_roots=package_roots,
        )
    except AssetError:
        target = None
    if target is None or not target.exists():
        raise AssetError(
            f"{uri!r} does not resolve to a file inside the source root (model:// URIs are "
            "looked up only there)",
            code="path.remote",
            stage="resolve",
            path=str(referrer),
            element=f"uri {uri}",
        )
    return target


def include_target(uri: str, referrer: Path, source: SourceConfig) -> Path:
    """The SDFormat file an <include> URI in `referrer` names: a file, or a model folder
    holding model.config (its <sdf> entry) or model.sdf."""
    root, package_roots = source.path, source.package_roots
    if uri.lower().startswith("model://"):
        target = model_uri_target(uri, referrer, root, package_roots)
    else:
        target = resolve_reference(uri, referrer=referrer, root=root, package_roots=package_roots)
    if target.is_dir():
        name = "model.sdf"
        config = target / "model.config"
        if config.is_file():
            xml = parse_xml(confine(config, root, referrer=str(referrer)), source.max_file_bytes)
            name = next((e.text.strip() for e in xml.iter("sdf") if e.text), name)
        target = confine(target / name, root, referrer=str(referrer))
    if not regular_status(target):
        raise AssetError(
            f"included model {uri!r} does not exist (looked for {target})",
            code="sdf.include_missing",
            stage="resolve",
            path=str(referrer),
            element=f"include {uri}",
        )
    return target


def _sdf_includes(path: Path, source: SourceConfig) -> list[Path]:
    """Files `path` includes, directly or through its includes (for discovery). Raises
    `sdf.include_cycle` when the includes lead back to `path`: such a file stays a candidate
    (and is rejected when loaded) instead of vanishing as "included" by its own cycle."""
    out: list[Path] = []
    stack = [path]
    entry = Path(realpath(path))
    while stack:
        current = stack.pop()
        data = read_limited(current, source.max_file_bytes)
        if b"include" not in data:
            continue  # a file without the word includes nothing: no need to parse it here
        xml = parse_xml_bytes(data, current)
        for include in xml.iter("include"):
            uri = _text(include, "uri")
            if not uri:
                continue
            try:
                target = include_target(uri, current, source)
            except AssetError:
                continue
            real = Path(realpath(target))
            if real == entry:
                raise AssetError(
                    f"include cycle back to {path.name}",
                    code="sdf.include_cycle",
                    stage="parse",
                    path=str(current),
                    element=f"include {uri}",
                )
            if real not in out:
                out.append(real)
                stack.append(target)
    return out


@register
class SdfAdapter:
    format = "sdf"

    def discover(self, source: SourceConfig) -> list[Candidate]:
        return discover_xml_entries(source, DEFAULT_ENTRY, lambda p: _sdf_includes(p, source))

    def load(self, candidate: Candidate) -> ArticulatedObject:
        source = candidate.source
        confine(candidate.path, source.path)
        changes: list[Change] = []
        try:
            obj = _SdfReader(candidate, changes).read()
        except AssetError as exc:
            exc.path = exc.path or str(candidate.path)
            raise
        info = SourceInfo(
            library=source.name,
            source_id=candidate.source_id,
            source_path=candidate.source_path,
            license=source.license,
            labels={
                "robot_name": obj.source.labels["robot_name"],
                "folder": Path(candidate.source_path).parent.as_posix(),
            },
            changes=obj.source.changes,
            extra=dict(obj.source.extra),
        )
        return obj.replace(source=info)
