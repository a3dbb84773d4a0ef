"""The common URDF convention (docs/convention.md): from a source object to the canonical one.

Two steps, kept apart so that verification can check the second changes no motion:

1. `reference_object(raw)`: the SEMANTIC changes, in the source's frame, structure and names:
   helical pairs composed (`normalize.helical`), joints that cannot move (lower = upper) made
   fixed (`joint.zero_range_fixed`), rest pose moved inside the limits (`joint.reanchored`).
   (Axis normalization, allowed limit swaps and multi-DOF decomposition already happen while
   reading, since the model cannot hold their input.)
2. `canonicalize(reference, up_axis=, scale=)`: REPRESENTATION changes only. It returns the
   placement T and scale s with `reference.transformed(T, s)` being the object in the canonical
   frame, and the canonical object itself, equal to that one up to representation: fixed joints
   contracted, canonical names, canonical axis signs, inertials on every link with shapes, rotations
   rounded to what URDF's rpy can represent exactly.

Every change is returned as a `Change`; nothing is modified silently.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from normalize.changes import SHAPE_DROPPED, Change
from normalize.helical import compose_helical
from normalize.meshes import (
    MESH_DENSITY,
    WALL_THICKNESS,
    geometry_bounds,
    load_mesh,
    mass_properties,
    wall_mass_properties,
)
from normalize.model import ArticulatedObject, Geometry, Inertial, Joint, Link, Mimic
from normalize.transforms import matrix_to_rpy, rpy_to_matrix
from normalize.urdf_writer import exact_rpy, has_limit_element

CONVENTION_VERSION = "2.3.0"
ROOT_NAME = "base"
#: A link whose meshes, weighed as solids at the convention's density, exceed this is taken
#: for hollow and weighed as walls (`_computed_inertial`): 25 litres of solid material is
#: more than any moving part of a household object holds (a cabinet carcass weighed as a solid
#: block came out at 782 kg; as 15 mm walls it weighs about 75 kg)
HOLLOW_ABOVE_KG = 25.0
FULL_TURN = 2.0 * math.pi
AXIS_TIE_TOLERANCE = 1e-12

# Rotation taking the source's up axis to +z, exact (see docs/convention.md).
UP_AXIS_ROTATIONS = {
    "z": np.eye(3),
    "-z": np.diag([1.0, -1.0, -1.0]),  # 180 degrees about x
    "y": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]),  # +90 about x
    "-y": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]),  # -90 about x
    "x": np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),  # -90 about y
    "-x": np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]),  # +90 about y
}


# --------------------------------------------------------------------------- semantic step
def reference_object(raw: ArticulatedObject) -> tuple[ArticulatedObject, list[Change]]:
    """`raw` with helical pairs composed, zero-range joints fixed and rest poses re-anchored
    inside the limits."""
    obj, changes = compose_helical(raw)
    obj, fixed = fix_zero_range(obj)
    obj, more = reanchor_rest_pose(obj)
    return obj, changes + fixed + more


def fix_zero_range(obj: ArticulatedObject) -> tuple[ArticulatedObject, list[Change]]:
    """Make every moving joint whose limits are equal (lower = upper = q0) a fixed joint at
    origin @ motion(q0): it cannot move, and simulators disagree on equal limits (MuJoCo
    ignores them and leaves a free hinge). Joints in a mimic coupling are left as they are."""
    coupled = {j.mimic.joint for j in obj.joints if j.mimic is not None}
    changes, joints = [], []
    for joint in obj.joints:
        frozen = joint.moving and math.isfinite(joint.lower) and joint.lower == joint.upper
        if not frozen or joint.mimic is not None or joint.name in coupled:
            joints.append(joint)
            continue
        q0 = joint.lower
        joints.append(
            replace(
                joint,
                type="fixed",
                origin=joint.origin @ joint.motion(q0),
                lower=0.0,
                upper=0.0,
                pitch=0.0,
            )
        )
        changes.append(
            Change(
                "joint.zero_range_fixed",
                f"{joint.type} joint with equal limits [{q0!r}, {q0!r}] cannot move; written as "
                f"a fixed joint at q = {q0!r}",
                element=f"joint {joint.name}",
            )
        )
    if not changes:
        return obj, changes
    return obj.replace(joints=tuple(joints)), changes


def reanchor_rest_pose(obj: ArticulatedObject) -> tuple[ArticulatedObject, list[Change]]:
    """Move the zero of every bounded joint whose range excludes 0 to its nearest limit q0:
    origin <- origin @ motion(q0), limits <- limits - q0; joints mimicking it get offset
    + multiplier * q0 so they keep following. Mimic joints themselves keep their zero (their
    rest value is set by the joint they follow)."""
    shifts: dict[str, float] = {}
    changes = []
    joints = []
    for joint in obj.joints:
        bounded = joint.moving and math.isfinite(joint.lower)
        if not bounded or joint.mimic is not None or joint.lower <= 0.0 <= joint.upper:
            joints.append(joint)
            continue
        q0 = joint.lower if joint.lower > 0.0 else joint.upper
        shifts[joint.name] = q0
        joints.append(
            replace(
                joint,
                origin=joint.origin @ joint.motion(q0),
                lower=joint.lower - q0,
                upper=joint.upper - q0,
            )
        )
        changes.append(
            Change(
                "joint.reanchored",
                f"rest pose q = 0 lies outside the limits [{joint.lower!r}, {joint.upper!r}]; "
                f"the joint zero moved to the nearest limit {q0!r} (limits now "
                f"[{joint.lower - q0!r}, {joint.upper - q0!r}])",
                element=f"joint {joint.name}",
            )
        )
    if not shifts:
        return obj, changes
    out = []
    for joint in joints:
        if joint.mimic is not None and joint.mimic.joint in shifts:
            m = joint.mimic
            joint = replace(
                joint, mimic=Mimic(m.joint, m.multiplier, m.offset + m.multiplier * shifts[m.joint])
            )
        out.append(joint)
    return obj.replace(joints=tuple(out)), changes


# --------------------------------------------------------------------------- placement
def up_axis_rotation(up_axis: str) -> np.ndarray:
    """4x4 rotation taking the source's `up_axis` to +z."""
    out = np.eye(4)
    out[:3, :3] = UP_AXIS_ROTATIONS[up_axis]
    return out


def link_shapes(link: Link) -> tuple[Geometry, ...]:
    """The shapes that stand for a link: its visuals, else its collisions."""
    return link.visuals or link.collisions


def rest_bounds(obj: ArticulatedObject, *, root: Path | None = None, folder: Path | None = None):
    """(min, max) of the world-frame box around every link's shapes at rest (`link_shapes`; link
    origins when there are none). `folder`: where relative mesh filenames are (a written
    object's folder)."""
    poses = obj.link_poses()
    lows, highs = [], []
    for link in obj.links:
        for g in link_shapes(link):
            if folder is not None and g.kind == "mesh" and not Path(g.filename).is_absolute():
                g = replace(g, filename=str(Path(folder) / g.filename))
            found = geometry_bounds(g, poses[link.name], root=root)
            if found is not None:
                lows.append(found[0])
                highs.append(found[1])
    if not lows:
        points = np.array([pose[:3, 3] for pose in poses.values()])
        return points.min(axis=0), points.max(axis=0)
    return np.min(lows, axis=0), np.max(highs, axis=0)


def canonical_placement(
    reference: ArticulatedObject, up_axis: str, scale: float, *, root: Path | None = None
) -> np.ndarray:
    """The rigid transform (up-axis fix, then centring) of the canonical placement."""
    rotation = up_axis_rotation(up_axis)
    low, high = rest_bounds(reference.transformed(rotation, scale), root=root)
    shift = np.eye(4)
    shift[:3, 3] = [-(low[0] + high[0]) / 2.0, -(low[1] + high[1]) / 2.0, -low[2]]
    return shift @ rotation


# --------------------------------------------------------------------------- inertials
def combine_inertials(parts: list[Inertial], method: str | None = None) -> Inertial | None:
    """One inertial for rigidly joined parts expressed in the same frame (parallel axis)."""
    parts = [p for p in parts if p.mass > 0]
    if not parts:
        return None
    if len(parts) == 1 and method is None:
        return parts[0]
    mass = sum(p.mass for p in parts)
    com = sum(p.mass * p.com for p in parts) / mass
    inertia = np.zeros((3, 3))
    for p in parts:
        d = p.com - com
        inertia += p.inertia + p.mass * (float(d @ d) * np.eye(3) - np.outer(d, d))
    if method is None:
        method = "+".join(sorted({p.method for p in parts}))
    return Inertial(mass, com, inertia, method=method)


def _is_empty(inertial: Inertial | None) -> bool:
    """No inertial, or an all-zero one (a massless frame link): nothing to keep or drop."""
    return inertial is None or (inertial.mass == 0.0 and not inertial.inertia.any())


def resolve_inertials(
    obj: ArticulatedObject,
    *,
    root: Path | None = None,
    density: float = MESH_DENSITY,
) -> tuple[ArticulatedObject, list[Change]]:
    """Every link keeps a valid source inertial; a link with shapes gets one computed from them
    otherwise (collision shapes, else visual shapes), the base included. A source inertial whose
    mass is valid but whose tensor is missing or invalid keeps its mass and centre of mass and
    gets the shapes' tensor scaled to that mass (`inertial.tensor_computed`). Invalid inertials
    that cannot be replaced are dropped with a record; all-zero ones (massless frame links) are
    simply absent."""
    changes = []
    links = []
    for link in obj.links:
        inertial = link.inertial
        if inertial is not None and not inertial.problems():
            links.append(link)
            continue
        element = f"link {link.name}"
        reason = "it has none" if _is_empty(inertial) else "; ".join(inertial.problems())
        computed, how = None, ""
        if link.visuals or link.collisions:
            declared = inertial is not None and math.isfinite(inertial.mass) and inertial.mass > 0
            computed, how = _computed_inertial(link, root, density, hollow_rule=not declared)
            if computed is not None and declared and computed.mass > 0:
                ratio = inertial.mass / computed.mass
                kept = Inertial(
                    inertial.mass,
                    inertial.com,
                    computed.inertia * ratio,
                    method=f"source_mass+{computed.method}",
                )
                changes.append(
                    Change(
                        "inertial.tensor_computed",
                        f"source inertia tensor unusable ({reason}); the declared mass "
                        f"{inertial.mass:g} kg and centre of mass are kept, the tensor is "
                        f"computed {how} and scaled to that mass (x {ratio:.6g})",
                        element,
                    )
                )
                links.append(replace(link, inertial=kept))
                continue
            code = "inertial.computed" if computed is not None else "inertial.degenerate"
            verb = "computed" if computed is not None else "none can be computed:"
            changes.append(
                Change(code, f"source inertial unusable ({reason}); {verb} {how}", element)
            )
        if computed is None and not _is_empty(inertial):
            changes.append(
                Change(
                    "inertial.dropped",
                    f"source inertial is invalid ({reason}) and was dropped",
                    element=element,
                )
            )
        links.append(replace(link, inertial=computed))
    return obj.replace(links=tuple(links)), changes


def _computed_inertial(link: Link, root: Path | None, density: float, hollow_rule: bool = True):
    """(inertial or None, how) from a link's collision shapes, or its visual shapes when it has
    no collision shapes or they enclose no volume. Shapes are weighed as solids (a mesh's
    enclosed volume, or its convex hull's), unless together they would weigh more than
    HOLLOW_ABOVE_KG: a manufactured part that large is hollow (a carcass, a housing), so they
    are weighed as walls of WALL_THICKNESS instead (`<kind>_wall_shell`; `how` gives both
    figures). Without `hollow_rule` (a declared mass only wants the tensor's shape) shapes are
    solids."""
    for which, shapes in (("collision", link.collisions), ("visual", link.visuals)):
        found = [(g, mass_properties(g, density=density, root=root)) for g in shapes]
        found = [(g, f) for g, f in found if f is not None]
        solid = sum(f[0] for _, f in found)
        hollow = hollow_rule and solid > HOLLOW_ABOVE_KG
        if hollow:
            walls = [wall_mass_properties(g, density=density, root=root) for g, _ in found]
            found = [(g, f if w is None else w) for (g, f), w in zip(found, walls, strict=True)]
        parts = [Inertial(f[0], f[1], f[2], method=f[3]) for _, f in found]
        if parts:
            methods = sorted({p.method for p in parts})
            inertial = combine_inertials(parts, method="+".join(methods))
            how = f"from its {which} shapes at {density:g} kg/m^3 ({', '.join(methods)})"
            if hollow:
                how += (
                    f"; as solids its shapes would weigh {solid:.4g} kg, more than "
                    f"{HOLLOW_ABOVE_KG:g} kg: weighed as {1000 * WALL_THICKNESS:g} mm walls, "
                    f"{inertial.mass:.4g} kg"
                )
            return inertial, how
    return None, "its shapes enclose no volume"


# --------------------------------------------------------------------------- contraction
def _fixed_groups(obj: ArticulatedObject) -> dict[str, tuple[str, np.ndarray]]:
    """link -> (the link it merges into, pose of the link in that link's frame)."""
    group = {obj.root: (obj.root, np.eye(4))}
    for joint in obj.joints_topological:
        if joint.type == "fixed":
            rep, pose = group[joint.parent]
            group[joint.child] = (rep, pose @ joint.origin)
        else:
            group[joint.child] = (joint.child, np.eye(4))
    return group


def contract_fixed(obj: ArticulatedObject) -> tuple[ArticulatedObject, list[Change]]:
    """Merge every link joined by a fixed joint into its parent: shapes and inertials move into
    the parent frame, source names are kept, joints below are re-attached."""
    group = _fixed_groups(obj)
    changes = []
    members: dict[str, list[str]] = {}
    for link in [obj.root, *(j.child for j in obj.joints_topological)]:
        members.setdefault(group[link][0], []).append(link)
    joints = []
    for joint in obj.joints_topological:
        if joint.type == "fixed":
            changes.append(
                Change(
                    "joint.fixed_contracted",
                    f"fixed joint {joint.name}: link {joint.child} merged into "
                    f"{group[joint.child][0]}",
                    element=f"joint {joint.name}",
                )
            )
            continue
        rep, pose = group[joint.parent]
        joints.append(replace(joint, parent=rep, origin=pose @ joint.origin))
    links = []
    for rep, names in members.items():
        if len(names) == 1:
            links.append(obj.link_map[rep])
            continue
        visuals, collisions, inertials, source_names = [], [], [], []
        for name in names:
            link = obj.link_map[name].reexpressed(group[name][1])
            visuals += link.visuals
            collisions += link.collisions
            if link.inertial is not None:
                inertials.append(link.inertial)
            source_names += link.source_names
        links.append(
            Link(
                rep,
                visuals=visuals,
                collisions=collisions,
                inertial=combine_inertials(inertials),
                source_names=tuple(source_names),
            )
        )
    return obj.replace(links=tuple(links), joints=tuple(joints)), changes


# --------------------------------------------------------------------------- names and signs
def natural_key(name: str) -> tuple:
    """Sort key comparing the digit runs of a name as numbers: joint_2 before joint_10, so a
    normalized object keeps its numbering when normalized again."""
    return tuple(int(part) if i % 2 else part for i, part in enumerate(re.split(r"(\d+)", name)))


def canonical_names(obj: ArticulatedObject) -> ArticulatedObject:
    """Root `base`; joints `joint_<i>` with child links `link_<i>`, i in depth-first pre-order
    with the joints below each link sorted by name (`natural_key`). Source names stay in
    `source_names` / `source_name`."""
    children: dict[str, list[Joint]] = {}
    for joint in obj.joints:
        children.setdefault(joint.parent, []).append(joint)

    def below(link: str) -> list[Joint]:
        key = lambda j: (natural_key(j.name), j.name)  # noqa: E731
        return sorted(children.get(link, []), key=key, reverse=True)

    link_names = {obj.root: ROOT_NAME}
    order: list[Joint] = []
    stack = below(obj.root)
    while stack:
        joint = stack.pop()
        link_names[joint.child] = f"link_{len(order)}"
        order.append(joint)
        stack.extend(below(joint.child))
    joint_names = {j.name: f"joint_{i}" for i, j in enumerate(order)}
    joints = []
    for joint in order:
        mimic = joint.mimic
        if mimic is not None:
            mimic = Mimic(joint_names[mimic.joint], mimic.multiplier, mimic.offset)
        joints.append(
            replace(
                joint,
                name=joint_names[joint.name],
                parent=link_names[joint.parent],
                child=link_names[joint.child],
                mimic=mimic,
            )
        )
    by_new = {link_names[link.name]: link for link in obj.links}
    ordered = [ROOT_NAME] + [f"link_{i}" for i in range(len(order))]
    links = [replace(by_new[name], name=name) for name in ordered]
    return obj.replace(links=tuple(links), joints=tuple(joints))


def canonical_geometry_names(obj: ArticulatedObject) -> tuple[ArticulatedObject, list[Change]]:
    """Every shape named `<link>_visual_<i>` / `<link>_collision_<i>`: unique in the whole file
    (MuJoCo warns on a repeated geom name and drops it)."""
    links, renamed = [], 0
    for link in obj.links:
        shapes = {}
        for kind in ("visual", "collision"):
            named = []
            for i, g in enumerate(getattr(link, f"{kind}s")):
                name = f"{link.name}_{kind}_{i}"
                renamed += g.name != name
                named.append(replace(g, name=name))
            shapes[f"{kind}s"] = tuple(named)
        links.append(replace(link, **shapes))
    changes = []
    if renamed:
        changes.append(
            Change(
                "names.geometry",
                f"{renamed} shape name(s) set to the canonical <link>_visual_<i> / "
                "<link>_collision_<i> (unique in the file)",
                element=f"robot {obj.name}",
            )
        )
    return obj.replace(links=tuple(links)), changes


def needs_flip(world_axis: np.ndarray) -> bool:
    """True when the component of largest magnitude (ties within 1e-12 go to x, then y, then
    z) is negative: the canonical sign makes it positive."""
    magnitude = np.abs(world_axis)
    index = int(np.flatnonzero(magnitude >= magnitude.max() - AXIS_TIE_TOLERANCE)[0])
    return bool(world_axis[index] < 0)


def canonical_axis_signs(obj: ArticulatedObject) -> tuple[ArticulatedObject, list[Change]]:
    """Flip joints whose world axis at rest has the wrong sign: axis and coordinate negated,
    limits negated and swapped, mimic couplings adjusted. The motion is unchanged."""
    frames = obj.joint_frames()
    flipped = {
        j.name for j in obj.joints if j.moving and needs_flip(frames[j.name][:3, :3] @ j.axis)
    }
    changes = []
    joints = []
    for joint in obj.joints:
        mimic = joint.mimic
        if mimic is not None:
            m, b = mimic.multiplier, mimic.offset
            if joint.name in flipped:
                m, b = -m, -b
            if mimic.joint in flipped:
                m = -m
            mimic = Mimic(mimic.joint, m + 0.0, b + 0.0)
        if joint.name in flipped:
            joint = replace(
                joint, axis=-joint.axis + 0.0, lower=-joint.upper, upper=-joint.lower, mimic=mimic
            )
            changes.append(
                Change(
                    "axis.flipped",
                    "axis and coordinate negated (limits negated and swapped) to follow the "
                    "canonical axis sign; the motion is unchanged",
                    element=f"joint {joint.name}",
                )
            )
        else:
            joint = replace(joint, mimic=mimic)
        joints.append(joint)
    return obj.replace(joints=tuple(joints)), changes


# --------------------------------------------------------------------------- exactness
def snap_transform(transform: np.ndarray) -> np.ndarray:
    """`transform` with its rotation replaced by the nearest one URDF's rpy writes exactly."""
    rot = transform[:3, :3]
    if np.array_equal(rot, np.eye(3)):
        return transform
    for _ in range(16):
        rot = rpy_to_matrix(matrix_to_rpy(rot))
        if exact_rpy(rot) is not None:
            break
    out = transform.copy()
    out[:3, :3] = rot
    return out


def representable(obj: ArticulatedObject) -> ArticulatedObject:
    """`obj` rounded so that writing and re-reading it reproduces every number: rotations
    representable by rpy, inertia tensors exactly symmetric."""

    def geometry(g: Geometry) -> Geometry:
        return replace(g, origin=snap_transform(g.origin))

    links = []
    for link in obj.links:
        inertial = link.inertial
        if inertial is not None:
            sym = (inertial.inertia + inertial.inertia.T) / 2.0
            inertial = replace(inertial, inertia=sym)
        links.append(
            replace(
                link,
                visuals=tuple(geometry(g) for g in link.visuals),
                collisions=tuple(geometry(g) for g in link.collisions),
                inertial=inertial,
            )
        )
    joints = tuple(replace(j, origin=snap_transform(j.origin)) for j in obj.joints)
    return obj.replace(links=tuple(links), joints=joints)


# --------------------------------------------------------------------------- the whole step
@dataclass(frozen=True)
class Canonical:
    """object: the canonical object (mesh files still at their source paths);
    `reference.transformed(placement, scale)` equals it up to representation."""

    object: ArticulatedObject
    placement: np.ndarray
    scale: float
    changes: list[Change]


def drop_zero_size_primitives(obj: ArticulatedObject) -> tuple[ArticulatedObject, list[Change]]:
    """Primitives with a size of 0 or less (a sphere of radius 0, a box with a flat side): no
    simulator can hold them (MuJoCo refuses a size that is not positive), so each is dropped
    and recorded as `geometry.shape_dropped`."""
    changes, links = [], []
    for link in obj.links:
        kept = {}
        for role in ("visuals", "collisions"):
            shapes = getattr(link, role)
            flat = [g for g in shapes if g.kind != "mesh" and (not g.size or min(g.size) <= 0.0)]
            for g in flat:
                size = " x ".join(f"{v:g}" for v in g.size) or "none"
                message = f"{role[:-1]} {g.kind} of size {size} dropped: a primitive needs every "
                changes.append(
                    Change(SHAPE_DROPPED, message + "size positive", f"link {link.name}")
                )
            if flat:
                kept[role] = tuple(g for g in shapes if not any(g is f for f in flat))
        links.append(replace(link, **kept) if kept else link)
    return (obj.replace(links=tuple(links)) if changes else obj), changes


def check_meshes(obj: ArticulatedObject, root: Path | None) -> list[Change]:
    """Load every mesh the object uses (raises `mesh.missing` / `mesh.corrupt`); returns what
    reading them changed or noted (`mesh.unit_scaled`, `texture.missing`, ...), once per file."""
    changes: dict[tuple[str, str], Change] = {}
    for link in obj.links:
        for g in (*link.visuals, *link.collisions):
            if g.kind == "mesh":
                mesh = load_mesh(Path(g.filename), root=root, element=f"link {link.name}")
                for change in mesh.changes(element=f"file {Path(g.filename).name}"):
                    changes.setdefault((change.code, change.message), change)
    return list(changes.values())


def canonicalize(
    reference: ArticulatedObject,
    *,
    up_axis: str = "z",
    scale: float = 1.0,
    root: Path | None = None,
    density: float = MESH_DENSITY,
) -> Canonical:
    """Apply the representation rules of the convention to `reference` (see module docstring).
    `root` confines the resources meshes may load (GLTF buffers)."""
    reference, changes = drop_zero_size_primitives(reference)
    changes += check_meshes(reference, root)
    if up_axis != "z":
        changes.append(
            Change(
                "frame.up_axis",
                f"source up axis {up_axis} rotated onto +z",
                element=f"robot {reference.name}",
            )
        )
    if scale != 1.0:
        changes.append(
            Change(
                "frame.scale",
                f"scaled by the source's scale factor {scale!r}",
                element=f"robot {reference.name}",
            )
        )
    placement = canonical_placement(reference, up_axis, scale, root=root)
    changes.append(
        Change(
            "frame.placement",
            "placed with its rest-pose visual bounding box centred on the z axis and its bottom "
            f"at z = 0 (translation {placement[:3, 3].tolist()})",
            element=f"robot {reference.name}",
        )
    )
    placed = reference.transformed(placement, scale)
    obj, more = resolve_inertials(placed, root=root, density=density)
    changes += more
    obj, more = contract_fixed(obj)
    changes += more
    renamed = canonical_names(obj)
    if [link.source_names for link in renamed.links] != [(link.name,) for link in renamed.links]:
        changes.append(
            Change(
                "names.canonical",
                "links and joints renamed to the canonical base / link_i / joint_i names "
                "(source names kept in the manifests)",
                element=f"robot {reference.name}",
            )
        )
    for link in renamed.links[1:]:
        if link.inertial is None:
            changes.append(
                Change(
                    "inertial.none",
                    f"moving link (source {', '.join(link.source_names)}) has no mass: no valid "
                    "source inertial and no shape enclosing volume",
                    element=f"link {link.name}",
                )
            )
    obj, more = canonical_axis_signs(renamed)
    changes += more
    obj, more = canonical_geometry_names(obj)
    changes += more
    for joint in obj.joints:
        if joint.type == "revolute" and joint.upper - joint.lower >= FULL_TURN:
            changes.append(
                Change(
                    "limits.full_turn",
                    f"revolute range [{joint.lower!r}, {joint.upper!r}] spans a full turn or "
                    "more (kept as revolute)",
                    element=f"joint {joint.name}",
                )
            )
    changes += unspecified_actuation(obj)
    return Canonical(representable(obj), placement, float(scale), changes)


def unspecified_actuation(obj: ArticulatedObject) -> list[Change]:
    """`limits.actuation_unspecified` for each joint whose written `<limit>` gets an effort or a
    velocity of 0 because the source gives none: the URDF specification requires both on
    every `<limit>` (a helical joint is written with a prismatic part, which has one)."""
    changes = []
    for joint in obj.joints:
        missing = [name for name in ("effort", "velocity") if getattr(joint, name) is None]
        if missing and (joint.type == "helical" or has_limit_element(joint)):
            changes.append(
                Change(
                    "limits.actuation_unspecified",
                    f"the source gives no {' and no '.join(missing)}; written as 0 (not "
                    "specified), as the URDF specification requires both on every <limit>",
                    element=f"joint {joint.name}",
                )
            )
    return changes
