"""Reading models: the links, joints and frames of a file's first `<model>`, with nested and
`<include>`d models flattened into one pose graph under `::`-scoped names."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from normalize.adapters.sdf.elements import _child, _children, _scoped, _text
from normalize.adapters.sdf.frames import MODEL_FRAME, _Frame, joint_key
from normalize.adapters.sdf.includes import include_target
from normalize.changes import Change
from normalize.errors import DuplicateNameError
from normalize.limits import MAX_INCLUDES, check_count
from normalize.safe_xml import parse_xml
from normalize.transforms import invert

VERSIONS = ("1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11")


@dataclass
class _JointSpec:
    """parent, child: the links the joint connects (the frames named in the file resolved to
    the links they are attached to); frame: the joint frame's key in the pose graph."""

    name: str
    node: object
    scope: str
    file: Path
    version: tuple[int, int]
    parent: str
    child: str
    frame: str


@dataclass
class _LinkSpec:
    name: str
    node: object
    scope: str
    file: Path


@dataclass
class _Model:
    """frames: the pose graph; attached: frame -> the frame it is attached to (joints: their
    child; `<frame>`s: attached_to, else their model frame; model frames: the canonical link,
    else the first nested model's frame); links are attached to themselves."""

    frames: dict[str, _Frame] = field(default_factory=dict)
    links: list[_LinkSpec] = field(default_factory=list)
    joints: list[_JointSpec] = field(default_factory=list)
    attached: dict[str, str] = field(default_factory=dict)


class _Models:
    """The reader's model reading (a base of `_SdfReader`)."""

    def add_frame(self, name, pose, relative_to, element, path):
        if name in self.model.frames:
            raise DuplicateNameError(
                f"name {name!r} is used twice in one model", element=element, path=str(path)
            )
        self.model.frames[name] = _Frame(pose, relative_to)

    def read_model(self, node, scope: str, file: Path, version, stack: tuple[Path, ...]):
        """Collect the links, joints and frames of a (possibly nested) model."""
        model_frame = _scoped(scope, MODEL_FRAME) if scope else ""
        if node.get("placement_frame") or _child(node, "placement_frame") is not None:
            raise self.error(
                "placement_frame is not supported", "sdf.unsupported", f"model {scope}", file
            )
        # Names first, so that poses may refer to frames declared later in the file.
        pending = []
        first_link = first_model = None
        for child in node:
            tag, name = child.tag, child.get("name")
            if tag in ("link", "joint", "frame") and not name:
                raise self.error(f"<{tag}> without a name", "sdf.missing", f"<{tag}>", file)
            if tag == "link":
                self.model.links.append(_LinkSpec(_scoped(scope, name), child, scope, file))
                check_count("links", len(self.model.links), self.source.max_links, file)
                pending.append((tag, name, child))
                first_link = first_link or _scoped(scope, name)
            elif tag in ("frame", "joint", "model", "include"):
                pending.append((tag, name, child))
        for tag, name, child in pending:
            if tag in ("link", "frame"):
                default = model_frame
                if tag == "frame" and child.get("attached_to"):
                    default = None
                self.add_frame(_scoped(scope, name), np.eye(4), default, f"{tag} {name}", file)
                if tag == "frame":
                    self.model.attached[_scoped(scope, name)] = model_frame
            elif tag == "joint":
                key = joint_key(_scoped(scope, name), version)
                self.add_frame(key, np.eye(4), None, f"joint {name}", file)
        for tag, name, child in pending:
            if tag == "model":
                inner = self.nested(child, scope, name, file, version, stack, model_frame)
            elif tag == "include":
                inner = self.include(child, scope, file, stack, model_frame)
            else:
                continue
            first_model = first_model or _scoped(inner, MODEL_FRAME)
        # The model frame is attached to its canonical link: the one named, else the first
        # link, else the first nested model's frame (for joints and frames that name a model).
        canonical = first_link or first_model
        if node.get("canonical_link"):
            where = f"model {scope or '(top)'}"
            canonical = self.frame_name(scope, node.get("canonical_link"), where, file)
        if canonical:
            self.model.attached[model_frame] = canonical
        for tag, name, child in pending:
            if tag not in ("link", "frame", "joint"):
                continue
            scoped = _scoped(scope, name)
            element = f"{tag} {scoped}"
            pose, relative_to = self.pose(child, element, file)
            key = joint_key(scoped, version) if tag == "joint" else scoped
            frame = self.model.frames[key]
            frame.pose = pose
            if tag == "joint":
                ends = []
                for role in ("parent", "child"):
                    text = _text(child, role)
                    if text is None:
                        raise self.error(f"joint has no <{role}>", "sdf.missing", element, file)
                    ends.append(self.frame_name(scope, text, element, file))
                spec = _JointSpec(scoped, child, scope, file, version, *ends, frame=key)
                self.model.joints.append(spec)
                check_count("joints", len(self.model.joints), self.source.max_links, file)
                frame.relative_to = ends[1]  # SDFormat: a joint's pose is in its child's frame
                self.model.attached[key] = ends[1]
            elif tag == "frame" and child.get("attached_to"):
                target = self.frame_name(scope, child.get("attached_to"), element, file)
                frame.relative_to = self.model.attached[scoped] = target
            if relative_to:
                frame.relative_to = self.frame_name(scope, relative_to, element, file)

    def nested(self, node, scope, name, file, version, stack, model_frame):
        if not name:
            raise self.error("nested <model> without a name", "sdf.missing", "<model>", file)
        inner = _scoped(scope, name)
        pose, relative_to = self.pose(node, f"model {inner}", file)
        target = model_frame
        if relative_to:
            target = self.frame_name(scope, relative_to, f"model {inner}", file)
        self.add_frame(_scoped(inner, MODEL_FRAME), pose, target, f"model {inner}", file)
        self.read_model(node, inner, file, version, stack)
        return inner

    def include(self, node, scope, file, stack, model_frame):
        uri = _text(node, "uri")
        if uri is None:
            raise self.error("<include> without <uri>", "sdf.missing", "<include>", file)
        self.includes += 1
        check_count("<include> elements", self.includes, MAX_INCLUDES, file)
        target = include_target(uri, file, self.source)
        real = Path(os.path.realpath(target))
        if real in stack:
            raise self.error(
                "include cycle: " + " -> ".join(p.name for p in (*stack, real)),
                "sdf.include_cycle",
                f"include {uri}",
                file,
            )
        included, version = self.first_model(target)
        name = _text(node, "name") or included.get("name")
        if not name:
            raise self.error("included model has no name", "sdf.missing", f"include {uri}", file)
        inner = _scoped(scope, name)
        pose, relative_to = self.pose(node, f"include {uri}", file)
        if _child(node, "pose") is None:
            pose, relative_to = self.pose(included, f"model {inner}", target)
        where = model_frame
        if relative_to:
            where = self.frame_name(scope, relative_to, f"include {uri}", file)
        self.add_frame(_scoped(inner, MODEL_FRAME), pose, where, f"model {inner}", file)
        self.read_model(included, inner, target, version, (*stack, real))
        return inner

    def first_model(self, path: Path):
        """(first <model> element, version) of an SDFormat file."""
        xml = parse_xml(path, self.source.max_file_bytes, self.changes)
        if xml.tag != "sdf":
            raise self.error(f"root element is <{xml.tag}>, not <sdf>", "sdf.not_sdf", path=path)
        version = xml.get("version", "").strip()
        if version not in VERSIONS:
            raise self.error(
                f"SDFormat version {version or '(missing)'!r} is not supported "
                f"({', '.join(VERSIONS)})",
                "sdf.version",
                "sdf",
                path,
            )
        models = _children(xml, "model")
        for world in _children(xml, "world"):
            models += _children(world, "model")
        if not models:
            raise self.error("the file holds no <model>", "sdf.no_model", "sdf", path)
        if len(models) > 1:
            self.changes.append(
                Change(
                    "sdf.models_ignored",
                    f"{len(models)} models in {path.name}; only the first, "
                    f"{models[0].get('name')!r}, is read",
                    element=f"model {models[0].get('name')}",
                )
            )
        major, minor = (int(v) for v in version.split("."))
        return models[0], (major, minor)

    def read_entities(self):
        """(model name, its joints) after reading every link, joint and frame name and pose."""
        node, version = self.first_model(self.entry)
        name = node.get("name") or self.entry.stem
        model_pose, _ = self.pose(node, f"model {name}", self.entry)
        # The world frame, seen from the model frame (used by joints to "world").
        self.resolved["world"] = invert(model_pose)
        self.read_model(node, "", self.entry, version, (Path(os.path.realpath(self.entry)),))
        links = {link.name for link in self.model.links}
        for spec in self.model.joints:
            element = f"joint {spec.name}"
            spec.parent = self.attached_link(spec.parent, links, element, spec.file)
            spec.child = self.attached_link(spec.child, links, element, spec.file)
        return name, self.model.joints
