"""MJCF (MuJoCo XML) adapter: compiled by MuJoCo itself, then read from the compiled model.

Before MuJoCo sees a file, `scan_mjcf` parses it and every file it includes with the hardened
parser and checks that every file they reference (includes, meshes, textures, height fields,
skins, models; honouring compiler meshdir/texturedir/assetdir) stays inside the source root.
MuJoCo then compiles the model, so includes, defaults, eulerseq, angle units and `<compiler>`
settings behave exactly as in MuJoCo. The mapping to the canonical model is in docs/formats.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from normalize.adapters.registry import register
from normalize.changes import Change, shape_dropped
from normalize.discovery import Candidate, discover_entries
from normalize.errors import AssetError, ClosedLoopError
from normalize.files import regular_status
from normalize.limits import MAX_INCLUDES, MAX_MAGNITUDE, check_count
from normalize.meshes import (
    IMAGE_SUFFIXES,
    MAX_TEXTURE_PIXELS,
    check_texture,
    generated_obj,
    height_field_mesh,
    resolve_mesh_file,
)
from normalize.model import (
    AXIS_UNIT_TOLERANCE,
    ArticulatedObject,
    Geometry,
    Inertial,
    Joint,
    Link,
    Mimic,
    SourceInfo,
    direction,
)
from normalize.mujoco_warnings import captured
from normalize.multidof import decompose_joint
from normalize.paths import confine, is_inside, realpath
from normalize.safe_xml import parse_xml_bytes, read_limited
from normalize.sources import SourceConfig
from normalize.transforms import from_rotation_translation, invert, quaternion_matrix

DEFAULT_ENTRY = "**/*.xml"
# MuJoCo's viewer shows geom groups 0-2 by default; those are our visuals.
VISIBLE_GROUPS = (0, 1, 2)
_DIR_ATTRIBUTES = ("meshdir", "texturedir", "assetdir")


# ----------------------------------------------------------------------------- discovery
def discover_xml_entries(source: SourceConfig, pattern: str, included_by) -> list[Candidate]:
    """Candidates for formats whose entry files can include each other (MJCF, SDF): every file
    matching `source.entry` (else `pattern`) that the source selects, minus the files another
    matching file includes. `included_by(path)` lists the files `path` includes (may raise
    AssetError: such a file is still a candidate, rejected when loaded)."""
    root = source.path
    files, refused = discover_entries(source, pattern)
    included: set[Path] = set()
    for path in files:
        if not path.is_file() or not is_inside(path, root):
            continue  # refused when loaded; never read outside the root
        try:
            included.update(Path(realpath(p)) for p in included_by(path))
        except AssetError:
            continue
    return refused + [
        Candidate(source, p.relative_to(root).with_suffix("").as_posix(), p)
        for p in files
        if Path(realpath(p)) not in included
    ]


def _include_targets(xml_file: Path, main_dir: Path, value: str) -> list[Path]:
    """Where MuJoCo may find an included file: relative to the main model's folder, then to
    the including file's folder (MuJoCo 3+ tries both)."""
    out = [main_dir / value]
    if xml_file.parent != main_dir:
        out.append(xml_file.parent / value)
    return out


def _mjcf_includes(path: Path, source: SourceConfig) -> list[Path]:
    """Files `path` includes, directly or through its includes (for discovery; an include that
    leaves the root or exceeds the source's size limit raises AssetError and is never read)."""
    scan = scan_mjcf(path, source.path, max_bytes=source.max_file_bytes, assets=False)
    return [p for p in scan.files if p != path]


# ----------------------------------------------------------------------------- safety scan
@dataclass
class MjcfScan:
    """The XML files of one model (entry first) and every other file they reference."""

    files: list[Path] = field(default_factory=list)
    references: list[Path] = field(default_factory=list)
    root_tag: str = ""
    bodies: int = 0  # bodies and joints MuJoCo would make, <replicate> and includes expanded
    joints: int = 0


def _expanded(element, included: dict, tag_set: tuple[str, ...]) -> int:
    """How many elements with a tag in `tag_set` `element` holds once MuJoCo multiplies out
    `<replicate count>` and pastes includes (`included`: include element -> its file's root)."""
    total = 0
    for child in element:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "include":
            inner = included.get(child)
            total += 0 if inner is None else _expanded(inner, included, tag_set)
            continue
        inner = _expanded(child, included, tag_set)
        if child.tag == "replicate":
            try:
                count = max(0, int(child.get("count", "1")))
            except ValueError:
                count = 1  # MuJoCo refuses it when compiling
            total += count * inner
        else:
            total += inner + (child.tag in tag_set)
    return total


#: attributes holding lengths, angles, limits, masses and inertias: checked against
#: MAX_MAGNITUDE before MuJoCo compiles them (a size of 1e300 gives NaN inertias)
_MAGNITUDE_ATTRIBUTES = frozenset(
    ("pos", "size", "range", "mass", "fromto", "diaginertia", "fullinertia", "scale", "euler")
    + ("quat", "axisangle", "ref", "springref", "density")
)


#: elements whose size attributes make MuJoCo allocate that many values at compile time, and
#: the attributes: a builtin texture (RGB pixels, six faces for a cube or skybox) and a height
#: field's elevation grid
_GENERATED_SIZES = {"texture": ("width", "height"), "hfield": ("nrow", "ncol")}


def _check_generated_size(element, xml_file: Path) -> None:
    """`texture.too_large` for a texture or height field whose size attributes ask MuJoCo to
    generate more than MAX_TEXTURE_PIXELS values (an image file is checked by its header)."""
    first, second = _GENERATED_SIZES[element.tag]
    try:
        a = int(element.get(first, "0"))
        b = int(element.get(second, str(a)))
    except ValueError:
        return  # left to MuJoCo
    faces = 6 if element.tag == "texture" and element.get("type") in ("cube", "skybox") else 1
    if a > 0 and b > 0 and faces * a * b > MAX_TEXTURE_PIXELS:
        raise AssetError(
            f"{element.tag} {element.get('name') or ''} asks for {faces} x {a} x {b} values, "
            f"above the limit of {MAX_TEXTURE_PIXELS} (see docs/limits.md)",
            code="texture.too_large",
            stage="parse",
            path=str(xml_file),
            element=f"{element.tag} {first}={a} {second}={b}",
        )


def _check_magnitudes(value: str, where: str, xml_file: Path) -> None:
    """`parse.out_of_range` for a finite number in `value` beyond MAX_MAGNITUDE (text that is
    not numbers is left to MuJoCo)."""
    try:
        numbers = [float(token) for token in value.split()]
    except ValueError:
        return
    finite = [abs(x) for x in numbers if math.isfinite(x)]
    if finite and max(finite) > MAX_MAGNITUDE:
        raise AssetError(
            f"{where}: {max(finite):g} is beyond the plausible magnitude {MAX_MAGNITUDE:g} "
            "(see docs/limits.md)",
            code="parse.out_of_range",
            stage="parse",
            path=str(xml_file),
            element=where,
        )


def scan_mjcf(
    entry: Path, root: Path, *, max_bytes: int | None = None, assets: bool = True
) -> MjcfScan:
    """Parse `entry` and its includes with the hardened parser, refusing include cycles
    (``mjcf.include_cycle``) and includes leaving `root` (``path.*``, never read); with `assets`,
    also refuse asset references leaving `root` and referenced files above `max_bytes`
    (``file.too_large``)."""
    entry = Path(entry)
    main_dir = entry.parent
    scan = MjcfScan()
    trees = []
    included: dict = {}  # include element -> the root of the file it includes
    kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}

    def visit(xml_file: Path, chain: tuple[Path, ...], include=None) -> None:
        real = Path(realpath(xml_file))
        if real in chain:
            names = " -> ".join(p.name for p in (*chain, real))
            raise AssetError(
                f"include cycle: {names}",
                code="mjcf.include_cycle",
                stage="parse",
                path=str(xml_file),
                element="include",
            )
        confine(xml_file, root, referrer=str(chain[-1]) if chain else None)
        check_count("included files", len(scan.files) + 1, MAX_INCLUDES, xml_file)
        data = read_limited(xml_file, **kwargs)
        if not assets and b"include" not in data:
            scan.files.append(xml_file)  # discovery: a file without the word includes nothing
            return
        tree = parse_xml_bytes(data, xml_file)
        if include is not None:
            included[include] = tree
        scan.root_tag = scan.root_tag or str(tree.tag)
        scan.files.append(xml_file)
        trees.append((xml_file, tree))
        for element in tree.iter("include"):
            value = element.get("file")
            if not value:
                continue
            targets = _include_targets(xml_file, main_dir, value)
            existing = [t for t in targets if regular_status(t)]
            for target in existing or targets[:1]:
                confine(target, root, referrer=str(xml_file), element=f"include {value}")
            if existing:
                visit(existing[0], (*chain, real), element)

    visit(entry, ())
    if not assets:
        return scan
    scan.bodies = _expanded(trees[0][1], included, ("body",))
    scan.joints = _expanded(trees[0][1], included, ("joint", "freejoint"))
    dirs = {name: None for name in _DIR_ATTRIBUTES}
    for _, tree in trees:
        for compiler in tree.iter("compiler"):
            for name in _DIR_ATTRIBUTES:
                if compiler.get(name) is not None:
                    dirs[name] = compiler.get(name)
    bases = [main_dir / d for d in dirs.values() if d is not None] + [main_dir]
    for xml_file, tree in trees:
        for element in tree.iter():
            if element.tag == "include" or not isinstance(element.tag, str):
                continue
            if element.tag in _GENERATED_SIZES:
                _check_generated_size(element, xml_file)
            for attribute, value in element.attrib.items():
                if attribute in _MAGNITUDE_ATTRIBUTES:
                    _check_magnitudes(value, f"{element.tag} {attribute}", xml_file)
                if attribute.startswith("file") and value:
                    where = f"{element.tag} {attribute}={value}"
                    scan.references.extend(
                        _check_reference(value, [*bases, xml_file.parent], root, xml_file, where)
                    )
    limit = max_bytes
    for reference in scan.references:
        if limit is not None and reference.stat().st_size > limit:
            raise AssetError(
                f"referenced file {reference.name} is above the limit of {limit} bytes",
                code="file.too_large",
                stage="parse",
                path=str(reference),
            )
        if reference.suffix.lower() in IMAGE_SUFFIXES:  # a texture or height field
            check_texture(read_limited(reference, **kwargs), reference, stage="parse")
    return scan


def _check_reference(value, bases, root, xml_file, where) -> list[Path]:
    """The existing candidates of one file reference, every one confined to the root (the
    first candidate is checked even when none exists)."""
    candidates = list(dict.fromkeys(base / value for base in bases))
    # a FIFO or device would block MuJoCo's own open: refused (file.not_regular) here
    existing = [c for c in candidates if is_inside(c, root) and regular_status(c)]
    for candidate in existing or candidates[:1]:
        confine(candidate, root, referrer=str(xml_file), element=where)
    return existing


# ----------------------------------------------------------------------------- names
def mujoco_names(model) -> tuple[list[str], list[str]]:
    """Link names for MuJoCo bodies (body 0 is "world"; unnamed bodies "body<id>") and joint
    names for MuJoCo joints (unnamed: "<body>__joint<k>")."""
    taken = {model.body(i).name for i in range(model.nbody)}
    bodies = []
    for i in range(model.nbody):
        name = "world" if i == 0 else model.body(i).name
        if not name:
            name = f"body{i}"
            while name in taken:
                name += "_"
            taken.add(name)
        bodies.append(name)
    joints = []
    for j in range(model.njnt):
        name = model.joint(j).name
        if not name:
            body = int(model.jnt_bodyid[j])
            name = f"{bodies[body]}__joint{j - int(model.body_jntadr[body])}"
        joints.append(name)
    return bodies, joints


# ----------------------------------------------------------------------------- conversion
def _pose(pos, quat) -> np.ndarray:
    return from_rotation_translation(quaternion_matrix(quat), np.asarray(pos, dtype=float))


def _translation(p) -> np.ndarray:
    return from_rotation_translation(None, np.asarray(p, dtype=float))


@dataclass
class _Build:
    """What the conversion accumulates."""

    links: list[Link] = field(default_factory=list)
    joints: list[Joint] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    # Pose of each MuJoCo body frame in its link frame (identity unless the body's last joint
    # has an anchor off the body origin).
    body_frames: dict[str, np.ndarray] = field(default_factory=dict)
    # Shapes with a surface that could not be converted (`normalize.changes.shape_dropped`).
    dropped: list[dict] = field(default_factory=list)

    def drop(self, kind: str, element: str, why: str, extent=None) -> None:
        change, record = shape_dropped(kind, element, why, extent)
        self.changes.append(change)
        self.dropped.append(record)


def _subtree(model, body: int) -> list[int]:
    return [i for i in range(model.nbody) if _is_descendant(model, i, body)]


def _is_descendant(model, i: int, ancestor: int) -> bool:
    while i != ancestor and i != 0:
        i = int(model.body_parentid[i])
    return i == ancestor


def _has_geometry(model, bodies) -> bool:
    plane = _mj().mjtGeom.mjGEOM_PLANE
    return any(
        int(model.geom_type[g]) != plane
        for b in bodies
        for g in range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b])
    )


def _mj():
    import mujoco

    return mujoco


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


def _body_joints(model, body, parent_link, base, link_name, joint_names, build: _Build):
    """Joints from `parent_link` to the link of `body` (a chain through massless links when
    the body has several joints); returns the body's anchor (the point of the body frame where
    its link frame sits)."""
    mj = _mj()
    start, count = int(model.body_jntadr[body]), int(model.body_jntnum[body])
    if count == 0:
        build.joints.append(Joint(f"{link_name}__fixed", "fixed", parent_link, link_name, base))
        return np.zeros(3)
    anchor = np.zeros(3)
    previous = parent_link
    for k, j in enumerate(range(start, start + count)):
        name = joint_names[j]
        jtype = int(model.jnt_type[j])
        child = link_name if k == count - 1 else f"{link_name}__{name}"
        point = anchor if jtype == mj.mjtJoint.mjJNT_SLIDE else np.array(model.jnt_pos[j])
        origin = (base if k == 0 else np.eye(4)) @ _translation(point - anchor)
        anchor = point
        axis = np.array(model.jnt_axis[j], dtype=float)
        limited = bool(model.jnt_limited[j])
        if jtype == mj.mjtJoint.mjJNT_BALL:
            if limited:
                raise AssetError(
                    f"ball joint {name} has a cone limit ({math.degrees(model.jnt_range[j][1]):g}"
                    " degrees), which has no exact equivalent as three one-DOF joints",
                    code="joint.unsupported",
                    stage="model",
                    element=f"joint {name}",
                )
            links, joints, change = decompose_joint(
                "ball", name=name, parent=previous, child=child, origin=origin
            )
            build.links.extend(links)
            build.joints.extend(joints)
            build.changes.append(change)
        elif jtype in (mj.mjtJoint.mjJNT_HINGE, mj.mjtJoint.mjJNT_SLIDE):
            ref = float(model.qpos0[model.jnt_qposadr[j]])
            revolute = jtype == mj.mjtJoint.mjJNT_HINGE
            if limited:
                lower, upper = (float(v) - ref for v in model.jnt_range[j])
                kind = "revolute" if revolute else "prismatic"
            else:
                lower, upper = -math.inf, math.inf
                kind = "continuous" if revolute else "prismatic"
            if ref != 0.0:
                build.changes.append(
                    Change(
                        "mjcf.joint_ref",
                        f"joint {name} has ref {ref:.12g}: its coordinate is measured from the "
                        "reference configuration (qpos - ref), limits shifted accordingly",
                        element=f"joint {name}",
                    )
                )
            build.joints.append(
                Joint(name, kind, previous, child, origin, axis, lower=lower, upper=upper)
            )
        else:
            raise AssetError(
                f"free joint {name} in body {link_name}, which is not a top-level body: it sets "
                "the body's world pose directly and has no tree equivalent",
                code="joint.unsupported",
                stage="model",
                element=f"joint {name}",
            )
        if child != link_name:
            build.links.append(Link(child))
        previous = child
    return anchor


def _free_bodies(model, body_names, build: _Build) -> tuple[set[int], set[int]]:
    """(top-level bodies whose free joint becomes a fixed joint, bodies excluded)."""
    mj = _mj()
    fixed, excluded = set(), set()
    for body in range(1, model.nbody):
        start, count = int(model.body_jntadr[body]), int(model.body_jntnum[body])
        if count == 0 or int(model.jnt_type[start]) != mj.mjtJoint.mjJNT_FREE:
            continue
        if int(model.body_parentid[body]) != 0:
            continue  # refused in _body_joints
        name = body_names[body]
        if count > 1:
            raise AssetError(
                f"body {name} has a free joint and {count - 1} more joints",
                code="joint.unsupported",
                stage="model",
                element=f"body {name}",
            )
        subtree = _subtree(model, body)
        if not _has_geometry(model, subtree):
            excluded.update(subtree)
            build.changes.append(
                Change(
                    "mjcf.body_excluded",
                    f"free-floating body {name} carries no geometry (e.g. a camera rig next to "
                    f"the object); excluded with its {len(subtree) - 1} descendants",
                    element=f"body {name}",
                )
            )
        else:
            fixed.add(body)
            build.changes.append(
                Change(
                    "mjcf.free_joint_fixed",
                    f"free joint of top-level body {name} dropped: the body is fixed to the world "
                    "at its initial pose (qpos0)",
                    element=f"body {name}",
                )
            )
    return fixed, excluded


def _couplings(model, joint_names, kept: dict[str, Joint], build: _Build) -> None:
    """Equality constraints between joints (directly, or through fixed tendons held at their
    reference length) become mimic couplings; other equalities are refused or recorded."""
    mj = _mj()
    for e in range(model.neq):
        name = model.equality(e).name or f"equality{e}"
        etype = int(model.eq_type[e])
        if not model.eq_active0[e]:
            build.changes.append(
                Change("mjcf.equality_ignored", f"equality {name} is inactive; ignored", name)
            )
            continue
        if etype in (mj.mjtEq.mjEQ_CONNECT, mj.mjtEq.mjEQ_WELD):
            raise ClosedLoopError(
                f"equality {name} ({mj.mjtEq(etype).name.removeprefix('mjEQ_').lower()}) ties two "
                "bodies together: a closed kinematic loop",
                element=f"equality {name}",
            )
        coupling = None
        poly = [float(v) for v in model.eq_data[e][:5]]
        if etype == mj.mjtEq.mjEQ_JOINT and model.eq_obj2id[e] >= 0 and not any(poly[2:]):
            # y - y0 = a0 + a1 (x - x0), in our coordinates (measured from qpos0) y = a1 x + a0.
            follower = joint_names[model.eq_obj1id[e]]
            coupling = (follower, joint_names[model.eq_obj2id[e]], poly[1], poly[0])
        elif etype == mj.mjtEq.mjEQ_TENDON and model.eq_obj2id[e] < 0:
            coupling = _tendon_coupling(model, int(model.eq_obj1id[e]), poly[0], joint_names)
        why = _add_mimic(coupling, kept) if coupling else "it is not a linear two-joint coupling"
        if why:
            build.changes.append(
                Change("mjcf.equality_ignored", f"equality {name} not represented: {why}", name)
            )


def _tendon_coupling(model, tendon: int, a0: float, joint_names):
    """A fixed tendon c1 q1 + c2 q2 held at its reference length + a0, as
    (follower q2, driver q1, -c1/c2, a0/c2); None for other tendons."""
    mj = _mj()
    start, count = int(model.tendon_adr[tendon]), int(model.tendon_num[tendon])
    wraps = range(start, start + count)
    if count != 2 or any(int(model.wrap_type[w]) != mj.mjtWrap.mjWRAP_JOINT for w in wraps):
        return None
    (j1, c1), (j2, c2) = ((int(model.wrap_objid[w]), float(model.wrap_prm[w])) for w in wraps)
    if c2 == 0.0:
        return None
    return joint_names[j2], joint_names[j1], -c1 / c2, a0 / c2


def _add_mimic(coupling, kept: dict[str, Joint]) -> str | None:
    """Make `follower` mimic `driver` (resolved to the driver's own driver); the reason when
    it cannot be represented."""
    follower, driver, multiplier, offset = coupling
    if follower not in kept or driver not in kept:
        return "a coupled joint is not a one-DOF joint of the object"
    if kept[follower].mimic is not None:
        return f"joint {follower} is already coupled to {kept[follower].mimic.joint}"
    target = kept[driver]
    if target.mimic is not None:
        multiplier, offset = (
            multiplier * target.mimic.multiplier,
            multiplier * target.mimic.offset + offset,
        )
        driver = target.mimic.joint
    if driver == follower:
        return "the coupling is circular"
    kept[follower] = replace(kept[follower], mimic=Mimic(driver, multiplier, offset))
    for name, joint in kept.items():
        if joint.mimic is not None and joint.mimic.joint == follower:
            m, b = joint.mimic.multiplier, joint.mimic.offset
            kept[name] = replace(joint, mimic=Mimic(driver, m * multiplier, m * offset + b))
    return None


def model_to_object(model, candidate: Candidate, changes=()) -> ArticulatedObject:
    """The canonical object of a compiled MuJoCo model (`changes`: already recorded ones)."""
    source = candidate.source
    path = str(candidate.path)
    body_names, joint_names = mujoco_names(model)
    build = _Build(changes=list(changes))
    fixed_free, excluded = _free_bodies(model, body_names, build)
    anchors = {0: np.zeros(3)}
    for body in range(model.nbody):
        if body in excluded:
            continue
        name = body_names[body]
        if body > 0:
            parent = int(model.body_parentid[body])
            base = _translation(-anchors[parent]) @ _pose(
                model.body_pos[body], model.body_quat[body]
            )
            if body in fixed_free:
                j = int(model.body_jntadr[body])
                q = int(model.jnt_qposadr[j])
                free = _pose(model.qpos0[q : q + 3], model.qpos0[q + 3 : q + 7])
                build.joints.append(Joint(joint_names[j], "fixed", "world", name, free))
                anchors[body] = np.zeros(3)
            else:
                anchors[body] = _body_joints(
                    model, body, body_names[parent], base, name, joint_names, build
                )
        to_link = _translation(-anchors[body])
        visuals, collisions = _geometries(model, body, to_link, source.path, path, build)
        build.links.append(
            Link(name, visuals, collisions, _inertial(model, body, to_link), (name,))
        )
        build.body_frames[name] = to_link
    kept = {j.name: j for j in build.joints}
    _couplings(model, joint_names, kept, build)
    model_name = model.names[: model.names.index(b"\0")].decode() or candidate.path.stem
    labels = {
        "robot_name": model_name,
        "folder": Path(candidate.source_path).parent.as_posix(),
    }
    info = SourceInfo(
        library=source.name,
        source_id=candidate.source_id,
        source_path=candidate.source_path,
        license=source.license,
        labels=labels,
        changes=tuple(build.changes),
        extra={
            "source_frames": {k: v for k, v in build.body_frames.items()},
            "dropped_shapes": tuple(build.dropped),
        },
    )
    return ArticulatedObject(model_name, build.links, list(kept.values()), info)


def compile_mjcf(path: Path, warnings: list[str] | None = None):
    """(spec, model): MuJoCo's parsed and compiled model of `path`; MuJoCo's errors become
    ``mjcf.compile``, its warnings are appended to `warnings`."""
    try:
        mujoco = _mj()
    except ImportError as exc:  # the mujoco package is an optional dependency
        raise AssetError(
            "the mujoco package is not installed (pip install '.[mjcf]')",
            code="mjcf.unavailable",
            stage="parse",
            path=str(path),
        ) from exc
    try:
        with captured(mujoco) as caught:
            spec = mujoco.MjSpec.from_file(str(path))
            model = _compile_with_safe_axes(spec)
    except ValueError as exc:
        raise AssetError(
            f"MuJoCo cannot compile the model: {exc}",
            code="mjcf.compile",
            stage="parse",
            path=str(path),
        ) from exc
    if warnings is not None:
        warnings.extend(caught)
    return spec, model


def _compile_with_safe_axes(spec):
    """`spec.compile()`, with every joint axis whose squared length would overflow (1e300 1e300
    0) or underflow in MuJoCo's normalization, which would leave the zero vector, given to it at
    unit length; the spec keeps the file's values (`_axis_changes` records them)."""
    scaled = []
    for joint in spec.joints:
        found = direction(np.array(joint.axis))
        if found is not None and not 1e-150 <= found[1] <= 1e150:
            scaled.append((joint, np.array(joint.axis)))
            joint.axis = found[0]
    model = spec.compile()
    for joint, axis in scaled:
        joint.axis = axis
    return model


def _axis_changes(spec, joint_names) -> list[Change]:
    """MuJoCo normalizes joint axes silently; record the ones the file gave at another length."""
    mj = _mj()
    no_axis = (mj.mjtJoint.mjJNT_FREE, mj.mjtJoint.mjJNT_BALL)
    changes = []
    for joint in spec.joints:
        found = direction(np.array(joint.axis))
        norm = 0.0 if found is None else found[1]
        if joint.type in no_axis or abs(norm - 1.0) <= AXIS_UNIT_TOLERANCE:
            continue
        name = joint_names[joint.id]
        changes.append(
            Change(
                "axis.normalized",
                f"joint {name} axis {list(map(float, joint.axis))} has length {norm:.12g}; "
                "normalized (as MuJoCo does)",
                element=f"joint {name}",
            )
        )
    return changes


@register
class MjcfAdapter:
    format = "mjcf"

    def discover(self, source: SourceConfig) -> list[Candidate]:
        return discover_xml_entries(source, DEFAULT_ENTRY, lambda p: _mjcf_includes(p, source))

    def load(self, candidate: Candidate) -> ArticulatedObject:
        source = candidate.source
        confine(candidate.path, source.path)
        scan = scan_mjcf(candidate.path, source.path, max_bytes=source.max_file_bytes)
        check_count("bodies", scan.bodies, source.max_links, candidate.path)  # before compiling
        check_count("joints", scan.joints, source.max_links, candidate.path)
        if scan.root_tag != "mujoco":
            raise AssetError(
                f"root element is <{scan.root_tag}>, not <mujoco>",
                code="mjcf.not_mjcf",
                stage="parse",
                path=str(candidate.path),
            )
        warned: list[str] = []
        spec, model = compile_mjcf(candidate.path, warned)
        for used in model.paths.split(b"\0"):
            if used and not is_inside(Path(used.decode()), source.path):
                confine(Path(used.decode()), source.path, referrer=str(candidate.path))
        try:
            changes = _axis_changes(spec, mujoco_names(model)[1]) + [
                Change(
                    "mjcf.warning", f"MuJoCo warned: {text}", element=f"file {candidate.path.name}"
                )
                for text in warned
            ]
            return model_to_object(model, candidate, changes)
        except AssetError as exc:
            exc.path = exc.path or str(candidate.path)
            raise
