"""The compiled model as the canonical object (`model_to_object`), and the registered adapter:
scan, compile, convert."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normalize.adapters.mjcf.build import _Build, _pose, _translation
from normalize.adapters.mjcf.compile import _axis_changes, compile_mjcf, mujoco_names
from normalize.adapters.mjcf.couplings import _couplings
from normalize.adapters.mjcf.discovery import _mjcf_includes, discover_xml_entries
from normalize.adapters.mjcf.geometry import _geometries, _inertial
from normalize.adapters.mjcf.joints import _body_joints, _free_bodies
from normalize.adapters.mjcf.scan import scan_mjcf
from normalize.adapters.registry import register
from normalize.changes import Change
from normalize.discovery import Candidate
from normalize.errors import AssetError
from normalize.limits import check_count
from normalize.model import ArticulatedObject, Joint, Link, SourceInfo
from normalize.paths import confine, is_inside
from normalize.sources import SourceConfig

DEFAULT_ENTRY = "**/*.xml"


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


@register
class MjcfAdapter:
    format = "mjcf"

    def discover(self, source: SourceConfig) -> list[Candidate]:
        return discover_xml_entries(source, DEFAULT_ENTRY, lambda p: _mjcf_includes(p, source))

    def problems(self, candidate: Candidate) -> list[AssetError]:
        """The scan's problems (`scan_mjcf`'s `problems`: references to missing files or
        leaving the root, sizes, magnitudes, each with its file and line, included files
        too); a file that cannot be scanned at all is its one problem."""
        source = candidate.source
        problems: list[AssetError] = []
        try:
            scan_mjcf(
                candidate.path, source.path, max_bytes=source.max_file_bytes, problems=problems
            )
        except AssetError as exc:
            problems.append(exc)
        return problems

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
