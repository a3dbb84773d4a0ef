"""The SDFormat reader assembled from its parts, `read_joints`, and the registered adapter."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normalize.adapters.mjcf.discovery import discover_xml_entries
from normalize.adapters.registry import register
from normalize.adapters.sdf.elements import _Values
from normalize.adapters.sdf.frames import _Poses
from normalize.adapters.sdf.geometry import _Links
from normalize.adapters.sdf.includes import _sdf_includes
from normalize.adapters.sdf.joints import _Joints, check_tree
from normalize.adapters.sdf.models import _Model, _Models
from normalize.changes import Change
from normalize.discovery import Candidate
from normalize.errors import AssetError
from normalize.model import ArticulatedObject, Joint, Link, SourceInfo
from normalize.paths import confine
from normalize.sources import SourceConfig
from normalize.transforms import invert

DEFAULT_ENTRY = "**/*.sdf"


class _SdfReader(_Values, _Poses, _Models, _Links, _Joints):
    def __init__(self, candidate: Candidate, changes: list[Change]):
        self.source = candidate.source
        self.root = candidate.source.path
        self.entry = candidate.path
        self.source_id = candidate.source_id
        self.changes = changes
        self.model = _Model()
        self.resolved: dict[str, np.ndarray] = {"": np.eye(4)}
        self.dropped: list[dict] = []  # see normalize.changes.shape_dropped
        self.includes = 0  # <include> elements expanded so far (bounded: MAX_INCLUDES)

    def each_joint(self) -> dict[str, list[Joint] | AssetError]:
        """Every joint converted on its own, in the frame of its parent link's SDF frame."""
        _, specs = self.read_entities()
        out: dict[str, list[Joint] | AssetError] = {}
        for spec in specs:
            origin = invert(self.world_pose(spec.parent)) @ self.world_pose(spec.frame)
            try:
                out[spec.name] = self.joint(spec, origin)[1]
            except AssetError as exc:
                out[spec.name] = exc
        return out

    def each_problem(self) -> list[AssetError]:
        """Every independent problem: each link and each joint read on its own (in the model's
        frame, which no problem depends on), and the tree; each problem of a link or joint has
        the file and line of its element. A model whose entities cannot be read is that one
        problem."""
        try:
            _, specs = self.read_entities()
        except AssetError as exc:
            return [exc]
        found: list[AssetError] = []
        self.problems = found  # a link's shapes each on their own
        for spec in self.model.links:
            _collect(found, spec, self.link, spec, np.eye(4))
        for spec in specs:
            _collect(found, spec, self.joint, spec, np.eye(4))
        _collect(found, None, check_tree, specs, self.entry)
        return found

    def read(self) -> ArticulatedObject:
        name, specs = self.read_entities()
        check_tree(specs, self.entry)
        uses_world = any(s.parent == "world" for s in specs)
        frames = {}  # link name -> our link frame in model coordinates
        for spec in specs:
            frames[spec.child] = self.world_pose(spec.frame)
        for link in self.model.links:
            # The root link's frame is the model frame: the model's axes (z up) stay the
            # world's even when the root link's <pose> is rotated.
            frames.setdefault(link.name, np.eye(4))
        links = [Link("world")] if uses_world else []
        if uses_world:
            frames["world"] = self.resolved["world"]
        links += [self.link(spec, frames[spec.name]) for spec in self.model.links]
        joints: dict[str, Joint] = {}
        mimics = []
        for spec in specs:
            origin = invert(frames[spec.parent]) @ self.world_pose(spec.frame)
            extra, new, mimic = self.joint(spec, origin)
            links += extra
            joints.update((j.name, j) for j in new)
            if mimic is not None:
                mimics.append((mimic, spec))
        for mimic, spec in mimics:
            self.mimic(mimic, joints[spec.name], joints, spec.scope, spec.file)
        source_frames = {
            link.name: invert(frames[link.name]) @ self.world_pose(link.name)
            for link in self.model.links
        }
        info = SourceInfo(
            library=self.source.name,
            labels={"robot_name": name},
            changes=tuple(self.changes),
            extra={
                "source_frames": source_frames,
                "dropped_shapes": tuple(self.dropped),
            },
        )
        return ArticulatedObject(name, links, list(joints.values()), info)


def _collect(found: list[AssetError], spec, read, *args) -> None:
    """`read(*args)`; its AssetError, given the file and line of `spec`'s element, is added to
    `found`."""
    try:
        read(*args)
    except AssetError as exc:
        if spec is not None:
            exc.path = exc.path or str(spec.file)
            exc.line = exc.line or spec.node.sourceline
        found.append(exc)


def read_joints(candidate: Candidate) -> tuple[dict[str, list[Joint] | AssetError], list[Change]]:
    """Each joint of a candidate's model converted on its own (no tree or loop check), or the
    AssetError refusing it, and the changes recorded: what a rejected model's joints would have
    been."""
    changes: list[Change] = []
    return _SdfReader(candidate, changes).each_joint(), changes


@register
class SdfAdapter:
    format = "sdf"

    def discover(self, source: SourceConfig) -> list[Candidate]:
        return discover_xml_entries(source, DEFAULT_ENTRY, lambda p: _sdf_includes(p, source))

    def problems(self, candidate: Candidate) -> list[AssetError]:
        found = _SdfReader(candidate, []).each_problem()
        for problem in found:
            problem.path = problem.path or str(candidate.path)
        return found

    def load(self, candidate: Candidate) -> ArticulatedObject:
        source = candidate.source
        confine(candidate.path, source.path)
        changes: list[Change] = []
        try:
            obj = _SdfReader(candidate, changes).read()
        except AssetError as exc:
            exc.path = exc.path or str(candidate.path)
            raise
        info = SourceInfo(
            library=source.name,
            source_id=candidate.source_id,
            source_path=candidate.source_path,
            license=source.license,
            labels={
                "robot_name": obj.source.labels["robot_name"],
                "folder": Path(candidate.source_path).parent.as_posix(),
            },
            changes=obj.source.changes,
            extra=dict(obj.source.extra),
        )
        return obj.replace(source=info)
