"""Structural rules: what the joints of an object suggest about its category.

Each rule reads only the kinematic tree (joint types, parent/child links, world-frame axes at
rest, mimic couplings) and, where it helps, whether link names contain a part word such as
"wheel" or "drawer". Every rule that fires proposes one category with a score below the review
threshold, so an object categorized by structure alone is always listed for review. The rules
(documented in docs/taxonomy.md) assume the normalized z-up frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from normalize.model import ArticulatedObject, Joint
from taxonomy.data import words

ROTARY = ("revolute", "continuous")
PARALLEL = 0.98  # |cos| above which two axes count as parallel
VERTICAL = 0.9  # |z| above which an axis counts as vertical
WHEEL_WORDS = frozenset({"wheel", "wheels", "caster", "castor", "tire", "tyre"})
FURNITURE_PART_WORDS = frozenset({"drawer", "door", "shelf"})


@dataclass(frozen=True)
class StructureHint:
    category: str
    score: float
    text: str


@dataclass(frozen=True)
class _Tree:
    """The moving joints of an object grouped by the rigid body (set of links welded together
    by fixed joints) they hang from. Bodies are named by the moving joint that carries them;
    the root body is None."""

    moving: tuple[Joint, ...]
    body_of_parent: dict[str, str | None]  # moving joint -> body it hangs from
    axis: dict[str, np.ndarray]
    point: dict[str, np.ndarray]
    child_words: dict[str, frozenset[str]]
    by_name: dict[str, Joint]  # moving joint name -> joint
    on_body: dict[str | None, tuple[Joint, ...]]  # body -> moving joints hanging from it

    def children(self, body: str | None) -> tuple[Joint, ...]:
        return self.on_body.get(body, ())

    def chain_to(self, joint: Joint) -> list[Joint]:
        """The moving joints from the root down to `joint`, inclusive."""
        out = [joint]
        while (body := self.body_of_parent[out[-1].name]) is not None:
            out.append(self.by_name[body])
        return out[::-1]


def _tree(obj: ArticulatedObject) -> _Tree:
    moving = obj.moving_joints
    carrier: dict[str, str | None] = {obj.root: None}
    for joint in obj.joints_topological:
        carrier[joint.child] = joint.name if joint.moving else carrier[joint.parent]
    screws = obj.screws(moving)
    descendants: dict[str, set[str]] = {}
    for joint in obj.joints_topological:  # words of the links each moving joint carries
        body = carrier[joint.child]
        if body is not None:
            descendants.setdefault(body, set()).update(
                w for name in obj.link_map[joint.child].source_names for w in words(name)
            )
    on_body: dict[str | None, list[Joint]] = {}
    for joint in moving:
        on_body.setdefault(carrier[joint.parent], []).append(joint)
    return _Tree(
        moving=moving,
        body_of_parent={j.name: carrier[j.parent] for j in moving},
        axis={j.name: screws.axis[i] for i, j in enumerate(moving)},
        point={j.name: screws.point[i] for i, j in enumerate(moving)},
        child_words={j.name: frozenset(descendants.get(j.name, ())) for j in moving},
        by_name={j.name: j for j in moving},
        on_body={body: tuple(joints) for body, joints in on_body.items()},
    )


def _parallel(a: np.ndarray, b: np.ndarray) -> bool:
    return abs(float(np.dot(a, b))) > PARALLEL


def _share_parallel(tree: _Tree, joints: list[Joint]) -> float:
    """Fraction of `joints` whose axis is parallel to the most common axis direction."""
    if not joints:
        return 0.0
    axes = np.array([tree.axis[j.name] for j in joints])
    parallel = np.abs(axes @ axes.T) > PARALLEL
    return float(parallel.sum(axis=1).max()) / len(joints)


def structure_hints(obj: ArticulatedObject) -> list[StructureHint]:
    """Every structural rule that fires for `obj`, best score first."""
    tree = _tree(obj)
    moving = list(tree.moving)
    if not moving:
        return []
    hints = [
        *_keyboard(tree, moving),
        *_wheels(tree, moving),
        *_arm(tree, moving),
        *_legged(tree),
        *_gripper(tree, moving),
        *_furniture(tree, moving),
        *_small_mechanisms(obj, tree, moving),
        *_branching(tree, moving),
    ]
    return sorted(hints, key=lambda h: (-h.score, h.category))


def _keyboard(tree: _Tree, moving: list[Joint]) -> list[StructureHint]:
    keys = [j for j in moving if j.type == "prismatic"]
    if len(keys) < 20:
        return []
    bodies = [tree.body_of_parent[j.name] for j in keys]
    on_one_body = max(bodies.count(b) for b in set(bodies)) / len(keys)
    if on_one_body >= 0.8 and _share_parallel(tree, keys) >= 0.8:
        return [
            StructureHint(
                "keyboard",
                0.55,
                f"{len(keys)} prismatic joints with parallel axes on one body (keys)",
            )
        ]
    return []


def _wheels(tree: _Tree, moving: list[Joint]) -> list[StructureHint]:
    continuous = [j for j in moving if j.type == "continuous"]
    wheels = [j for j in continuous if tree.child_words[j.name] & WHEEL_WORDS]
    how = "named as wheels"
    if len(wheels) < 2:
        # Unnamed: three or more leaf continuous joints with parallel axes on one body.
        carried = {tree.body_of_parent[j.name] for j in moving}
        leaves = [j for j in continuous if j.name not in carried]
        by_body: dict[str | None, list[Joint]] = {}
        for j in leaves:
            by_body.setdefault(tree.body_of_parent[j.name], []).append(j)
        group = max(by_body.values(), key=len, default=[])
        if len(group) < 3 or _share_parallel(tree, group) < 1.0:
            return []
        wheels, how = group, "with parallel axes on one body"
    others = [j for j in moving if j not in wheels and not (tree.child_words[j.name] & WHEEL_WORDS)]
    text = f"{len(wheels)} continuous joints {how} (wheels)"
    if len(others) >= 4:
        return [StructureHint("mobile_manipulator", 0.45, f"{text} and {len(others)} more joints")]
    return [StructureHint("cart", 0.45, text)]


def _longest_rotary_chain(tree: _Tree, moving: list[Joint]) -> list[Joint]:
    best: list[Joint] = []
    for joint in moving:
        chain = [j for j in tree.chain_to(joint) if j.type in ROTARY]
        if len(chain) > len(best):
            best = chain
    return best


def _limbs(tree: _Tree) -> list[list[Joint]]:
    """Serial chains of two or more rotary joints starting at the body with most children."""
    bodies = {tree.body_of_parent[j.name] for j in tree.moving}
    hub = max(bodies, key=lambda b: (len(tree.children(b)), b is None))
    limbs = []
    for start in tree.children(hub):
        chain, current = [start], start
        while len(kids := tree.children(current.name)) == 1:
            current = kids[0]
            chain.append(current)
        if sum(j.type in ROTARY for j in chain) >= 2 and not tree.children(current.name):
            limbs.append(chain)
    return limbs


def _arm(tree: _Tree, moving: list[Joint]) -> list[StructureHint]:
    chain = _longest_rotary_chain(tree, moving)
    if len(chain) < 5 or len(_limbs(tree)) >= 3:
        return []
    end = tree.children(chain[-1].name)
    pair = len(end) == 2 and end[0].type == end[1].type and end[0].type in ("prismatic", "revolute")
    if pair:
        text = f"a serial chain of {len(chain)} rotary joints ending in a two-jaw pair (gripper)"
        return [StructureHint("robot_arm", 0.55, text)]
    return [StructureHint("robot_arm", 0.5, f"a serial chain of {len(chain)} rotary joints")]


def _legged(tree: _Tree) -> list[StructureHint]:
    limbs = _limbs(tree)
    category = {4: "quadruped", 6: "hexapod"}.get(len(limbs))
    if category is None:
        return []
    return [StructureHint(category, 0.45, f"{len(limbs)} legs of 2+ rotary joints on one body")]


def _gripper(tree: _Tree, moving: list[Joint]) -> list[StructureHint]:
    if len(moving) != 2:
        return []
    a, b = moving
    if a.type != b.type or tree.body_of_parent[a.name] != tree.body_of_parent[b.name]:
        return []
    coupled = (a.mimic is not None and a.mimic.joint == b.name) or (
        b.mimic is not None and b.mimic.joint == a.name
    )
    opposed = (
        a.type == "prismatic" and float(np.dot(tree.axis[a.name], tree.axis[b.name])) < -PARALLEL
    )
    if coupled or opposed:
        how = "coupled by a mimic" if coupled else "moving in opposite directions"
        return [StructureHint("gripper", 0.45, f"two {a.type} jaws on one body {how}")]
    return []


def _furniture(tree: _Tree, moving: list[Joint]) -> list[StructureHint]:
    if not 2 <= len(moving) < 20 or any(j.type not in ("prismatic", "revolute") for j in moving):
        return []
    on_base = sum(tree.body_of_parent[j.name] is None for j in moving)
    if on_base < 0.8 * len(moving):
        return []
    drawers = [j for j in moving if j.type == "prismatic"]
    doors = [j for j in moving if j.type == "revolute"]
    if not drawers and len(doors) < 2:
        return []
    named = set().union(*(tree.child_words[j.name] for j in moving)) & FURNITURE_PART_WORDS
    text = (
        f"{len(drawers)} sliding and {len(doors)} hinged parts, mostly on the base (drawers, doors)"
    )
    if named:
        text += f", parts named {', '.join(sorted(named))}"
    return [StructureHint("storage_furniture", 0.5 if named else 0.4, text)]


def _small_mechanisms(obj: ArticulatedObject, tree: _Tree, moving: list[Joint]) -> list:
    hints = []
    if len(moving) == 1:
        (joint,) = moving
        vertical = abs(float(tree.axis[joint.name][2])) > VERTICAL
        if joint.type == "prismatic":
            hints.append(StructureHint("prismatic_slider", 0.35, "a single prismatic joint"))
        elif joint.type in ROTARY and vertical:
            hints.append(
                StructureHint("yaw_axis_module", 0.35, "a single joint about z (vertical)")
            )
        elif joint.type in ROTARY:
            hints.append(StructureHint("revolute_hinge", 0.35, "a single horizontal hinge"))
    helical = [j for j in moving if j.type == "helical"]
    if helical and len(moving) <= 3:
        hints.append(StructureHint("screw_mechanism", 0.45, f"{len(helical)} helical joint(s)"))
    for joint in moving:
        if joint.mimic is None:
            continue
        target = obj.joint_map[joint.mimic.joint]
        if {joint.type, target.type} in ({"prismatic", "revolute"}, {"prismatic", "continuous"}):
            text = f"prismatic and rotary joints coupled by a mimic ({joint.name})"
            hints.append(StructureHint("rack_and_pinion", 0.45, text))
            break
    chain = max((tree.chain_to(j) for j in moving), key=len)
    if len(moving) == 2 and len(chain) == 2:
        first, second = chain
        if (
            first.type == "prismatic"
            and second.type in ROTARY
            and abs(float(np.dot(tree.axis[first.name], tree.axis[second.name]))) < 0.1
        ):
            text = "a rotary joint on a sliding body (pole on a cart)"
            hints.append(StructureHint("cartpole", 0.45, text))
    if len(moving) >= 2 and len(chain) == len(moving) and all(j.type in ROTARY for j in chain):
        axes = [tree.axis[j.name] for j in chain]
        p0 = tree.point[chain[0].name]
        collinear = all(
            _parallel(axes[0], a)
            and np.linalg.norm(np.cross(tree.point[j.name] - p0, axes[0])) < 1e-6
            for a, j in zip(axes, chain, strict=True)
        )
        if collinear:
            text = f"{len(chain)} rotary joints stacked on one axis"
            hints.append(StructureHint("coaxial_rotary_stack", 0.45, text))
        elif len(chain) < 5:  # longer ones are robot arms
            text = f"a serial chain of {len(chain)} rotary joints"
            hints.append(StructureHint("serial_chain", 0.3, text))
    return hints


def _branching(tree: _Tree, moving: list[Joint]) -> list[StructureHint]:
    bodies = {tree.body_of_parent[j.name] for j in moving}
    branch_points = [b for b in bodies if len(tree.children(b)) >= 2]
    depth = max(len(tree.chain_to(j)) for j in moving)
    if len(branch_points) >= 2 and depth >= 2:
        text = f"moving joints branch at {len(branch_points)} bodies, {depth} deep"
        return [StructureHint("branching_tree", 0.3, text)]
    return []
