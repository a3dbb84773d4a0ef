"""MJCF writer: nested bodies, hinge and slide joints, mesh and primitive geoms.

The root body sits at the world origin (so the world frame is also the root link frame); every
other body frame is placed at the centre of its first part, so joint `pos` attributes are not
zero, as in hand-written models. Materials always come from an `<include>`d fragment
(`common/materials.xml`, not a model of its own); with the `body_fragment` quirk the root's
sliding children are `<include>`d from `parts/sliding.xml` too. With `angle_degree` the compiler
reads degrees (body orientations as `euler`, hinge ranges in degrees), otherwise radians and
quaternions. Helical joints have no MJCF equivalent and are refused.
"""

from __future__ import annotations

import math

import numpy as np

from samples.design import Design, JointDesign, part_centred_frames
from samples.frames import inverse, matrix_euler_xyz, matrix_quat, nums
from samples.written import MeshTable, Quirks, Written

MATERIALS = """<!-- Shared materials, included by the model file; not a model on its own. -->
<mujoco>
  <asset>
    <material name="mat_body" rgba="0.72 0.6 0.45 1"/>
    <material name="mat_part" rgba="0.45 0.47 0.52 1"/>
  </asset>
</mujoco>
"""


class _MjcfWriter:
    def __init__(self, design: Design, quirks: Quirks):
        if any(j.type == "helical" for j in design.joints):
            raise ValueError(f"{design.name}: MJCF has no helical joint")
        self.design, self.quirks = design, quirks
        self.meshes = MeshTable("meshes", "part")
        self.frames = part_centred_frames(design)

    def _orientation(self, transform: np.ndarray) -> str:
        xyz = f'pos="{nums(transform[:3, 3])}"'
        rot = transform[:3, :3]
        if np.allclose(rot, np.eye(3), atol=1e-12):
            return xyz
        if self.quirks.angle_degree:
            return f'{xyz} euler="{nums(math.degrees(v) for v in matrix_euler_xyz(rot))}"'
        return f'{xyz} quat="{nums(matrix_quat(rot))}"'

    def _angle(self, value: float) -> float:
        return math.degrees(value) if self.quirks.angle_degree else value

    def _joint(self, joint: JointDesign, indent: str) -> str:
        frame = self.frames[joint.child]
        pos = (inverse(frame) @ np.append(joint.point, 1.0))[:3]
        axis = self.quirks.written_axis(joint.name, frame[:3, :3].T @ joint.axis)
        kind = "slide" if joint.type == "prismatic" else "hinge"
        text = (
            f'{indent}<joint name="{joint.name}" type="{kind}" pos="{nums(pos)}" '
            f'axis="{nums(axis)}"'
        )
        if joint.type == "continuous":
            return text + ' limited="false"/>'
        lower, upper = joint.lower, joint.upper
        if joint.type == "revolute":
            lower, upper = self._angle(lower), self._angle(upper)
        return text + f' limited="true" range="{nums((lower, upper))}"/>'

    def _geoms(self, link: str, indent: str) -> list[str]:
        to_body = inverse(self.frames[link])
        material = "mat_body" if link == self.design.root else "mat_part"
        lines = []
        for k, part in enumerate(self.design.link(link).parts):
            placement = self._orientation(to_body @ part.pose)
            name = f'name="{link}_{part.name}_{k}"'
            if k % 2 == 0:
                mesh = self.meshes.path(part.shape, part.size).split("/", 1)[1][: -len(".obj")]
                shape = f'type="mesh" mesh="{mesh}"'
            elif part.shape == "box":
                shape = f'type="box" size="{nums(v / 2 for v in part.size)}"'
            else:
                shape = f'type="cylinder" size="{nums((part.size[0], part.size[1] / 2))}"'
            lines.append(f'{indent}<geom {name} {shape} {placement} material="{material}"/>')
        return lines

    def body(self, joint: JointDesign, depth: int) -> list[str]:
        indent = "  " * depth
        relative = inverse(self.frames[joint.parent]) @ self.frames[joint.child]
        lines = [f'{indent}<body name="{joint.child}" {self._orientation(relative)}>']
        if joint.type != "fixed":
            lines.append(self._joint(joint, indent + "  "))
        lines += self._geoms(joint.child, indent + "  ")
        for child in self.design.children(joint.child):
            lines += self.body(child, depth + 1)
        return lines + [f"{indent}</body>"]

    def files(self) -> dict[str, str]:
        design, quirks = self.design, self.quirks
        root = design.root
        angle = "degree" if quirks.angle_degree else "radian"
        lines = [
            f'<mujoco model="{design.name}">',
            f'  <compiler angle="{angle}" meshdir="meshes" autolimits="true"/>',
            '  <include file="common/materials.xml"/>',
            "  <default>",
            '    <joint damping="0.05"/>',
            "  </default>",
            "  <worldbody>",
            f'    <body name="{root}">',
        ]
        lines += self._geoms(root, "      ")
        fragment: list[str] = []
        for child in design.children(root):
            if quirks.body_fragment and child.type == "prismatic":
                fragment += self.body(child, 1)
            else:
                lines += self.body(child, 3)
        if fragment:
            lines.append('      <include file="parts/sliding.xml"/>')
        lines += ["    </body>", "  </worldbody>"]
        assets = [
            f'    <mesh name="{path.split("/", 1)[1][: -len(".obj")]}" '
            f'file="{path.split("/", 1)[1]}"/>'
            for path in self.meshes.paths.values()
        ]
        lines[6:6] = ["  <asset>", *assets, "  </asset>"]
        lines.append("</mujoco>")
        files = {
            f"{design.name}.xml": "\n".join(lines) + "\n",
            "common/materials.xml": MATERIALS,
            **self.meshes.files(),
        }
        if fragment:
            header = (
                "<!-- Sliding parts, included inside the root body; not a model on its own. -->"
            )
            files["parts/sliding.xml"] = (
                "\n".join([header, "<mujoco>", *fragment, "</mujoco>"]) + "\n"
            )
        return files


def write_mjcf(design: Design, quirks: Quirks) -> Written:
    """One object as an MJCF model file with its include fragments and meshes."""
    writer = _MjcfWriter(design, quirks)
    files = writer.files()
    names = {j.name: j.name for j in design.moving_joints}
    return Written(f"{design.name}.xml", files, names)
