"""Multi-DOF joints as exact chains of one-DOF joints through massless links.

Every decomposition here reproduces exactly the set of relative poses the source joint allows
(and the same motion for the same coordinates, in the order documented below):

- ``ball`` / ``spherical``: rotation about x, then about the (rotated) y, then about the (twice
  rotated) z of the joint frame, i.e. intrinsic x-y-z Euler angles R = Rx(q0) Ry(q1) Rz(q2),
  which reach every rotation. A ball joint's own limit (a cone or swing/twist bound on the whole
  rotation) has no exact per-angle equivalent, so a bounded ball joint is refused.
- ``universal`` / ``revolute2``: a revolute about the first axis (fixed in the parent) followed by
  a revolute about the second axis (fixed in the child), both given in the joint frame. Universal
  defaults to the joint frame's x then y axes (Drake's convention). Parallel axes are refused
  (that is one degree of freedom, not two).
- ``planar``: translation along u, then along v, then rotation about the plane normal n, where
  n is given in the joint frame (default z) and (u, v, n) is right-handed: u is the coordinate
  axis least aligned with n, made orthogonal to n; v = n x u. For n = z this is x, y, z (Drake).
- ``floating`` / ``free``: translation along x, y, z, then the ball decomposition. Only unbounded.

Unbounded rotations become ``continuous`` joints, bounded ones ``revolute``; translations become
``prismatic`` joints, bounded or with limits (-inf, inf). The original joint origin goes on the
first joint of the chain; the others sit at the identity, so the chain's child link frame equals
the source joint's child frame at zero coordinates. Names: joints ``<name>__dof<i>``, the
intermediate links ``<name>__link<i>`` (child of ``<name>__dof<i>``), i from 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from normalize.changes import Change
from normalize.errors import AssetError, ZeroAxisError
from normalize.model import Joint, Link, direction

PARALLEL_TOLERANCE = 1e-9
_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
_ALIASES = {"spherical": "ball", "free": "floating"}
KINDS = ("ball", "spherical", "universal", "revolute2", "planar", "floating", "free")


def _unsupported(name: str, why: str) -> AssetError:
    return AssetError(
        f"joint {name}: {why}", code="joint.unsupported", stage="model", element=f"joint {name}"
    )


def _unit(vector, name: str) -> np.ndarray:
    v = np.asarray(vector, dtype=float)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise _unsupported(name, f"axis {np.asarray(vector).tolist()} is not three finite numbers")
    found = direction(v)
    if found is None:
        raise ZeroAxisError("joint axis is the zero vector", element=f"joint {name}")
    return found[0]


def _plane_basis(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) spanning the plane orthogonal to the unit `normal`, with (u, v, normal)
    right-handed; u comes from the coordinate axis least aligned with the normal."""
    e = np.eye(3)[int(np.argmin(np.abs(normal)))]
    u = e - (e @ normal) * normal
    u = u / np.linalg.norm(u)
    return u, np.cross(normal, u)


def _bounds(limit, name: str, dof: int) -> tuple[float, float] | None:
    """(lower, upper) when bounded both ways, None when unbounded; refuses half bounds."""
    if limit is None:
        return None
    lower, upper = (-math.inf if v is None else float(v) for v in limit)
    lower_ok, upper_ok = math.isfinite(lower), math.isfinite(upper)
    if not lower_ok and not upper_ok:
        return None
    if lower_ok != upper_ok:
        raise _unsupported(name, f"degree of freedom {dof} is bounded on one side only")
    if lower > upper:
        raise _unsupported(name, f"degree of freedom {dof} has lower {lower:g} > upper {upper:g}")
    return lower, upper


def _dofs(kind: str, name: str, axes: Sequence) -> list[tuple[str, np.ndarray]]:
    """The chain as (motion, unit axis in the joint frame) pairs, motion 'rotate' or 'slide'."""
    if kind in ("ball", "floating"):
        if axes:
            raise ValueError(f"a {kind} joint takes no axes (it uses the joint frame's x, y, z)")
        rotations = [("rotate", np.array(a)) for a in (_X, _Y, _Z)]
        if kind == "ball":
            return rotations
        return [("slide", np.array(a)) for a in (_X, _Y, _Z)] + rotations
    if kind in ("universal", "revolute2"):
        if not axes and kind == "universal":
            axes = (_X, _Y)
        if len(axes) != 2:
            raise _unsupported(name, f"a {kind} joint needs two axes, got {len(axes)}")
        first, second = (_unit(a, name) for a in axes)
        if np.linalg.norm(np.cross(first, second)) <= PARALLEL_TOLERANCE:
            raise _unsupported(
                name, f"the two axes of this {kind} joint are parallel (one degree of freedom)"
            )
        return [("rotate", first), ("rotate", second)]
    if kind == "planar":
        if len(axes) > 1:
            raise _unsupported(name, "a planar joint takes one axis (the plane normal)")
        normal = _unit(axes[0] if axes else _Z, name)
        u, v = _plane_basis(normal)
        return [("slide", u), ("slide", v), ("rotate", normal)]
    raise _unsupported(name, f"unknown multi-DOF joint kind {kind!r} (known: {', '.join(KINDS)})")


def decompose_joint(
    kind: str,
    *,
    name: str,
    parent: str,
    child: str,
    origin,
    axes: Sequence = (),
    limits: Sequence = (),
) -> tuple[list[Link], list[Joint], Change]:
    """Decompose a multi-DOF joint into one-DOF joints (see the module docstring).

    kind: ball/spherical, universal, revolute2, planar, floating/free.
    origin: 4x4 pose of the joint frame in the parent link frame.
    axes: axes in the joint frame where the kind takes them (universal/revolute2: two; planar:
        the normal).
    limits: empty (all unbounded) or one (lower, upper) per degree of freedom in chain order,
        None or infinite values meaning unbounded.
    Returns (intermediate massless links, joints parent -> ... -> child, Change
    ``joint.decomposed``). Raises AssetError ``joint.unsupported`` when no exact chain exists.
    """
    canonical = _ALIASES.get(kind, kind)
    dofs = _dofs(canonical, name, axes)
    if limits and len(limits) != len(dofs):
        raise _unsupported(
            name, f"{len(limits)} limits given for a {kind} joint with {len(dofs)} DOFs"
        )
    bounds = [_bounds(limit, name, i) for i, limit in enumerate(limits)] or [None] * len(dofs)
    if canonical in ("ball", "floating") and any(
        b is not None for (motion, _), b in zip(dofs, bounds, strict=True) if motion == "rotate"
    ):
        raise _unsupported(
            name,
            f"a bounded {kind} joint limits its rotation as a whole (cone or swing/twist), "
            "which has no exact equivalent as limits on three Euler angles",
        )
    links = [Link(f"{name}__link{i}") for i in range(len(dofs) - 1)]
    chain = [parent, *(link.name for link in links), child]
    joints = []
    for i, ((motion, axis), bound) in enumerate(zip(dofs, bounds, strict=True)):
        if motion == "rotate":
            kind_i = "continuous" if bound is None else "revolute"
        else:
            kind_i = "prismatic"
        lower, upper = bound if bound is not None else (-math.inf, math.inf)
        joints.append(
            Joint(
                f"{name}__dof{i}",
                kind_i,
                chain[i],
                chain[i + 1],
                origin=origin if i == 0 else np.eye(4),
                axis=axis,
                lower=lower,
                upper=upper,
                source_name=name,
            )
        )
    described = ", ".join(
        f"{j.name} ({j.type} about {np.round(j.axis, 12).tolist()})" for j in joints
    )
    change = Change(
        "joint.decomposed",
        f"{kind} joint {name} decomposed into {len(joints)} one-DOF joints through "
        f"{len(links)} massless links, in this order: {described}",
        element=f"joint {name}",
    )
    return links, joints, change
