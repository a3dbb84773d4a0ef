"""MJCF (MuJoCo XML) adapter: compiled by MuJoCo itself, then read from the compiled model.

Before MuJoCo sees a file, `scan_mjcf` parses it and every file it includes with the hardened
parser and checks that every file they reference (includes, meshes, textures, height fields,
skins, models; honouring compiler meshdir/texturedir/assetdir) stays inside the source root.
MuJoCo then compiles the model, so includes, defaults, eulerseq, angle units and `<compiler>`
settings behave exactly as in MuJoCo. The mapping to the canonical model is in docs/formats.md.

Modules: `discovery`, `scan` (the safety scan), `compile` (MuJoCo, names), `build` (the
conversion's accumulator), `geometry`, `joints`, `couplings` (equalities as mimics), and
`reader` (the compiled model as the object, and the registered adapter).
"""

from __future__ import annotations

from normalize.adapters.mjcf.compile import compile_mjcf, mujoco_names
from normalize.adapters.mjcf.discovery import discover_xml_entries
from normalize.adapters.mjcf.geometry import VISIBLE_GROUPS
from normalize.adapters.mjcf.reader import DEFAULT_ENTRY, MjcfAdapter, model_to_object
from normalize.adapters.mjcf.scan import MjcfScan, scan_mjcf

__all__ = [
    "DEFAULT_ENTRY",
    "VISIBLE_GROUPS",
    "MjcfAdapter",
    "MjcfScan",
    "compile_mjcf",
    "discover_xml_entries",
    "model_to_object",
    "mujoco_names",
    "scan_mjcf",
]
