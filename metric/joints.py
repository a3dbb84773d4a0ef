"""Batches of one-DOF joints: screw twist (angular part first) and limit interval.

A joint J = (xi, [lower, upper]) is represented by its unordered endpoint pair
{lower * xi, upper * xi}. Limits may be infinite for unbounded joints (continuous joints have
both ends infinite; one infinite end is allowed too). Fixed joints have a zero twist and limits
[0, 0]. Everything is validated once per batch; nothing here loops over joints in Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Joint type names and their integer codes (`screw_twists` accepts either).
TYPE_CODES = {"fixed": 0, "revolute": 1, "prismatic": 2, "continuous": 3, "helical": 4}
TYPE_NAMES = tuple(TYPE_CODES)


def _first_indices(mask: np.ndarray, limit: int = 5) -> list[int]:
    return [int(i) for i in np.flatnonzero(mask)[:limit]]


@dataclass(frozen=True, eq=False)
class Joints:
    """N one-DOF joints: `twist` (N, 6) with the angular part first, `lower` and `upper` (N,).

    A single joint may be given as a (6,) twist with scalar limits. Raises ValueError on a wrong
    shape, NaN or infinite twists, NaN limits, lower > upper, a lower limit of +inf or an upper
    limit of -inf, and on a zero twist with an infinite limit.
    """

    twist: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self):
        twist = np.array(self.twist, dtype=float, ndmin=2)
        lower = np.array(self.lower, dtype=float, ndmin=1)
        upper = np.array(self.upper, dtype=float, ndmin=1)
        if twist.ndim != 2 or twist.shape[1] != 6:
            raise ValueError(f"twist must have shape (N, 6), got {np.shape(self.twist)}")
        n = twist.shape[0]
        for name, limit in (("lower", lower), ("upper", upper)):
            if limit.shape != (n,):
                raise ValueError(f"{name} must have shape ({n},) to match twist, got {limit.shape}")
            bad = np.isnan(limit)
            if bad.any():
                raise ValueError(f"{name} limit is NaN for joints {_first_indices(bad)}")
        if not np.isfinite(twist).all():  # whole-array checks first: row reductions are slow
            bad = ~np.isfinite(twist).all(axis=1)
            raise ValueError(
                f"twist contains NaN or infinite values for {int(bad.sum())} joints "
                f"(first: {_first_indices(bad)})"
            )
        bad = lower > upper
        if bad.any():
            raise ValueError(
                f"lower limit exceeds upper limit for {int(bad.sum())} joints "
                f"(first: {_first_indices(bad)})"
            )
        bad = (lower == np.inf) | (upper == -np.inf)
        if bad.any():
            raise ValueError(
                f"lower limit +inf or upper limit -inf for joints {_first_indices(bad)}"
            )
        unbounded = np.flatnonzero(~(np.isfinite(lower) & np.isfinite(upper)))
        zero = unbounded[~twist[unbounded].any(axis=1)]
        if len(zero):
            raise ValueError(
                f"zero twist with an infinite limit for joints {zero[:5].tolist()} "
                "(a fixed joint has limits [0, 0])"
            )
        for arr in (twist, lower, upper):
            arr.setflags(write=False)
        object.__setattr__(self, "twist", twist)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @classmethod
    def _trusted(cls, twist: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> Joints:
        """A batch built from arrays that are already valid (slices of a validated batch)."""
        out = object.__new__(cls)
        object.__setattr__(out, "twist", twist)
        object.__setattr__(out, "lower", lower)
        object.__setattr__(out, "upper", upper)
        return out

    def __len__(self) -> int:
        return self.twist.shape[0]

    def __getitem__(self, index) -> Joints:
        """The joints selected by an integer array, boolean mask or slice (always a batch)."""
        if isinstance(index, (int, np.integer)):
            index = [index]
        return Joints._trusted(self.twist[index], self.lower[index], self.upper[index])

    @property
    def bounded(self) -> np.ndarray:
        """(N,) True where both limits are finite."""
        return np.isfinite(self.lower) & np.isfinite(self.upper)

    @property
    def fixed(self) -> np.ndarray:
        """(N,) True where the joint carries no motion at all: E(J, J0) == 0 exactly, i.e. a zero
        twist or both limits zero."""
        return ~self.twist.any(axis=1) | ((self.lower == 0.0) & (self.upper == 0.0))

    def inverse(self) -> Joints:
        """The same joints seen from the child: the parent moves relative to the child by
        exp(-q xi), so the twist is negated and the limits kept (endpoint pair {-l- xi, -l+ xi})."""
        twist = -self.twist
        twist.setflags(write=False)
        return Joints._trusted(twist, self.lower, self.upper)

    @staticmethod
    def concatenate(batches) -> Joints:
        """One batch holding the joints of several batches in order."""
        batches = list(batches)
        if not batches:
            return Joints(np.zeros((0, 6)), np.zeros(0), np.zeros(0))
        return Joints._trusted(
            np.concatenate([b.twist for b in batches]),
            np.concatenate([b.lower for b in batches]),
            np.concatenate([b.upper for b in batches]),
        )

    @classmethod
    def from_parameters(cls, types, axis, point, lower, upper, pitch=0.0) -> Joints:
        """Joints from URDF-style parameters in one frame (see `screw_twists`).

        Fixed joints get limits [0, 0] and continuous joints (-inf, inf) whatever `lower` and
        `upper` hold for them; other joints keep their limits.
        """
        codes = type_codes(types)
        twist = screw_twists(codes, axis, point, pitch)
        lower = np.array(np.broadcast_to(np.asarray(lower, dtype=float), codes.shape))
        upper = np.array(np.broadcast_to(np.asarray(upper, dtype=float), codes.shape))
        fixed = codes == TYPE_CODES["fixed"]
        lower[fixed] = upper[fixed] = 0.0
        continuous = codes == TYPE_CODES["continuous"]
        lower[continuous], upper[continuous] = -np.inf, np.inf
        return cls(twist, lower, upper)


def type_codes(types) -> np.ndarray:
    """(N,) integer codes (see TYPE_CODES) from joint type names or codes."""
    arr = np.atleast_1d(np.asarray(types))
    if arr.dtype.kind in "iu":
        codes = arr.astype(np.int64)
        bad = (codes < 0) | (codes >= len(TYPE_NAMES))
        if bad.any():
            raise ValueError(f"unknown joint type codes {np.unique(codes[bad]).tolist()}")
        return codes
    unique, inverse = np.unique(arr.astype(str), return_inverse=True)
    unknown = [name for name in unique.tolist() if name not in TYPE_CODES]
    if unknown:
        raise ValueError(f"unknown joint types {unknown} (known: {', '.join(TYPE_NAMES)})")
    return np.array([TYPE_CODES[name] for name in unique.tolist()], dtype=np.int64)[inverse]


def screw_twists(types, axis, point, pitch=0.0) -> np.ndarray:
    """(N, 6) unit screw twists from joint types, axis directions, points on the axes and pitch.

    revolute and continuous: (a, o x a); prismatic: (0, a); helical: (a, o x a + h a);
    fixed: zero. `types` holds names or codes (N,); `axis` (N, 3) is normalized here and must be
    non-zero for moving joints; `point` (N, 3); `pitch` (metres per radian) scalar or (N,).
    """
    codes = type_codes(types)
    n = codes.shape[0]
    axis = np.asarray(axis, dtype=float).reshape(-1, 3) if np.size(axis) else np.zeros((0, 3))
    point = np.asarray(point, dtype=float).reshape(-1, 3) if np.size(point) else np.zeros((0, 3))
    if axis.shape != (n, 3) or point.shape != (n, 3):
        raise ValueError(
            f"axis and point must have shape ({n}, 3), got {axis.shape} and {point.shape}"
        )
    pitch = np.broadcast_to(np.asarray(pitch, dtype=float), (n,))
    for name, arr in (("axis", axis), ("point", point), ("pitch", pitch)):
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} contains NaN or infinite values")
    moving = codes != TYPE_CODES["fixed"]
    length = np.linalg.norm(axis, axis=1)
    bad = moving & (length == 0.0)
    if bad.any():
        raise ValueError(f"zero axis for moving joints {_first_indices(bad)}")
    unit = axis / np.where(length > 0.0, length, 1.0)[:, None]
    rotating = np.isin(codes, [TYPE_CODES[t] for t in ("revolute", "continuous", "helical")])
    helical = codes == TYPE_CODES["helical"]
    prismatic = codes == TYPE_CODES["prismatic"]
    twist = np.zeros((n, 6))
    twist[:, :3] = np.where(rotating[:, None], unit, 0.0)
    moment = np.cross(point, unit) + np.where(helical, pitch, 0.0)[:, None] * unit
    twist[:, 3:] = np.where(rotating[:, None], moment, np.where(prismatic[:, None], unit, 0.0))
    return twist
