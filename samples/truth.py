"""The ground-truth sidecar `truth.json` (contract: notes SIDECAR.md, docs/sample_library.md).

Twists come straight from the design (world axis and a point on it), already moved into the
frame of the source file's root link, so they do not depend on any parser or on the pipeline's
own model code.
"""

from __future__ import annotations

import json

import numpy as np

from samples.design import Design, JointDesign


def twist(joint: JointDesign) -> list[float]:
    """Unit screw twist, angular part first: revolute/continuous (a, o x a), prismatic (0, a),
    helical (a, o x a + pitch a)."""
    a, o = joint.axis, joint.point
    if joint.type == "prismatic":
        values = np.concatenate([np.zeros(3), a])
    else:
        values = np.concatenate([a, np.cross(o, a) + joint.pitch * a])
    return [round(float(v), 12) + 0.0 for v in values]


def truth_record(
    design: Design, format: str, entry: str, joint_names: dict[str, str], quirks: list[str]
) -> dict:
    """The sidecar of one object; `design` must already be in the file's root-link frame."""
    joints = []
    for joint in design.moving_joints:
        joints.append(
            {
                "name": joint_names[joint.name],
                "type": joint.type,
                "twist": twist(joint),
                "lower": joint.lower,
                "upper": joint.upper,
                "pitch": joint.pitch,
            }
        )
    return {
        "object": design.name,
        "format": format,
        "entry": entry,
        "category": design.category,
        "model_cat": design.model_cat if format == "partnet_mobility" else None,
        "quirks": sorted(quirks),
        "frame": "source",
        "joints": joints,
    }


def truth_json(record: dict) -> str:
    return json.dumps(record, indent=2, sort_keys=True) + "\n"
