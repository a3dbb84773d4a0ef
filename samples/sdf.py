"""SDFormat 1.10 writer: one model with posed links and revolute, prismatic, continuous, fixed
and screw joints.

The root link has the identity pose (its frame is the model frame); every other link frame sits
at the centre of its first part, so each joint carries a `<pose>` in its child link frame (the
SDFormat default) that puts it on the axis. Axes are in the joint frame. A helical joint is a
`screw` joint with `<screw_thread_pitch>` in metres per revolution, positive for a right-handed
thread; with the `deprecated_pitch` quirk it also carries the old Gazebo-classic
`<thread_pitch>` (radians per metre, positive for a left-handed thread: -2 pi / pitch).
"""

from __future__ import annotations

import math

import numpy as np

from samples.design import Design, JointDesign, link_inertial, part_centred_frames
from samples.frames import inverse, matrix_rpy, nums, pose
from samples.written import MeshTable, Quirks, Written


def _pose(transform: np.ndarray, indent: str, relative_to: str | None = None) -> str:
    values = nums([*transform[:3, 3], *matrix_rpy(transform[:3, :3])])
    attribute = f' relative_to="{relative_to}"' if relative_to else ""
    return f"{indent}<pose{attribute}>{values}</pose>"


class _SdfWriter:
    def __init__(self, design: Design, quirks: Quirks):
        self.design, self.quirks = design, quirks
        self.meshes = MeshTable("meshes", "part")
        self.frames = part_centred_frames(design)

    def link(self, name: str) -> list[str]:
        frame = self.frames[name]
        parts = self.design.link(name).parts
        lines = [f'    <link name="{name}">']
        joint = self.design.parent_joint(name)
        if joint is not None:
            if self.quirks.relative_to and joint.type == "fixed":
                relative = inverse(self.frames[joint.parent]) @ frame
                lines.append(_pose(relative, "      ", joint.parent))
            else:
                lines.append(_pose(frame, "      "))
        if parts:
            mass, com, inertia = link_inertial(parts, frame)
            lines += [
                "      <inertial>",
                f"        <pose>{nums(com)} 0 0 0</pose>",
                f"        <mass>{nums([mass])}</mass>",
                "        <inertia>",
                *(
                    f"          <{key}>{nums([inertia[r, c]])}</{key}>"
                    for key, r, c in (
                        ("ixx", 0, 0),
                        ("ixy", 0, 1),
                        ("ixz", 0, 2),
                        ("iyy", 1, 1),
                        ("iyz", 1, 2),
                        ("izz", 2, 2),
                    )
                ),
                "        </inertia>",
                "      </inertial>",
            ]
        to_link = inverse(frame)
        for k, part in enumerate(parts):
            local = to_link @ part.pose
            if part.shape == "box":
                primitive = f"<box><size>{nums(part.size)}</size></box>"
            else:
                radius, length = nums(part.size[:1]), nums(part.size[1:])
                primitive = (
                    f"<cylinder><radius>{radius}</radius><length>{length}</length></cylinder>"
                )
            mesh = f"<mesh><uri>{self.meshes.path(part.shape, part.size)}</uri></mesh>"
            lines += [
                f'      <visual name="{part.name}_visual_{k}">',
                _pose(local, "        "),
                f"        <geometry>{mesh}</geometry>",
                "      </visual>",
                f'      <collision name="{part.name}_collision_{k}">',
                _pose(local, "        "),
                f"        <geometry>{primitive}</geometry>",
                "      </collision>",
            ]
        return lines + ["    </link>"]

    def joint(self, joint: JointDesign) -> list[str]:
        kind = "screw" if joint.type == "helical" else joint.type
        child_frame = self.frames[joint.child]
        joint_frame = pose(child_frame[:3, :3], joint.point)
        lines = [f'    <joint name="{joint.name}" type="{kind}">']
        relative = inverse(child_frame) @ joint_frame
        if not np.allclose(relative, np.eye(4), atol=1e-12):
            lines.append(_pose(relative, "      "))
        lines += [f"      <parent>{joint.parent}</parent>", f"      <child>{joint.child}</child>"]
        if joint.type == "helical":
            per_turn = 2 * math.pi * joint.pitch
            lines.append(f"      <screw_thread_pitch>{nums([per_turn])}</screw_thread_pitch>")
            if self.quirks.deprecated_pitch:
                lines.append(
                    f"      <thread_pitch>{nums([-2 * math.pi / per_turn])}</thread_pitch>"
                )
        if joint.type != "fixed":
            axis = self.quirks.written_axis(joint.name, child_frame[:3, :3].T @ joint.axis)
            lines += ["      <axis>", f"        <xyz>{nums(axis)}</xyz>"]
            if joint.lower is not None:
                lower, upper = self.quirks.written_limits(joint)
                lines.append(
                    f"        <limit><lower>{nums([lower])}</lower><upper>{nums([upper])}</upper>"
                    "</limit>"
                )
            lines.append("      </axis>")
        return lines + ["    </joint>"]

    def text(self) -> str:
        design = self.design
        lines = [
            '<?xml version="1.0" ?>',
            '<sdf version="1.10">',
            f'  <model name="{design.name}">',
        ]
        lines += self.link(design.root)
        for joint in design.joints:
            lines += self.link(joint.child)
        for joint in design.joints:
            lines += self.joint(joint)
        lines += ["  </model>", "</sdf>"]
        return "\n".join(lines) + "\n"


def write_sdf(design: Design, quirks: Quirks) -> Written:
    """One object as an SDFormat 1.10 model file with its meshes."""
    writer = _SdfWriter(design, quirks)
    entry = f"{design.name}.sdf"
    files = {entry: writer.text(), **writer.meshes.files()}
    names = {j.name: j.name for j in design.moving_joints}
    return Written(entry, files, names)
