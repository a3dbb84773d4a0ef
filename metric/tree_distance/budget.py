"""What both searches share: the node or time budget, the subtree-bound ceiling and dense
relation matrices."""

from __future__ import annotations

import time

import numpy as np

#: Relative tolerance on savings below which the search treats values as equal.
_TOLERANCE = 1e-12
#: With a budget, repair a node's relaxation into a realizable matching every this many nodes.
_REPAIR_EVERY = 8
#: Both searches try the subtree bound (`_subtree_bound`) once they have expanded this many.
_CERTIFY_AFTER = 200
#: The searches store the side and child-side matrices of trees with at most this many moving
#: joints (read row by row at every node); larger trees compute the entries they ask for.
_DENSE_RELATION = 2000


class _Budgeted:
    """A search's budget: `nodes` explored so far against `max_nodes`, and a `deadline`
    (time.perf_counter) that sets `timed_out` when it passes; and the subtree bound, tried once
    (after `_CERTIFY_AFTER` nodes, or earlier on a small budget) at one node per rooting it
    evaluates, if the budget can pay for them (`ceiling`: its value, an upper bound on the
    savings; inf before)."""

    nodes: int
    max_nodes: int | None
    deadline: float | None
    timed_out: bool
    best: float
    tolerance: float
    subtree_bound: tuple | None = None
    ceiling: float = np.inf

    def _ceiling_reached(self) -> bool:
        """Has the incumbent reached the subtree bound (computing it first when due: after
        `_CERTIFY_AFTER` nodes, or earlier so that its rootings still fit in the budget)?"""
        if self.subtree_bound is not None:
            rootings, bound = self.subtree_bound
            due = _CERTIFY_AFTER
            if self.max_nodes is not None:
                # A branching adds up to three nodes between two checks.
                due = min(due, self.max_nodes - rootings - 3)
            if self.nodes >= due:
                self.subtree_bound = None
                if self.max_nodes is None or self.nodes + rootings <= self.max_nodes:
                    self.nodes += rootings
                    self.ceiling = bound()
        return self.ceiling <= self.best + self.tolerance

    def _out_of_budget(self, step: int = 1) -> bool:
        """Would `step` more nodes exceed the node budget, or has the deadline passed?"""
        if self.max_nodes is not None and self.nodes + step > self.max_nodes:
            return True
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.timed_out = True
            return True
        return False


def _dense(relation):
    """A side or child-side matrix as a numpy array when it is small enough (the search reads it row
    by row at every node), else the computed-on-indexing relation itself."""
    return np.asarray(relation) if len(relation) <= _DENSE_RELATION else relation


def _budget(budget) -> tuple[float | None, int | None]:
    """(deadline, max_nodes) of a search budget: None, an int number of nodes or float seconds."""
    if budget is None:
        return None, None
    if isinstance(budget, (bool, np.bool_)) or not isinstance(
        budget, (int, float, np.integer, np.floating)
    ):
        raise ValueError(f"budget must be seconds (float) or search nodes (int), got {budget}")
    if budget <= 0:
        raise ValueError(f"budget must be > 0, got {budget}")
    if isinstance(budget, (int, np.integer)):
        return None, int(budget)
    return time.perf_counter() + float(budget), None
