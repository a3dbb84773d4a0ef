"""What the tree distances return: `TreeDistance` and `Assignment`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TreeDistance:
    """Result of `tree_distance`.

    value: cost of the best realizable matching found (E^tree itself when `exact`).
    lower_bound: a proven lower bound on E^tree (equal to `value` when `exact`).
    relaxation: the assignment relaxation (a lower bound, no realizability constraint).
    certified: the relaxation's optimal matching is realizable, so E^tree == relaxation.
    exact: `value` is proven optimal (certified, or the search finished within its budget).
    matching: [(i, k), ...] original joint indices of T1 and T2 matched by `value`'s matching.
    nodes_explored: relaxations solved by the search (1 when certified), plus one per rooting
    of the second tree when the subtree bound was computed.
    inverted: the pairs of `matching` whose edges the matching maps onto each other oriented
    the other way, so J1[i] was compared with the inverse of J2[k] (`unrooted_tree_distance`
    only; always empty for `tree_distance`).
    time_limited: a wall-clock budget stopped the search, so value and lower_bound depend on
    the machine's speed and load (never the case with a node budget).
    """

    value: float
    lower_bound: float
    relaxation: float
    certified: bool
    exact: bool
    matching: list = field(default_factory=list)
    nodes_explored: int = 0
    inverted: list = field(default_factory=list)
    time_limited: bool = False


@dataclass(frozen=True)
class Assignment:
    """The assignment relaxation: its value (a lower bound on E^tree), its optimal matching in
    original joint indices, and whether that matching is realizable (then value == E^tree)."""

    value: float
    matching: list
    certified: bool
