"""Read URDF files into the canonical object model.

`read_urdf` reads a source URDF as written (source frame, source names) and refuses what it
cannot read faithfully with an `AssetError` naming the file and element:

- XML problems (`xml.*`, `file.*`), a root element other than <robot> (`urdf.not_robot`), a
  missing required attribute or child (`urdf.missing`);
- numbers that do not parse, e.g. '0.07,' or '$(optenv X 0)' (`parse.number`), NaN or infinite
  values (`parse.nan`, `parse.infinite`), vectors with the wrong count (`parse.vector`);
- revolute or prismatic joints without <limit> (`joint.limits_missing`), lower > upper
  (`limits.reversed`, unless an allowance waives it: then swapped and recorded), unknown joint
  types (`joint.unsupported`), a Drake screw joint without `drake:screw_thread_pitch`
  (`joint.screw_pitch_missing`), unknown geometry (`geometry.unsupported`);
- file references leaving the source root (`path.*`), missing mesh files (`mesh.missing`),
  unsupported mesh formats (`mesh.format`);
- structural errors found by the model (`model.*`: cycles, two roots, duplicate names, ...).

What it fixes, it records as a `Change` in the `changes` list it is given: a non-unit axis is
normalized (`axis.normalized`), a mesh behind a remote URL is dropped without being fetched
(`mesh.remote_dropped`), an undeclared `world` parent link is added (`link.world_added`), a
negative-mass inertial is dropped (`inertial.invalid_dropped`), multi-DOF joints (`planar`,
`floating`, pybullet `spherical`, Drake `drake:joint` ball/universal/planar) are decomposed by
`normalize.multidof` (`joint.decomposed`), and Drake screw joints become helical joints with
pitch = thread pitch / 2 pi metres per radian. yourdfpy silently drops `drake:joint` elements;
this reader never does.

`read_object` reads back a file written by `normalize.urdf_writer` (the convention of
docs/convention.md) and recomposes its helical joints.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from normalize.changes import Change
from normalize.errors import AssetError, UnknownLinkError
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
from normalize.paths import memoized_realpaths
from normalize.safe_xml import MAX_XML_BYTES, parse_xml
from normalize.transforms import make_transform

DRAKE_NAMESPACE = "http://drake.mit.edu"
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_NON_FINITE = re.compile(r"^[+-]?(nan|inf|infinity)$", re.IGNORECASE)
_MULTI_DOF = {"planar": "planar", "floating": "floating", "spherical": "ball"}
_DRAKE_MULTI_DOF = {"ball": "ball", "universal": "universal", "planar": "planar"}


class _Reader:
    def __init__(
        self,
        path: Path,
        root: Path,
        package_roots: Sequence[Path],
        changes: list[Change],
        allow_reversed_limits: bool,
        infinite_limits: bool,
        problems: list[AssetError] | None = None,
    ):
        self.path = path
        self.root = root
        self.package_roots = tuple(package_roots)
        self.changes = changes
        self.allow_reversed_limits = allow_reversed_limits
        self.infinite_limits = infinite_limits
        self.problems = problems  # collecting: every independent problem, none raised
        self.lines: dict[str, int] = {}  # "link a" / "joint b" -> its line in the file

    # ----------------------------------------------------------------- errors and numbers
    def error(self, message: str, code: str, element: str | None, stage: str = "parse"):
        return AssetError(message, code=code, stage=stage, path=str(self.path), element=element)

    def guarded(self, node, read, fallback=None):
        """`read()`; an AssetError from it is given the file and the line of `node` (None: of
        the element it names), then raised, or when collecting recorded (the reading goes on
        with `fallback`)."""
        try:
            return read()
        except AssetError as exc:
            exc.path = exc.path or str(self.path)
            line = self.lines.get(exc.element or "") if node is None else node.sourceline
            exc.line = exc.line or line
            if self.problems is None:
                raise
            self.problems.append(exc)
            return fallback

    def number(self, text: str, what: str, element: str, allow_infinite: bool = False) -> float:
        token = text.strip()
        if _NUMBER.match(token) or _NON_FINITE.match(token):
            value = float(token)  # a literal like 1e999 overflows to infinity: refused alike
            written_infinity = _NON_FINITE.match(token) is not None
            if math.isfinite(value) or (allow_infinite and written_infinity and math.isinf(value)):
                return value
            raise self.error(
                f"{what} is {token!r}: NaN and infinite values are not allowed",
                "parse.nan" if math.isnan(value) else "parse.infinite",
                element,
            )
        raise self.error(f"{what} {token!r} is not a number", "parse.number", element)

    def vector(self, text: str, n: int, what: str, element: str) -> np.ndarray:
        tokens = text.split()
        values = [self.number(t, what, element) for t in tokens]
        if len(values) != n:
            raise self.error(
                f"{what} {text.strip()!r} has {len(values)} numbers, expected {n}",
                "parse.vector",
                element,
            )
        return np.array(values, dtype=float)

    def attr(self, node, name: str, element: str, default=None) -> str:
        value = node.get(name)
        if value is None:
            if default is not None:
                return default
            raise self.error(
                f"<{_local(node.tag)}> has no {name!r} attribute", "urdf.missing", element
            )
        return value

    def attr_number(self, node, name: str, element: str, default: float | None = None) -> float:
        if default is not None and node.get(name) is None:
            return default
        return self.number(self.attr(node, name, element), f"{_local(node.tag)} {name}", element)

    def origin(self, node, element: str) -> np.ndarray:
        origin = _child(node, "origin")
        if origin is None:
            return np.eye(4)
        xyz = self.vector(origin.get("xyz", "0 0 0"), 3, "origin xyz", element)
        rpy = self.vector(origin.get("rpy", "0 0 0"), 3, "origin rpy", element)
        if not rpy.any():
            out = np.eye(4)
            out[:3, 3] = xyz
            return out
        return make_transform(xyz, rpy)

    def link_of(self, joint_node, role: str, element: str) -> str:
        node = _child(joint_node, role)
        if node is None:
            raise self.error(f"joint has no <{role}>", "urdf.missing", element)
        return self.attr(node, "link", element)

    # ----------------------------------------------------------------- links
    def link(self, node) -> Link:
        name = self.attr(node, "name", "link")
        element = f"link {name}"
        shapes = {"visual": [], "collision": []}
        for role, found in shapes.items():
            for shape in _children(node, role):
                geometry = self.guarded(shape, lambda s=shape: self.geometry(s, element))
                if geometry is not None:
                    found.append(geometry)
        visuals, collisions = shapes["visual"], shapes["collision"]
        inertial = None
        inertial_node = _child(node, "inertial")
        if inertial_node is not None:
            inertial = self.guarded(inertial_node, lambda: self.inertial(inertial_node, element))
        return Link(name, visuals=visuals, collisions=collisions, inertial=inertial)

    def geometry(self, node, element: str) -> Geometry | None:
        label = node.get("name")
        where = f"{element}, <{_local(node.tag)}{' ' + label if label else ''}>"
        origin = self.origin(node, where)
        geometry = _child(node, "geometry")
        shapes = [] if geometry is None else [c for c in geometry if isinstance(c.tag, str)]
        if any(c.tag == "material" for c in shapes):
            shapes = [c for c in shapes if c.tag != "material"]
            self.changes.append(
                Change(
                    "urdf.material_misplaced",
                    "<material> inside <geometry> has no meaning in URDF and was ignored",
                    element=where,
                )
            )
        if len(shapes) != 1:
            raise self.error(
                f"<geometry> must hold exactly one shape, found {len(shapes)}",
                "urdf.missing" if not shapes else "geometry.unsupported",
                where,
            )
        shape = shapes[0]
        kind = _local(shape.tag)
        if kind == "mesh":  # the line of the <mesh> element
            return self.guarded(shape, lambda: self.mesh(shape, origin, label, where))
        if kind == "box":
            size = tuple(self.vector(self.attr(shape, "size", where), 3, "box size", where))
        elif kind == "sphere":
            size = (self.attr_number(shape, "radius", where),)
        elif kind in ("cylinder", "capsule"):
            size = (
                self.attr_number(shape, "radius", where),
                self.attr_number(shape, "length", where),
            )
        else:
            raise self.error(f"geometry <{kind}> is not supported", "geometry.unsupported", where)
        if any(v < 0 for v in size):
            raise self.error(f"{kind} has a negative size {size}", "geometry.invalid", where)
        return Geometry(kind, origin=origin, size=size, name=label)

    def mesh(self, shape, origin: np.ndarray, label: str | None, where: str) -> Geometry | None:
        reference = self.attr(shape, "filename", where)
        target = resolve_mesh_file(
            reference,
            referrer=self.path,
            root=self.root,
            package_roots=self.package_roots,
            element=where,
            changes=self.changes,
        )
        if target is None:
            return None
        scale = np.ones(3)
        if shape.get("scale") is not None:
            scale = self.vector(shape.get("scale"), 3, "mesh scale", where)
        return Geometry("mesh", origin=origin, filename=str(target), scale=scale, name=label)

    def inertial(self, node, element: str) -> Inertial | None:
        origin = self.origin(node, element)
        mass_node = _child(node, "mass")
        mass = 0.0 if mass_node is None else self.attr_number(mass_node, "value", element)
        inertia_node = _child(node, "inertia")
        values = {}
        for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
            values[key] = (
                0.0
                if inertia_node is None
                else self.attr_number(inertia_node, key, element, default=0.0)
            )
        tensor = np.array(
            [
                [values["ixx"], values["ixy"], values["ixz"]],
                [values["ixy"], values["iyy"], values["iyz"]],
                [values["ixz"], values["iyz"], values["izz"]],
            ]
        )
        rot = origin[:3, :3]
        if not np.array_equal(rot, np.eye(3)):
            tensor = rot @ tensor @ rot.T
        if mass == 0.0 and not tensor.any():
            return None  # a massless frame link (as the convention writes them)
        if mass < 0:
            self.changes.append(
                Change(
                    "inertial.invalid_dropped",
                    f"inertial with negative mass {mass:g} dropped",
                    element=element,
                )
            )
            return None
        return Inertial(mass, origin[:3, 3], tensor, method="source")

    # ----------------------------------------------------------------- joints
    def axis(self, node, element: str, default=(1.0, 0.0, 0.0)) -> np.ndarray:
        axis_node = _child(node, "axis")
        if axis_node is None:
            return np.array(default, dtype=float)

        def read() -> np.ndarray:
            axis = self.vector(self.attr(axis_node, "xyz", element), 3, "axis xyz", element)
            return unit_axis(
                axis, what="axis", element=element, changes=self.changes, path=str(self.path)
            )

        return self.guarded(axis_node, read, np.array(default, dtype=float))

    def limits(self, node, kind: str, element: str) -> tuple[float, float]:
        limit = _child(node, "limit")
        if limit is None:
            raise self.error(
                f"{kind} joint has no <limit> (URDF requires lower and upper limits)",
                "joint.limits_missing",
                element,
            )
        infinite = self.infinite_limits and kind == "prismatic"
        lower = self.limit_value(limit, "lower", element, infinite)
        upper = self.limit_value(limit, "upper", element, infinite)
        if (math.isinf(lower) or math.isinf(upper)) and (lower, upper) != (-math.inf, math.inf):
            raise self.error(
                f"limits [{lower}, {upper}] are infinite on one side only",
                "limits.one_sided",
                element,
            )
        if lower > upper:
            if not self.allow_reversed_limits:
                raise self.error(
                    f"lower limit {lower!r} exceeds upper limit {upper!r}",
                    "limits.reversed",
                    element,
                )
            self.changes.append(
                Change(
                    "limits.swapped",
                    f"lower limit {lower!r} exceeds upper limit {upper!r}; swapped "
                    "(allowed by the source's limits.reversed allowance)",
                    element=element,
                )
            )
            lower, upper = upper, lower
        return lower, upper

    def actuation(self, node, element: str) -> dict[str, float | None]:
        """{'effort', 'velocity'} of `<limit>`: the value when positive, else None (0 or an
        absent attribute means "not specified"; a negative value, which the URDF specification
        does not allow, too, recorded as `limits.actuation_negative`)."""
        limit = _child(node, "limit")
        out: dict[str, float | None] = {"effort": None, "velocity": None}
        for name in out:
            text = None if limit is None else limit.get(name)
            if text is not None:
                value = self.number(text, f"limit {name}", element)
                out[name] = value if value > 0 else None
                if value < 0:
                    self.changes.append(
                        Change(
                            "limits.actuation_negative",
                            f"limit {name} {value!r} is negative (a maximum, so at least 0); "
                            "treated as not specified",
                            element=element,
                        )
                    )
        return out

    def limit_value(self, limit, name: str, element: str, infinite: bool) -> float:
        value = limit.get(name)
        if value is None:
            return 0.0  # the URDF specification's default
        return self.number(value, f"limit {name}", element, allow_infinite=infinite)

    def mimic(self, node, element: str) -> Mimic | None:
        mimic = _child(node, "mimic")
        if mimic is None:
            return None
        return Mimic(
            self.attr(mimic, "joint", element),
            self.attr_number(mimic, "multiplier", element, default=1.0),
            self.attr_number(mimic, "offset", element, default=0.0),
        )

    def joint(self, node, drake: bool) -> tuple[list[Link], list[Joint]]:
        name = self.attr(node, "name", "joint")
        element = f"joint {name}"
        kind = self.attr(node, "type", element)
        parent = self.link_of(node, "parent", element)
        child = self.link_of(node, "child", element)
        origin = self.origin(node, element)
        common = {"name": name, "parent": parent, "child": child, "origin": origin}
        if drake:
            return self.drake_joint(node, kind, element, common)
        if kind == "fixed":
            return [], [Joint(type="fixed", **common)]
        if kind in ("revolute", "prismatic", "continuous"):
            axis = self.axis(node, element)
            if kind == "continuous":
                lower, upper = -math.inf, math.inf
            else:
                at = _child(node, "limit")
                read = lambda: self.limits(node, kind, element)  # noqa: E731
                lower, upper = self.guarded(node if at is None else at, read, (0.0, 0.0))
            at = _child(node, "mimic")
            mimic = self.guarded(node if at is None else at, lambda: self.mimic(node, element))
            joint = Joint(
                type=kind,
                axis=axis,
                lower=lower,
                upper=upper,
                mimic=mimic,
                **common,
                **self.guarded(node, lambda: self.actuation(node, element), {}),
            )
            return [], [joint]
        if kind in _MULTI_DOF:
            axes = (self.axis(node, element),) if kind == "planar" else ()
            limits = ()
            limit = _child(node, "limit")
            if kind == "spherical" and limit is not None and limit.get("upper") is not None:
                bound = (
                    self.limit_value(limit, "lower", element, False),
                    self.limit_value(limit, "upper", element, False),
                )
                limits = (bound, bound, bound)
            return self.decompose(_MULTI_DOF[kind], common, axes, limits)
        raise self.error(
            f"joint type {kind!r} is not supported", "joint.unsupported", element, "model"
        )

    def drake_joint(self, node, kind: str, element: str, common: dict):
        if kind in _DRAKE_MULTI_DOF:
            axes = ()
            if kind == "planar" and _child(node, "axis") is not None:
                axes = (self.axis(node, element, default=(0.0, 0.0, 1.0)),)
            return self.decompose(_DRAKE_MULTI_DOF[kind], common, axes, ())
        if kind == "screw":
            pitch_node = next(
                (
                    c
                    for c in node
                    if isinstance(c.tag, str) and _local(c.tag) == "screw_thread_pitch"
                ),
                None,
            )
            if pitch_node is None:
                raise self.error(
                    "Drake screw joint has no <drake:screw_thread_pitch>; its pitch is not guessed",
                    "joint.screw_pitch_missing",
                    element,
                    "model",
                )
            thread = self.attr_number(pitch_node, "value", element)
            lower, upper = -math.inf, math.inf
            if _child(node, "limit") is not None:
                lower, upper = self.limits(node, "revolute", element)
            self.changes.append(
                Change(
                    "joint.screw_helical",
                    f"Drake screw joint with thread pitch {thread!r} m/turn read as a helical "
                    f"joint with pitch {thread / (2 * math.pi)!r} m/rad",
                    element=element,
                )
            )
            joint = Joint(
                type="helical",
                axis=self.axis(node, element),
                lower=lower,
                upper=upper,
                pitch=thread / (2 * math.pi),
                **common,
            )
            return [], [joint]
        raise self.error(
            f"drake:joint type {kind!r} is not supported", "joint.unsupported", element, "model"
        )

    def decompose(self, kind: str, common: dict, axes, limits):
        links, joints, change = decompose_joint(kind, axes=axes, limits=limits, **common)
        self.changes.append(change)
        return links, joints

    # ----------------------------------------------------------------- robot
    def robot(self, xml) -> ArticulatedObject:
        if _local(xml.tag) != "robot" or _namespace(xml.tag):
            raise self.error(
                f"root element is <{_local(xml.tag)}>, not <robot>", "urdf.not_robot", None
            )
        name = xml.get("name") or self.path.stem
        links: list[Link] = []
        joints: list[Joint] = []
        dropped = 0  # links and joints that could not be read (collecting)
        for node in xml:
            if not isinstance(node.tag, str):
                continue
            tag, namespace = _local(node.tag), _namespace(node.tag)
            if tag == "link" and not namespace:
                self.lines.setdefault(f"link {node.get('name')}", node.sourceline)
                link = self.guarded(node, lambda n=node: self.link(n))
                links.extend([link] if link is not None else [])
                dropped += link is None
            elif tag == "joint" and (not namespace or _is_drake(namespace)):
                self.lines.setdefault(f"joint {node.get('name')}", node.sourceline)
                read = lambda n=node, d=bool(namespace): self.joint(n, drake=d)  # noqa: E731
                extra_links, new_joints = self.guarded(node, read, ([], []))
                dropped += not new_joints
                links.extend(extra_links)
                joints.extend(new_joints)
        declared = {link.name for link in links}
        if "world" not in declared and any(j.parent == "world" for j in joints):
            links.insert(0, Link("world"))
            self.changes.append(
                Change(
                    "link.world_added",
                    "joints name the parent link 'world', which the file does not declare; "
                    "added as an empty link",
                    element="link world",
                )
            )
        if self.problems is not None:
            unknown = self.unknown_links(links, joints)
            # the model would report the first unknown link again, and its checks (one root,
            # no cycle) would blame the links and joints that could not be read
            if dropped or unknown:
                return None
        info = SourceInfo(labels={"robot_name": name})
        return self.guarded(
            None, lambda: ArticulatedObject(name=name, links=links, joints=joints, source=info)
        )

    def unknown_links(self, links: list[Link], joints: list[Joint]) -> int:
        """Record each joint naming a link that is not defined (the model refuses the first
        only; links that could not be read are not reported again); how many were."""
        defined = {link.name for link in links}
        unread = {e.element for e in self.problems}
        before = len(self.problems)
        for joint in joints:
            element = f"joint {joint.name}"
            for role, link in (("parent", joint.parent), ("child", joint.child)):
                if link not in defined and f"link {link}" not in unread:
                    self.problems.append(
                        UnknownLinkError(
                            f"{role} link {link!r} is not defined",
                            path=str(self.path),
                            element=element,
                            line=self.lines.get(element),
                        )
                    )
        return len(self.problems) - before


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].split(":")[-1]


def _namespace(tag: str) -> str:
    if tag.startswith("{"):
        return tag[1:].split("}", 1)[0]
    return tag.split(":", 1)[0] if ":" in tag else ""


def _is_drake(namespace: str) -> bool:
    return namespace == DRAKE_NAMESPACE or namespace == "drake"


def _child(node, tag: str):
    return next(_children(node, tag), None)


def _children(node, tag: str):
    return (c for c in node if isinstance(c.tag, str) and c.tag == tag)


def read_urdf(
    path: Path,
    *,
    root: Path,
    package_roots: Sequence[Path] = (),
    max_bytes: int = MAX_XML_BYTES,
    changes: list[Change] | None = None,
    allow_reversed_limits: bool = False,
    infinite_limits: bool = False,
    problems: list[AssetError] | None = None,
) -> ArticulatedObject | None:
    """The object a URDF file describes, in its own frame with its own names.

    root: the source root; no file outside it is read. package_roots: folders holding packages
    for package:// references. changes: list that receives every fix made while reading.
    allow_reversed_limits: swap lower > upper (with a record) instead of refusing.
    infinite_limits: accept lower="-inf" upper="inf" on prismatic joints (unbounded), as the
    convention writes them; source files with infinite numbers are refused.
    Raises AssetError (see the module docstring for the codes) naming the file and the line of
    the element. With `problems` (a list) nothing is raised past the XML parsing: every
    independent problem is appended to it (the reading goes on past a bad link, geometry,
    axis or limit) and the object returned only when there was none.
    """
    path = Path(path)
    reader = _Reader(
        path,
        Path(root),
        package_roots,
        changes if changes is not None else [],
        allow_reversed_limits,
        infinite_limits,
        problems,
    )
    xml = parse_xml(path, max_bytes, reader.changes)
    try:
        with memoized_realpaths():  # hundreds of meshes in a few folders
            obj = reader.robot(xml)
    except AssetError as exc:
        if exc.path is None:
            exc.path = str(path)
        raise
    return None if problems else obj


def read_object(urdf_path: Path) -> ArticulatedObject:
    """A normalized object as written by `normalize.urdf_writer.write_object`: read with its
    folder as the root, unbounded prismatic limits accepted, helical joints recomposed."""
    from normalize.helical import compose_helical

    urdf_path = Path(urdf_path)
    folder = urdf_path.parent
    obj = read_urdf(urdf_path, root=folder, infinite_limits=True)
    obj, _ = compose_helical(obj)
    return relative_filenames(obj, folder)


def relative_filenames(obj: ArticulatedObject, folder: Path) -> ArticulatedObject:
    """`obj` with mesh filenames written relative to `folder` ('/'-separated)."""

    def relative(g: Geometry) -> Geometry:
        if g.kind != "mesh" or not Path(g.filename).is_absolute():
            return g
        return replace(g, filename=Path(g.filename).relative_to(folder).as_posix())

    links = tuple(
        replace(
            link,
            visuals=tuple(relative(g) for g in link.visuals),
            collisions=tuple(relative(g) for g in link.collisions),
        )
        for link in obj.links
    )
    return obj.replace(links=links)
