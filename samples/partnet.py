"""PartNet-Mobility object folders: mobility.urdf, meta.json, semantics.txt, textured_objs/."""

from __future__ import annotations

import json

from samples.design import Design
from samples.urdf import partnet_model_id, write_urdf
from samples.written import Quirks, Written

# PartNet's joint kinds in semantics.txt, by the type of the link's parent joint.
SEMANTIC_KIND = {
    "revolute": "hinge",
    "continuous": "hinge",
    "prismatic": "slider",
    "helical": "slider+",
    "fixed": "static",
}


def semantics(design: Design) -> str:
    """One line `link_N <joint kind> <label>` per link; the root is `free`."""
    lines = []
    for i, link in enumerate(design.links):
        joint = design.parent_joint(link.name)
        kind = "free" if joint is None else SEMANTIC_KIND[joint.type]
        lines.append(f"link_{i} {kind} {link.label}")
    return "\n".join(lines) + "\n"


def meta(design: Design, anno_id: int) -> str:
    record = {
        "anno_id": str(anno_id),
        "model_cat": design.model_cat,
        "model_id": partnet_model_id(design.name),
        "time_in_sec": "0",
        "user_id": "arena_generate",
        "version": "1",
    }
    return json.dumps(record, sort_keys=True) + "\n"


def write_partnet(design: Design, quirks: Quirks, anno_id: int) -> Written:
    """One object as a PartNet-Mobility folder."""
    written = write_urdf(design, quirks, partnet=True)
    written.files["meta.json"] = meta(design, anno_id)
    written.files["semantics.txt"] = semantics(design)
    return written
