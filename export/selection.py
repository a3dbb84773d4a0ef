"""Which objects go where: the train/validation/test split and the `eval200` evaluation set.

Both depend only on object ids, duplicate clusters and categories, never on build order or
time, so two builds of the same inputs select the same objects, and an object keeps its split
from release to release (a cluster's id is its canonical member's object_id, so a canonical
object keeps its split when copies of it appear). Splits are drawn per duplicate cluster and
eval200 only from canonical members (`assign_splits`), so no cluster leaks across splits and
eval200 never holds two copies of one object.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass

SPLIT_FRACTIONS = (("train", 0.8), ("validation", 0.1), ("test", 0.1))
SPLITS = tuple(name for name, _ in SPLIT_FRACTIONS)  # the Hugging Face split names
EVAL_SIZE = 200


def stable_fraction(text: str) -> float:
    """A number in [0, 1) fixed by `text` (the first 8 bytes of its sha256)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(cluster_id: str) -> str:
    """ "train", "validation" or "test" (80/10/10) by a stable hash of the duplicate cluster's
    id (an object without duplicates is its own cluster: its object_id)."""
    x = stable_fraction("split:" + cluster_id)
    bound = 0.0
    for name, fraction in SPLIT_FRACTIONS:
        bound += fraction
        if x < bound:
            return name
    return SPLIT_FRACTIONS[-1][0]


def assign_splits(objects: Sequence[dict], last: Collection[str] = ()) -> list[dict]:
    """objects-table rows (with cluster_id and is_canonical) with `split` by cluster and
    `eval200` chosen among canonical members (`select_eval`, `last` as there)."""
    eval_ids = select_eval(
        [
            EvalCandidate(
                r["object_id"], r["category"], r["supercategory"], r["status"], r["n_joints"]
            )
            for r in objects
            if r["is_canonical"]
        ],
        last=last,
    )
    return [
        {**r, "split": split_of(r["cluster_id"]), "eval200": r["object_id"] in eval_ids}
        for r in objects
    ]


@dataclass(frozen=True)
class EvalCandidate:
    """What eval200 needs to know about one accepted object."""

    object_id: str
    category: str
    supercategory: str
    status: str = "pass"
    n_joints: int = 1


def select_eval(
    objects: Sequence[EvalCandidate], size: int = EVAL_SIZE, last: Collection[str] = ()
) -> set[str]:
    """A deterministic evaluation set of `size` objects (all of them when there are fewer).

    Picks, in this order: one object of every supercategory; one object of every category not
    yet covered (supercategories taken in turn, so that when slots run out the covered categories
    are spread across supercategories); then the rest in turns over supercategories. Within a
    group, objects with moving joints and status "pass" come first, then a stable hash of the
    object id decides, so adding an unrelated object rarely changes the selection. Objects of
    the supercategories in `last` (e.g. the taxonomy's "Unassigned") are chosen only when the
    others do not fill the set.
    """
    main = [o for o in objects if o.supercategory not in last]
    if len(main) < len(objects) and len(main) <= size:
        rest = [o for o in objects if o.supercategory in last]
        return {o.object_id for o in main} | select_eval(rest, size - len(main))
    objects = main
    if len(objects) <= size:
        return {o.object_id for o in objects}

    def rank(o: EvalCandidate) -> tuple:
        return (o.n_joints == 0, o.status != "pass", stable_fraction("eval:" + o.object_id))

    groups: dict[str, list[EvalCandidate]] = {}  # supercategory -> its objects, best first
    for o in sorted(objects, key=rank):
        groups.setdefault(o.supercategory, []).append(o)
    supercategories = sorted(groups)
    taken: set[str] = set()

    # 1. one object per supercategory (its best-ranked one)
    for sc in supercategories:
        if len(taken) < size:
            taken.add(groups[sc][0].object_id)

    # 2. one object per uncovered category, supercategories in turn
    covered = {o.category for o in objects if o.object_id in taken}
    pending = {
        sc: deque(o for o in groups[sc] if o.category not in covered) for sc in supercategories
    }
    while len(taken) < size and any(pending.values()):
        for sc in supercategories:
            queue = pending[sc]
            while queue and queue[0].category in covered:
                queue.popleft()
            if queue and len(taken) < size:
                o = queue.popleft()
                taken.add(o.object_id)
                covered.add(o.category)

    # 3. fill the remaining slots in turns over supercategories
    remaining = {sc: deque(groups[sc]) for sc in supercategories}
    while len(taken) < size:
        for sc in supercategories:
            queue = remaining[sc]
            while queue and queue[0].object_id in taken:
                queue.popleft()
            if queue and len(taken) < size:
                taken.add(queue.popleft().object_id)
    return taken
