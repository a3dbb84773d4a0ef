"""SDFormat adapter (format `sdf`, versions 1.4 to 1.11).

Reads the first `<model>` of an entry file (directly under `<sdf>` or inside a `<world>`),
with nested and `<include>`d models flattened into one tree under `::`-scoped names. Files are
parsed with the hardened parser; every file reference stays inside the source root. The mapping
(poses, axes, limits, screw pitch, multi-DOF joints, loops) is documented in docs/formats.md.

Modules: `elements` (element text, numbers), `frames` (the pose graph), `includes` (file
references), `models` (reading models), `geometry` (shapes, inertials), `joints`, and `reader`
(the reader assembled from these parts, and the registered adapter).
"""

from __future__ import annotations

from normalize.adapters.sdf.frames import MODEL_FRAME, joint_key
from normalize.adapters.sdf.includes import include_target, model_uri_target
from normalize.adapters.sdf.joints import PITCH_AGREEMENT, UNBOUNDED, check_tree
from normalize.adapters.sdf.models import VERSIONS
from normalize.adapters.sdf.reader import DEFAULT_ENTRY, SdfAdapter, read_joints

__all__ = [
    "DEFAULT_ENTRY",
    "MODEL_FRAME",
    "PITCH_AGREEMENT",
    "UNBOUNDED",
    "VERSIONS",
    "SdfAdapter",
    "check_tree",
    "include_target",
    "joint_key",
    "model_uri_target",
    "read_joints",
]
