"""Shared helpers of the scoring tests (tests/test_score_*.py): the objects they use from the
session's sample release (tests/conftest.py), and predictions written from perturbed ground
truth."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from normalize.model import ArticulatedObject, Joint, Link
from normalize.urdf import read_object
from normalize.urdf_writer import write_object

LAPTOP = "sample_urdf__laptop_0012__laptop_0012"
CABINET = "sample_urdf__cabinet_0010__cabinet_0010"
WINDOW = "sample_urdf__window_0018__window_0018"
FAUCET = "sample_urdf__faucet_0014__faucet_0014"
USED = (LAPTOP, CABINET, WINDOW, FAUCET)


def checked_release(release: Path) -> Path:
    """`release` (the session's `sample_release` fixture), after checking that it holds every
    object the scoring tests use."""
    missing = [o for o in USED if not (release / "objects" / o).is_dir()]
    assert not missing, f"the sample release rejected {missing}; see its rejects.parquet"
    return release


def ground_truth(release: Path, object_id: str) -> ArticulatedObject:
    return read_object(release / "objects" / object_id / "object.urdf")


def object_ids(release: Path) -> list[str]:
    return sorted(p.name for p in (release / "objects").iterdir() if p.is_dir())


def write_prediction(obj: ArticulatedObject, method_folder: Path, object_id: str) -> Path:
    """Write `obj` (kinematics and inertials, no geometry) as a prediction for `object_id`."""
    links = tuple(replace(link, visuals=(), collisions=()) for link in obj.links)
    return write_object(obj.replace(links=links), method_folder / object_id)


def with_joint(obj: ArticulatedObject, name: str, **changes) -> ArticulatedObject:
    """`obj` with joint `name` replaced by a copy carrying `changes`."""
    joints = tuple(replace(j, **changes) if j.name == name else j for j in obj.joints)
    return obj.replace(joints=joints)


def without_joint(obj: ArticulatedObject, name: str) -> ArticulatedObject:
    """`obj` without joint `name` and its child link (a leaf)."""
    joint = obj.joint_map[name]
    assert not any(j.parent == joint.child for j in obj.joints), "remove leaf joints only"
    return obj.replace(
        links=tuple(link for link in obj.links if link.name != joint.child),
        joints=tuple(j for j in obj.joints if j.name != name),
    )


def with_spurious_joint(obj: ArticulatedObject, parent: str, upper: float) -> ArticulatedObject:
    """`obj` with an extra link hanging off `parent` by a revolute joint of range [0, upper]
    about the z axis through (0.1, 0.2, 0.3) of the parent frame."""
    origin = np.eye(4)
    origin[:3, 3] = (0.1, 0.2, 0.3)
    joint = Joint(
        "spurious",
        "revolute",
        parent,
        "spurious_link",
        origin,
        np.array([0.0, 0.0, 1.0]),
        0.0,
        upper,
    )
    return obj.replace(links=(*obj.links, Link("spurious_link")), joints=(*obj.joints, joint))


# --------------------------------------------------------------------------- hand computation
def phi_endpoints(twist, lower: float, upper: float, alpha: float = 1.0, kappa: float = math.pi):
    """The two compactified endpoints of a joint under the split norm, written out directly:
    phi(z) = tanh(|z| / kappa) z / |z|, an infinite limit going to the unit boundary point."""
    twist = np.asarray(twist, dtype=float)
    weight = np.array([1.0, 1.0, 1.0, alpha, alpha, alpha])
    length = float(np.linalg.norm(twist * weight))
    out = []
    for limit in (lower, upper):
        if length == 0.0 or limit == 0.0:
            out.append(np.zeros(6))
        elif math.isinf(limit):
            out.append(math.copysign(1.0, limit) * twist / length)
        else:
            out.append(
                math.tanh(abs(limit) * length / kappa) * math.copysign(1.0, limit) * twist / length
            )
    return out, weight


def hand_e_phi(j1, j2, alpha: float = 1.0, kappa: float = math.pi) -> float:
    """E^phi between joints given as (twist, lower, upper), by the definition: the better of the
    direct and the swapped endpoint assignment."""
    (a1, b1), w = phi_endpoints(*j1, alpha, kappa)
    (a2, b2), _ = phi_endpoints(*j2, alpha, kappa)

    def sq(x):
        return float(np.sum((x * w) ** 2))

    return math.sqrt(min(sq(a1 - a2) + sq(b1 - b2), sq(a1 - b2) + sq(b1 - a2)))


def hand_to_fixed(j, alpha: float = 1.0, kappa: float = math.pi) -> float:
    """E^phi(J, J0): J against the fixed joint {0, 0}."""
    return hand_e_phi(j, (np.zeros(6), 0.0, 0.0), alpha, kappa)


def joint_of(obj: ArticulatedObject, name: str):
    """(world twist, lower, upper) of a joint."""
    screws = obj.screws()
    i = screws.names.index(name)
    return screws.twist[i], float(screws.lower[i]), float(screws.upper[i])
