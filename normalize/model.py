"""The canonical in-memory model of an articulated object.

Adapters build it, the normalizer rewrites it, the URDF writer serializes it, verification,
taxonomy and export read it. The metric package never imports it: `ArticulatedObject.screws`
and `ArticulatedObject.child_mass_moments` hand it plain arrays.

Frames follow URDF. A joint's `origin` is the pose of the joint frame (which is also the child
link frame at q = 0) in the parent link frame; `axis` is expressed in the joint frame. The world
frame is the root link frame. Every array is float64; transforms are 4x4.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from normalize.changes import Change
from normalize.errors import (
    AxisNotUnitError,
    ClosedLoopError,
    CycleError,
    DuplicateNameError,
    InertialError,
    JointTypeError,
    LimitError,
    MimicError,
    MimicLoopError,
    MimicTargetError,
    NonFiniteError,
    RootError,
    UnknownLinkError,
    ZeroAxisError,
)
from normalize.transforms import axis_angle_matrix

JOINT_TYPES = ("fixed", "revolute", "prismatic", "continuous", "helical")
GEOMETRY_KINDS = ("mesh", "box", "cylinder", "sphere", "capsule", "ellipsoid")
AXIS_UNIT_TOLERANCE = 1e-9


def unit_axis(
    axis: np.ndarray, *, what: str, element: str, changes: list[Change], path: str | None = None
) -> np.ndarray:
    """A joint axis read from a file, scaled to unit length: recorded as `axis.normalized` in
    `changes` when its length is off 1 by more than AXIS_UNIT_TOLERANCE; the zero vector raises
    `ZeroAxisError`. `what` names the axis in messages."""
    found = direction(axis)
    if found is None:
        raise ZeroAxisError(f"{what} is the zero vector", path=path, element=element)
    unit, length = found
    if abs(length - 1.0) <= AXIS_UNIT_TOLERANCE:
        return axis
    changes.append(
        Change(
            "axis.normalized",
            f"{what} {axis.tolist()} has length {length:.12g}; scaled to unit length",
            element=element,
        )
    )
    return unit


def direction(vector: np.ndarray) -> tuple[np.ndarray, float] | None:
    """(unit vector, length) of a finite vector, None for the zero vector. The vector is divided
    by its largest component first, so that no square overflows (1e300 1e300 0) or underflows
    (1e-300 0 0); the length itself is inf where it exceeds the float range."""
    largest = float(np.max(np.abs(vector)))
    if largest == 0.0:
        return None
    scaled = np.asarray(vector, dtype=float) / largest
    norm = float(np.linalg.norm(scaled))
    with np.errstate(over="ignore"):
        return scaled / norm, float(np.float64(largest) * norm)


def _array(value, shape, what: str, element: str) -> np.ndarray:
    arr = np.array(value, dtype=float)
    if arr.shape != shape:
        raise NonFiniteError(f"{what} must have shape {shape}, got {arr.shape}", element=element)
    if not np.all(np.isfinite(arr)):
        raise NonFiniteError(
            f"{what} contains NaN or infinite values: {arr.tolist()}", element=element
        )
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class Geometry:
    """A visual or collision shape of a link.

    kind: "mesh" or a primitive ("box", "cylinder", "sphere", "capsule", "ellipsoid").
    origin: pose of the shape in the link frame.
    filename: for meshes, the file as the adapter resolved it (absolute) or, once written, the
        path relative to the object folder.
    scale: per-axis mesh scale.
    size: box (x, y, z) extents; cylinder and capsule (radius, length); sphere (radius,);
        ellipsoid (x, y, z) semi-axes.
    """

    kind: str
    origin: np.ndarray = field(default_factory=lambda: np.eye(4))
    filename: str | None = None
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    size: tuple[float, ...] = ()
    name: str | None = None

    def __post_init__(self):
        element = f"geometry {self.name or self.filename or self.kind}"
        if self.kind not in GEOMETRY_KINDS:
            raise JointTypeError(f"unknown geometry kind {self.kind!r}", element=element)
        object.__setattr__(self, "origin", _array(self.origin, (4, 4), "geometry origin", element))
        object.__setattr__(self, "scale", _array(self.scale, (3,), "mesh scale", element))
        size = tuple(float(v) for v in self.size)
        if not all(math.isfinite(v) for v in size):
            raise NonFiniteError(f"geometry size is not finite: {size}", element=element)
        object.__setattr__(self, "size", size)
        if self.kind == "mesh" and not self.filename:
            raise NonFiniteError("mesh geometry without a filename", element=element)


@dataclass(frozen=True, eq=False)
class Inertial:
    """Mass moments of a link: mass, centre of mass and inertia tensor about the centre of mass,
    both expressed in the link frame. `method` records where they came from (e.g. "source",
    "mesh_volume", "mesh_convex_hull", "merged")."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray
    method: str = "source"

    def __post_init__(self):
        element = "inertial"
        if not math.isfinite(self.mass):
            raise NonFiniteError(f"mass is not finite: {self.mass}", element=element)
        object.__setattr__(self, "mass", float(self.mass))
        object.__setattr__(self, "com", _array(self.com, (3,), "centre of mass", element))
        object.__setattr__(self, "inertia", _array(self.inertia, (3, 3), "inertia", element))

    def problems(self) -> list[str]:
        """Reasons this inertial is not physically valid (empty when it is)."""
        out = []
        if self.mass <= 0:
            out.append(f"mass {self.mass:g} is not positive")
        inertia = self.inertia
        if not np.allclose(inertia, inertia.T, atol=1e-12 + 1e-9 * np.abs(inertia).max()):
            out.append("inertia tensor is not symmetric")
            return out
        eig = np.linalg.eigvalsh(inertia)
        if eig[0] <= 0:
            out.append(f"inertia tensor is not positive definite (eigenvalues {eig.tolist()})")
        elif eig[0] + eig[1] < eig[2] * (1 - 1e-9):
            out.append(f"principal moments {eig.tolist()} violate the triangle inequality")
        return out


@dataclass(frozen=True, eq=False)
class Link:
    name: str
    visuals: tuple[Geometry, ...] = ()
    collisions: tuple[Geometry, ...] = ()
    inertial: Inertial | None = None
    source_names: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "visuals", tuple(self.visuals))
        object.__setattr__(self, "collisions", tuple(self.collisions))
        object.__setattr__(self, "source_names", tuple(self.source_names) or (self.name,))

    def reexpressed(self, pose: np.ndarray) -> Link:
        """The same link with its shapes and inertial expressed in a new link frame, in which
        the current link frame has the 4x4 `pose`."""
        inertial = self.inertial
        if inertial is not None:
            rot = pose[:3, :3]
            inertial = replace(
                inertial,
                com=rot @ inertial.com + pose[:3, 3],
                inertia=rot @ inertial.inertia @ rot.T,
            )
        return replace(
            self,
            visuals=tuple(replace(g, origin=pose @ g.origin) for g in self.visuals),
            collisions=tuple(replace(g, origin=pose @ g.origin) for g in self.collisions),
            inertial=inertial,
        )


@dataclass(frozen=True, eq=False)
class Mimic:
    """q_this = multiplier * q_joint + offset."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True, eq=False)
class Joint:
    """A one-DOF joint.

    Limits: revolute joints have finite lower <= upper; continuous joints have lower = -inf,
    upper = +inf; prismatic and helical joints are either bounded or unbounded both ways;
    fixed joints have [0, 0].
    pitch: translation along the axis per radian of rotation (helical joints only), metres/rad.
    effort, velocity: the source's actuation limits (N or N m, m/s or rad/s), None when it gives
    none; carried for simulators, not part of the motion.
    """

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray = field(default_factory=lambda: np.eye(4))
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    lower: float = 0.0
    upper: float = 0.0
    pitch: float = 0.0
    mimic: Mimic | None = None
    source_name: str | None = None
    effort: float | None = None
    velocity: float | None = None

    def __post_init__(self):
        element = f"joint {self.name}"
        if self.type not in JOINT_TYPES:
            raise JointTypeError(
                f"unsupported joint type {self.type!r} (supported: {', '.join(JOINT_TYPES)})",
                element=element,
            )
        object.__setattr__(self, "origin", _array(self.origin, (4, 4), "joint origin", element))
        axis = _array(self.axis, (3,), "joint axis", element)
        norm = float(np.linalg.norm(axis))
        if self.type != "fixed":
            if norm == 0.0:
                raise ZeroAxisError("joint axis is the zero vector", element=element)
            if abs(norm - 1.0) > AXIS_UNIT_TOLERANCE:
                raise AxisNotUnitError(f"joint axis has length {norm:.12g}, not 1", element=element)
        object.__setattr__(self, "axis", axis)
        lower, upper = float(self.lower), float(self.upper)
        if math.isnan(lower) or math.isnan(upper) or not math.isfinite(self.pitch):
            raise NonFiniteError("joint limits or pitch are NaN", element=element)
        if self.type == "continuous" and (lower, upper) != (-math.inf, math.inf):
            raise LimitError("a continuous joint has limits (-inf, inf)", element=element)
        if self.type == "revolute" and not (math.isfinite(lower) and math.isfinite(upper)):
            raise LimitError("a revolute joint needs finite limits", element=element)
        if self.type in ("prismatic", "helical") and (
            math.isfinite(lower) != math.isfinite(upper)
            or (not math.isfinite(lower) and (lower, upper) != (-math.inf, math.inf))
        ):
            raise LimitError(
                f"a {self.type} joint is either bounded or unbounded both ways", element=element
            )
        if self.type == "fixed" and (lower, upper) != (0.0, 0.0):
            raise LimitError("a fixed joint has limits [0, 0]", element=element)
        if lower > upper:
            raise LimitError(
                f"lower limit {lower:g} exceeds upper limit {upper:g}", element=element
            )
        if self.type != "helical" and self.pitch != 0.0:
            raise LimitError("only helical joints carry a pitch", element=element)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "pitch", float(self.pitch))
        object.__setattr__(self, "source_name", self.source_name or self.name)

    @property
    def moving(self) -> bool:
        return self.type != "fixed"

    def motion(self, q: float) -> np.ndarray:
        """Transform of the child frame relative to the joint frame at coordinate q."""
        t = np.eye(4)
        if self.type in ("revolute", "continuous", "helical"):
            t[:3, :3] = axis_angle_matrix(self.axis, q)
            if self.type == "helical":
                t[:3, 3] = self.pitch * q * self.axis
        elif self.type == "prismatic":
            t[:3, 3] = q * self.axis
        return t


@dataclass(frozen=True)
class SourceInfo:
    """Where an object came from. `labels` holds source annotations (e.g. PartNet `model_cat`,
    semantics); `changes` what the adapter repaired or noted while reading it (every one
    recorded, none silent); `extra` anything else an adapter wants to keep."""

    library: str = ""
    source_id: str = ""
    source_path: str = ""
    license: str = ""
    labels: Mapping[str, object] = field(default_factory=dict)
    changes: tuple[Change, ...] = ()
    extra: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class JointScrews:
    """World-frame screw description of joints at the rest configuration (the metric's input).

    twist: (N, 6), angular part first; lower, upper: (N,); for fixed joints the twist is zero and
    the limits [0, 0]; continuous joints have infinite limits.
    """

    names: tuple[str, ...]
    types: tuple[str, ...]
    parents: tuple[str, ...]
    children: tuple[str, ...]
    twist: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    axis: np.ndarray
    point: np.ndarray
    pitch: np.ndarray


@dataclass(frozen=True, eq=False)
class ArticulatedObject:
    """An articulated object: links joined by one-DOF joints into a tree with one root.

    Construction validates the invariants and raises a typed `ModelError` naming the offending
    link or joint.
    """

    name: str
    links: tuple[Link, ...]
    joints: tuple[Joint, ...] = ()
    source: SourceInfo = field(default_factory=SourceInfo)

    def __post_init__(self):
        object.__setattr__(self, "links", tuple(self.links))
        object.__setattr__(self, "joints", tuple(self.joints))
        self._validate()

    # ----------------------------------------------------------------- validation
    def _validate(self) -> None:
        if not self.links:
            raise RootError("the object has no links", element=f"robot {self.name}")
        link_names: set[str] = set()
        for link in self.links:
            if link.name in link_names:
                raise DuplicateNameError(
                    f"duplicate link name {link.name!r}", element=f"link {link.name}"
                )
            link_names.add(link.name)
        joint_names: set[str] = set()
        parent_of: dict[str, str] = {}
        for joint in self.joints:
            element = f"joint {joint.name}"
            if joint.name in joint_names:
                raise DuplicateNameError(f"duplicate joint name {joint.name!r}", element=element)
            joint_names.add(joint.name)
            for role, link in (("parent", joint.parent), ("child", joint.child)):
                if link not in link_names:
                    raise UnknownLinkError(f"{role} link {link!r} is not defined", element=element)
            if joint.parent == joint.child:
                raise CycleError(f"joint connects link {joint.child!r} to itself", element=element)
            if joint.child in parent_of:
                raise ClosedLoopError(
                    f"link {joint.child!r} has two parent joints "
                    f"({parent_of[joint.child]!r} and {joint.name!r}): a closed kinematic loop",
                    element=element,
                )
            parent_of[joint.child] = joint.name
        roots = [link.name for link in self.links if link.name not in parent_of]
        if not roots:
            raise CycleError(
                "every link has a parent: the joints form a cycle", element=f"robot {self.name}"
            )
        if len(roots) > 1:
            raise RootError(
                f"{len(roots)} root links ({', '.join(sorted(roots)[:5])}): the links are not "
                "connected into one tree",
                element=f"link {sorted(roots)[1]}",
            )
        # With one parent per link and one root, unreachable links lie on a cycle.
        reached = set(self._joint_order_from(roots[0]))
        unreached = [j.name for j in self.joints if j.name not in reached]
        if unreached:
            raise CycleError(
                f"joints {', '.join(sorted(unreached)[:5])} form a cycle not connected to the root",
                element=f"joint {sorted(unreached)[0]}",
            )
        for link in self.links:
            if link.inertial is not None and link.inertial.mass < 0:
                raise InertialError(
                    f"negative mass {link.inertial.mass:g}", element=f"link {link.name}"
                )
        self._validate_mimics(joint_names)

    def _validate_mimics(self, joint_names: set[str]) -> None:
        """Targets exist, chains end (no loop) at a joint that is not fixed, couplings are
        finite. Each chain is walked once: the joint it ends at is remembered for every joint
        on it, so a 2,000-long chain costs 2,000 steps, not 2,000 squared."""
        by_name = {j.name: j for j in self.joints}
        for joint in self.joints:
            if joint.mimic is not None and joint.mimic.joint not in joint_names:
                raise MimicTargetError(
                    f"mimics joint {joint.mimic.joint!r}, which does not exist",
                    element=f"joint {joint.name}",
                )
        end: dict[str, Joint] = {}  # joint name -> the joint its mimic chain ends at
        for joint in self.joints:
            if joint.mimic is None:
                continue
            seen, on_chain = [joint.name], {joint.name}
            current = by_name[joint.mimic.joint]
            while current.name not in end and current.mimic is not None:
                if current.name in on_chain:
                    raise MimicLoopError(
                        "mimic chain loops: " + " -> ".join([*seen, current.name]),
                        element=f"joint {joint.name}",
                    )
                seen.append(current.name)
                on_chain.add(current.name)
                current = by_name[current.mimic.joint]
            current = end.get(current.name, current)
            for name in seen:
                end[name] = current
            if current.type == "fixed":
                raise MimicError(
                    f"mimics fixed joint {current.name!r}", element=f"joint {joint.name}"
                )
            if not (math.isfinite(joint.mimic.multiplier) and math.isfinite(joint.mimic.offset)):
                raise NonFiniteError(
                    "mimic multiplier or offset is not finite", element=f"joint {joint.name}"
                )

    def _joint_order_from(self, root: str) -> list[str]:
        children: dict[str, list[Joint]] = {}
        for joint in self.joints:
            children.setdefault(joint.parent, []).append(joint)
        order, stack = [], [root]
        while stack:
            link = stack.pop()
            for joint in reversed(children.get(link, [])):
                order.append(joint.name)
                stack.append(joint.child)
        return order

    # ----------------------------------------------------------------- structure
    @cached_property
    def root(self) -> str:
        children = {j.child for j in self.joints}
        return next(link.name for link in self.links if link.name not in children)

    @cached_property
    def link_map(self) -> dict[str, Link]:
        return {link.name: link for link in self.links}

    @cached_property
    def joint_map(self) -> dict[str, Joint]:
        return {joint.name: joint for joint in self.joints}

    @cached_property
    def parent_joint(self) -> dict[str, Joint]:
        """The joint whose child is the given link (every link but the root)."""
        return {joint.child: joint for joint in self.joints}

    @cached_property
    def joints_topological(self) -> tuple[Joint, ...]:
        """Joints ordered so that every joint comes after the joint of its parent link."""
        by_name = self.joint_map
        return tuple(by_name[name] for name in self._joint_order_from(self.root))

    @property
    def moving_joints(self) -> tuple[Joint, ...]:
        return tuple(j for j in self.joints if j.moving)

    def replace(self, **changes) -> ArticulatedObject:
        return replace(self, **changes)

    # ----------------------------------------------------------------- kinematics
    def resolve_configuration(self, q: Mapping[str, float] | None = None) -> dict[str, float]:
        """Coordinates of every joint: given values, mimic couplings applied, 0 elsewhere."""
        q = dict(q or {})
        unknown = set(q) - set(self.joint_map)
        if unknown:
            raise KeyError(f"unknown joints in configuration: {sorted(unknown)}")
        out: dict[str, float] = {}
        for joint in self.joints:  # each mimic chain followed once, without recursion
            chain = []
            while joint.name not in out and joint.mimic is not None and joint.name not in q:
                chain.append(joint)
                joint = self.joint_map[joint.mimic.joint]
            if joint.name not in out:
                out[joint.name] = float(q.get(joint.name, 0.0))
            v = out[joint.name]
            for follower in reversed(chain):
                v = follower.mimic.multiplier * v + follower.mimic.offset
                out[follower.name] = v
        return out

    def link_poses(self, q: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
        """World pose (4x4) of every link at configuration `q` (joint name -> coordinate);
        joints not given are at 0, mimic joints follow their target unless given."""
        coords = self.resolve_configuration(q)
        poses = {self.root: np.eye(4)}
        for joint in self.joints_topological:
            q = coords[joint.name]  # at 0 the motion is the identity: one product, not two
            pose = poses[joint.parent] @ joint.origin
            poses[joint.child] = pose @ joint.motion(q) if q != 0.0 else pose
        return poses

    def joint_frames(self) -> dict[str, np.ndarray]:
        """World pose of every joint frame at the rest configuration."""
        poses = self.link_poses()
        return {j.name: poses[j.parent] @ j.origin for j in self.joints}

    def screws(self, joints: tuple[Joint, ...] | None = None) -> JointScrews:
        """World-frame screw twists and limits at rest: revolute and continuous (a, o x a),
        prismatic (0, a), helical (a, o x a + h a), fixed zero with limits [0, 0]."""
        joints = self.joints if joints is None else joints
        frames = self.joint_frames()
        n = len(joints)
        twist = np.zeros((n, 6))
        axis = np.zeros((n, 3))
        point = np.zeros((n, 3))
        for i, joint in enumerate(joints):
            frame = frames[joint.name]
            a = frame[:3, :3] @ joint.axis
            o = frame[:3, 3]
            axis[i], point[i] = a, o
            if joint.type in ("revolute", "continuous", "helical"):
                twist[i, :3] = a
                twist[i, 3:] = np.cross(o, a) + joint.pitch * a
            elif joint.type == "prismatic":
                twist[i, 3:] = a
        return JointScrews(
            names=tuple(j.name for j in joints),
            types=tuple(j.type for j in joints),
            parents=tuple(j.parent for j in joints),
            children=tuple(j.child for j in joints),
            twist=twist,
            lower=np.array([j.lower for j in joints], dtype=float),
            upper=np.array([j.upper for j in joints], dtype=float),
            axis=axis,
            point=point,
            pitch=np.array([j.pitch for j in joints], dtype=float),
        )

    def link_mass_moments_world(self, link_names) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mass (N,), com (N, 3), inertia about the com (N, 3, 3)) of the named links at rest,
        in the world frame. A link without inertial has mass 0 and zero moments."""
        poses = self.link_poses()
        names = list(link_names)
        mass = np.zeros(len(names))
        com = np.zeros((len(names), 3))
        inertia = np.zeros((len(names), 3, 3))
        for i, name in enumerate(names):
            inertial = self.link_map[name].inertial
            if inertial is None:
                continue
            pose = poses[name]
            rot = pose[:3, :3]
            mass[i] = inertial.mass
            com[i] = rot @ inertial.com + pose[:3, 3]
            inertia[i] = rot @ inertial.inertia @ rot.T
        return mass, com, inertia

    def child_mass_moments(self, joints: tuple[Joint, ...] | None = None):
        """World-frame mass moments of what each joint moves: its child link, or, when the child
        link is massless (a helper link between two joints, e.g. a caster swivel), the links it
        carries combined. This is the kinetic norm's input; mass 0 means nothing moves with mass."""
        joints = self.joints if joints is None else joints
        names = [link.name for link in self.links]
        row = {name: i for i, name in enumerate(names)}
        all_mass, all_com, all_inertia = self.link_mass_moments_world(names)
        children = [row[j.child] for j in joints]
        mass, com, inertia = all_mass[children], all_com[children], all_inertia[children]
        for i in np.flatnonzero(mass <= 0):
            carried = [row[name] for name in self.subtree_links(joints[i].child)]
            m, c, inertia_i = all_mass[carried], all_com[carried], all_inertia[carried]
            total = m.sum()
            if total <= 0:
                continue
            centre = (m[:, None] * c).sum(axis=0) / total
            offset = c - centre
            parallel = m[:, None, None] * (
                np.einsum("ij,ij->i", offset, offset)[:, None, None] * np.eye(3)
                - np.einsum("ij,ik->ijk", offset, offset)
            )
            mass[i], com[i], inertia[i] = total, centre, (inertia_i + parallel).sum(axis=0)
        return mass, com, inertia

    @cached_property
    def _child_links(self) -> dict[str, list[str]]:
        """Parent link -> its child links (built once: `subtree_links` runs once per joint)."""
        children: dict[str, list[str]] = {}
        for joint in self.joints:
            children.setdefault(joint.parent, []).append(joint.child)
        return children

    def subtree_links(self, link: str) -> list[str]:
        """`link` and every link below it, down the joints."""
        children = self._child_links
        out, stack = [], [link]
        while stack:
            name = stack.pop()
            out.append(name)
            stack.extend(children.get(name, ()))
        return out

    # ----------------------------------------------------------------- placement
    def transformed(self, transform: np.ndarray, scale: float = 1.0) -> ArticulatedObject:
        """The same object scaled uniformly about the world origin by `scale`, then moved by the
        rigid `transform` (4x4): geometry, inertials, joint origins, prismatic limits and helical
        pitch scale; the root link's contents are re-expressed so the world frame stays the root
        frame. Masses scale with volume (uniform density)."""
        s = float(scale)
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"scale must be a positive number, got {scale!r}")
        transform = np.asarray(transform, dtype=float)

        def scaled_pose(pose: np.ndarray) -> np.ndarray:
            out = pose.copy()
            out[:3, 3] *= s
            return out

        def geometry(g: Geometry) -> Geometry:
            size = tuple(v * s for v in g.size)  # primitives scale by their size
            scale = g.scale * s if g.kind == "mesh" else g.scale
            return replace(g, origin=scaled_pose(g.origin), scale=scale, size=size)

        links = []
        for link in self.links:
            inertial = link.inertial
            if inertial is not None:
                inertial = replace(
                    inertial,
                    mass=inertial.mass * s**3,
                    com=inertial.com * s,
                    inertia=inertial.inertia * s**5,
                )
            link = replace(
                link,
                visuals=tuple(geometry(g) for g in link.visuals),
                collisions=tuple(geometry(g) for g in link.collisions),
                inertial=inertial,
            )
            links.append(link.reexpressed(transform) if link.name == self.root else link)
        joints = []
        for joint in self.joints:
            origin = scaled_pose(joint.origin)
            changes: dict = {"origin": transform @ origin if joint.parent == self.root else origin}
            if joint.type == "prismatic":
                changes.update(lower=joint.lower * s, upper=joint.upper * s)
            elif joint.type == "helical":
                changes["pitch"] = joint.pitch * s
            if joint.mimic is not None and s != 1.0:
                target = self.joint_map[joint.mimic.joint]
                # q_this = m q_target + b: lengths scale, angles do not.
                this_len = s if joint.type == "prismatic" else 1.0
                target_len = s if target.type == "prismatic" else 1.0
                changes["mimic"] = Mimic(
                    joint.mimic.joint,
                    joint.mimic.multiplier * this_len / target_len,
                    joint.mimic.offset * this_len,
                )
            joints.append(replace(joint, **changes))
        return replace(self, links=tuple(links), joints=tuple(joints))
