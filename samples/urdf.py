"""URDF writers: plain URDF and PartNet-Mobility style `mobility.urdf`.

Plain URDF: the root link frame is the file frame, each link frame is its joint frame, meshes are
centred and placed by visual origins (rpy allowed), collisions are primitives and every link with
parts has an inertial. PartNet style, like the real dataset: an empty `base` link, a fixed joint
`base` -> root with rpy "1.5707963 0 -1.5707963" (all other links are y-up and axis-aligned with
it), links `link_N` and joints `joint_N` (N of the child link), meshes in `textured_objs/` with
their orientation baked in, visual origins as pure translations and no inertials.

A helical design joint becomes a prismatic + continuous pair through a massless link, the
prismatic joint mimicking the continuous one with multiplier = pitch (x = pitch * theta).
"""

from __future__ import annotations

import hashlib

import numpy as np

from samples.design import Design, JointDesign, link_inertial
from samples.frames import inverse, matrix_rpy, nums, pose, rpy_matrix
from samples.written import MeshTable, Quirks, Written

# PartNet's base joint, written exactly as the real files round it.
PARTNET_BASE_RPY = "1.5707963 0 -1.5707963"
# The exact rotation that rpy stands for: child (y-up) axes in the base (z-up) frame.
PARTNET_IDEAL = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def partnet_frame_correction() -> np.ndarray:
    """The rigid map from the design frame to a PartNet file's base frame: identity but for the
    rounding of pi/2 in PARTNET_BASE_RPY (about 3e-8 rad)."""
    written = rpy_matrix(*(float(v) for v in PARTNET_BASE_RPY.split()))
    return pose(written @ PARTNET_IDEAL.T)


def partnet_model_id(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:32]


def _origin(transform: np.ndarray, rpy: bool = True) -> str:
    xyz = f'xyz="{nums(transform[:3, 3])}"'
    if not rpy:
        return f"<origin {xyz}/>"
    angles = matrix_rpy(transform[:3, :3])
    return f'<origin {xyz} rpy="{nums(angles)}"/>'


class _UrdfWriter:
    def __init__(self, design: Design, quirks: Quirks, partnet: bool):
        self.design, self.quirks, self.partnet = design, quirks, partnet
        self.ind = "\t" if partnet else "  "
        self.meshes = (
            MeshTable("textured_objs", "original") if partnet else MeshTable("meshes", "part")
        )
        self.lines: list[str] = []
        if partnet:
            index = {link.name: i for i, link in enumerate(design.links)}
            self.link_name = {name: f"link_{i}" for name, i in index.items()}
            self.joint_name = {j.name: f"joint_{index[j.child]}" for j in design.joints}
        else:
            self.link_name = {link.name: link.name for link in design.links}
            self.joint_name = {j.name: j.name for j in design.joints}
        self.frames = {design.root: pose(PARTNET_IDEAL) if partnet else np.eye(4)}
        for joint in design.joints:
            self.frames[joint.child] = pose(PARTNET_IDEAL, joint.point) if partnet else joint.frame

    # ----------------------------------------------------------------- links
    def link(self, name: str) -> None:
        i = self.ind
        design_link = self.design.link(name)
        frame = self.frames[name]
        to_link = inverse(frame)
        self.lines.append(f'{i}<link name="{self.link_name[name]}">')
        if design_link.parts and not self.partnet:
            mass, com, inertia = link_inertial(design_link.parts, frame)
            self.lines += [
                f"{i * 2}<inertial>",
                f'{i * 3}<origin xyz="{nums(com)}" rpy="0 0 0"/>',
                f'{i * 3}<mass value="{nums([mass])}"/>',
                f'{i * 3}<inertia ixx="{nums([inertia[0, 0]])}" ixy="{nums([inertia[0, 1]])}" '
                f'ixz="{nums([inertia[0, 2]])}" iyy="{nums([inertia[1, 1]])}" '
                f'iyz="{nums([inertia[1, 2]])}" izz="{nums([inertia[2, 2]])}"/>',
                f"{i * 2}</inertial>",
            ]
        layout = "part" if self.partnet else self.quirks.mesh_files
        if layout == "link" and design_link.parts:  # one mesh file for the link's parts
            parts = [(p.shape, p.size, to_link @ p.pose) for p in design_link.parts]
            self._visual(design_link.label, _origin(np.eye(4)), self.meshes.merged_path(parts))
        for part in design_link.parts:
            local = to_link @ part.pose
            if self.partnet:
                mesh = self.meshes.path(part.shape, part.size, local[:3, :3])
                origin = _origin(local, rpy=False)
            else:
                mesh = self.meshes.path(part.shape, part.size) if layout == "part" else None
                origin = _origin(local)
            label = f"{design_link.label}-{part.name}"
            if layout == "halves":  # the part's faces in two files, both at its origin
                for half in (0, 1):
                    whole = [(part.shape, part.size, np.eye(4))]
                    self._visual(f"{label}-{half}", origin, self.meshes.merged_path(whole, half))
            elif layout == "part":
                self._visual(label, origin, mesh)
            shape = f'<mesh filename="{mesh}"/>' if self.partnet else self._primitive(part)
            self.lines += [
                f"{i * 2}<collision>",
                f"{i * 3}{origin}",
                f"{i * 3}<geometry>",
                f"{i * 4}{shape}",
                f"{i * 3}</geometry>",
                f"{i * 2}</collision>",
            ]
        self.lines.append(f"{i}</link>")

    def _visual(self, name: str, origin: str, mesh: str) -> None:
        i = self.ind
        self.lines += [
            f'{i * 2}<visual name="{name}">',
            f"{i * 3}{origin}",
            f"{i * 3}<geometry>",
            f'{i * 4}<mesh filename="{mesh}"/>',
            f"{i * 3}</geometry>",
            f"{i * 2}</visual>",
        ]

    @staticmethod
    def _primitive(part) -> str:
        if part.shape == "box":
            return f'<box size="{nums(part.size)}"/>'
        return f'<cylinder radius="{nums(part.size[:1])}" length="{nums(part.size[1:])}"/>'

    # ----------------------------------------------------------------- joints
    def _joint(
        self,
        name: str,
        type: str,
        parent: str,
        child: str,
        origin: np.ndarray,
        axis: str | None = None,
        limits: tuple[float, float] | None = None,
        mimic: str | None = None,
    ) -> None:
        i = self.ind
        # PartNet links share one orientation, so its joint origins are pure translations.
        origin_xml = _origin(origin, rpy=not self.partnet)
        self.lines += [f'{i}<joint name="{name}" type="{type}">', f"{i * 2}{origin_xml}"]
        if axis is not None:
            self.lines.append(f'{i * 2}<axis xyz="{axis}"/>')
        self.lines += [f'{i * 2}<child link="{child}"/>', f'{i * 2}<parent link="{parent}"/>']
        if limits is not None:
            extra = "" if self.partnet else ' effort="30" velocity="1"'
            self.lines.append(
                f'{i * 2}<limit lower="{nums(limits[:1])}" upper="{nums(limits[1:])}"{extra}/>'
            )
        if mimic is not None:
            self.lines.append(f"{i * 2}{mimic}")
        self.lines.append(f"{i}</joint>")

    def joint(self, joint: JointDesign) -> None:
        parent, child = self.link_name[joint.parent], self.link_name[joint.child]
        frame = self.frames[joint.child]
        origin = inverse(self.frames[joint.parent]) @ frame
        name = self.joint_name[joint.name]
        axis = nums(self.quirks.written_axis(joint.name, frame[:3, :3].T @ joint.axis))
        if joint.type == "helical":
            self._helical_pair(joint, name, parent, child, origin, axis)
            return
        limits = None
        if joint.type in ("revolute", "prismatic"):
            limits = self.quirks.written_limits(joint)
        self._joint(
            name, joint.type, parent, child, origin, None if joint.type == "fixed" else axis, limits
        )

    def _helical_pair(self, joint, name, parent, child, origin, axis) -> None:
        """Prismatic + rotational joint through a massless link, the prismatic one mimicking
        the rotational one. The rotational driver is continuous (its screw is then unbounded:
        the follower's limits, the cap's travel, are not part of a mimic coupling) or, with the
        `revolute_driver` quirk, revolute with the screw's limits."""
        helper = f"{child}_helper"
        slide = f"{name}_slide" if not self.partnet else f"joint_{len(self.design.links)}"
        travel = tuple(sorted((joint.pitch * joint.lower, joint.pitch * joint.upper)))
        mimic = f'<mimic joint="{name}" multiplier="{nums([joint.pitch])}" offset="0"/>'
        turn = "revolute" if self.quirks.revolute_driver else "continuous"
        turn_limits = (joint.lower, joint.upper) if self.quirks.revolute_driver else None
        self.lines.append(f'{self.ind}<link name="{helper}"/>')
        if self.quirks.turn_first:
            self._joint(name, turn, parent, helper, origin, axis, turn_limits)
            self._joint(slide, "prismatic", helper, child, np.eye(4), axis, travel, mimic)
        else:
            self._joint(slide, "prismatic", parent, helper, origin, axis, travel, mimic)
            self._joint(name, turn, helper, child, np.eye(4), axis, turn_limits)

    # ----------------------------------------------------------------- document
    def text(self) -> str:
        design = self.design
        robot = f"partnet_{partnet_model_id(design.name)}" if self.partnet else design.name
        self.lines = ['<?xml version="1.0" ?>', f'<robot name="{robot}">']
        if self.partnet:
            self.lines.append(f'{self.ind}<link name="base"/>')
        self.link(design.root)
        if self.partnet:
            root = self.link_name[design.root]
            self.lines += [
                f'{self.ind}<joint name="joint_{root.split("_")[1]}" type="fixed">',
                f'{self.ind * 2}<origin rpy="{PARTNET_BASE_RPY}" xyz="0 0 0"/>',
                f'{self.ind * 2}<child link="{root}"/>',
                f'{self.ind * 2}<parent link="base"/>',
                f"{self.ind}</joint>",
            ]
        for joint in design.joints:
            self.link(joint.child)
            self.joint(joint)
        self.lines.append("</robot>")
        return "\n".join(self.lines) + "\n"


def write_urdf(design: Design, quirks: Quirks, partnet: bool = False) -> Written:
    """One object as a URDF file (PartNet style: `mobility.urdf`) with its meshes."""
    writer = _UrdfWriter(design, quirks, partnet)
    entry = "mobility.urdf" if partnet else f"{design.name}.urdf"
    files = {entry: writer.text(), **writer.meshes.files()}
    names = {j.name: writer.joint_name[j.name] for j in design.moving_joints}
    return Written(entry, files, names)
