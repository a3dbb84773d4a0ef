"""Turn one object plan into the files of its folder and its ground-truth sidecar."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from samples.design import Design
from samples.frames import pose, rot_z
from samples.kinds import Sampler, build_design
from samples.mjcf import write_mjcf
from samples.partnet import write_partnet
from samples.plan import ALL_SOURCES, ObjectPlan
from samples.sdf import write_sdf
from samples.truth import truth_json, truth_record
from samples.twins import MESH_LAYOUTS, apply_variant, design_digest, design_key
from samples.urdf import partnet_frame_correction, write_urdf
from samples.written import Quirks

# Design (z up) to a y-up file frame: x stays, z becomes y, y becomes -z.
Y_UP = pose(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]))


# The 24 proper rotations that map coordinate axes onto coordinate axes.
def _axis_rotations() -> list[np.ndarray]:
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            matrix = np.eye(3)[list(perm)] * np.array(signs)[:, None]
            if np.linalg.det(matrix) > 0:
                out.append(matrix)
    return out


AXIS_ROTATIONS = _axis_rotations()

PARTNET_ANNO_BASE = 900000  # anno_id of object i is PARTNET_ANNO_BASE + i


@dataclass
class GeneratedObject:
    plan: ObjectPlan
    files: dict[str, str]  # relative to the object folder, truth.json included
    upper_first: bool  # needs the limits.reversed allowance
    design: str = ""  # which object it is: `design_digest` of the design before the variant
    # and the twin's `design_key` (equal for the same object)


def _rotate_joint_frames(design: Design, s: Sampler) -> Design:
    joints = []
    for joint in design.joints:
        frame = joint.frame.copy()
        frame[:3, :3] = s.pick(AXIS_ROTATIONS)
        joints.append(replace(joint, frame=frame))
    return replace(design, joints=joints)


def _unbounded_screws(design: Design) -> Design:
    """A continuous joint driving the pair makes the composed screw unbounded."""
    joints = [
        replace(j, lower=None, upper=None) if j.type == "helical" else j for j in design.joints
    ]
    return replace(design, joints=joints)


def _placement(s: Sampler) -> np.ndarray:
    yaw = s.u(-math.pi, math.pi, 4)
    return pose(rot_z(yaw), (s.u(-0.5, 0.5), s.u(-0.5, 0.5), s.u(0.0, 0.3)))


def _pick_joints(design: Design, count: int, s: Sampler, types: tuple[str, ...]) -> frozenset:
    eligible = [j.name for j in design.joints if j.type in types]
    if not count or not eligible:
        return frozenset()
    chosen = s.rng.choice(len(eligible), size=min(count, len(eligible)), replace=False)
    return frozenset(eligible[int(k)] for k in chosen)


def make_object(plan: ObjectPlan, seed: int) -> GeneratedObject:
    """Build, write and describe one object (pure: no file access)."""
    s = Sampler(plan.rng(seed), extra_drawers=int(plan.variant == "one_more_drawer"))
    design = build_design(plan.kind, plan.name, s, plan.demo, plan.helpers)
    identity = f"{design_digest(design)}/{design_key(plan.variant, plan.index)}"
    if plan.variant:
        design = apply_variant(design, plan.variant, plan.index)
    if plan.rotated_frames:
        design = _rotate_joint_frames(design, s)
    if plan.placement:
        design = design.transformed(_placement(s))
    moving = ("revolute", "prismatic", "continuous")
    quirks = Quirks(
        non_unit_axis=_pick_joints(design, plan.non_unit_axis, s, moving),
        upper_first=_pick_joints(design, plan.upper_first, s, ("revolute", "prismatic")),
        turn_first=plan.turn_first,
        revolute_driver=plan.revolute_driver,
        angle_degree=plan.angle_degree,
        body_fragment=plan.body_fragment,
        relative_to=plan.relative_to,
        deprecated_pitch=plan.deprecated_pitch,
        mesh_files=MESH_LAYOUTS.get(plan.variant, "part"),
    )
    fmt, up_axis = ALL_SOURCES[plan.source]
    labels = []
    has_helical = any(j.type == "helical" for j in design.joints)
    if fmt == "partnet_mobility":
        written = write_partnet(design, quirks, PARTNET_ANNO_BASE + plan.index)
        in_file = design.transformed(partnet_frame_correction())
        labels.append("partnet_base_rpy")
    elif fmt == "urdf":
        in_file = design.transformed(Y_UP) if up_axis == "y" else design
        written = write_urdf(in_file, quirks)
    elif fmt == "mjcf":
        written, in_file = write_mjcf(design, quirks), design
        labels.append("include_fragment")
    else:
        written, in_file = write_sdf(design, quirks), design
    pair = fmt in ("partnet_mobility", "urdf") and has_helical
    if pair:
        labels.append("mimic_helical_pair")
        if not quirks.revolute_driver:
            in_file = _unbounded_screws(in_file)
    if fmt == "sdf" and has_helical:
        labels.append("screw_thread_pitch")
    flags = {
        "helper_links": any(j.type == "fixed" for j in design.joints),
        "placement_offset": plan.placement,
        "rotated_joint_frames": plan.rotated_frames,
        "non_unit_axis": bool(quirks.non_unit_axis),
        "limits_upper_first": bool(quirks.upper_first),
        "y_up": up_axis == "y",
        "helical_pair_rotation_first": pair and quirks.turn_first,
        "helical_pair_revolute_driver": pair and quirks.revolute_driver,
        "angle_degree": quirks.angle_degree,
        "body_fragment": quirks.body_fragment and "parts/sliding.xml" in written.files,
        "relative_to": quirks.relative_to and any(j.type == "fixed" for j in design.joints),
        "deprecated_thread_pitch": quirks.deprecated_pitch and has_helical,
    }
    labels += [label for label, on in flags.items() if on]
    record = truth_record(in_file, fmt, written.entry, written.joint_names, labels)
    files = {**written.files, "truth.json": truth_json(record)}
    return GeneratedObject(plan, files, bool(quirks.upper_first), identity)
