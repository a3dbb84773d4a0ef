"""E^tree on real kinematic trees of the corpus, loaded through the project's adapters."""

from __future__ import annotations

import numpy as np
import pytest

import metric
from normalize.adapters import get_adapter
from verify.checks.kinematics import metric_tree

OBJECTS = {
    ("partnet_mobility", "45940"),
    ("example_robot_data", "kinova/example-robot-data/robots/kinova_description/robots/kinova"),
    ("pybullet_data", "r2d2/r2d2"),
    ("urdformer", "label40/output/label40"),
}
ALPHA = metric.split_norm(1.0)


@pytest.fixture(scope="module")
def trees(corpus_candidates):
    out = {}
    for candidate in corpus_candidates.values():
        source = candidate.source
        if (source.name, candidate.source_id) in OBJECTS:
            out[source.name] = metric_tree(get_adapter(source.format).load(candidate))
    assert len(out) == len(OBJECTS)
    return out


def _relabeled_with_fixed_edges(tree: metric.Tree, rng) -> metric.Tree:
    """Renamed nodes, shuffled and reoriented edges, and a fixed edge under every link."""
    order = rng.permutation(len(tree))
    rename = {node: f"part-{i}" for i, node in enumerate(rng.permutation(len(tree.nodes)))}
    edges, twist, lower, upper = [], [], [], []
    for e in order:
        u, v = (rename[tree.nodes.index(x)] for x in tree.edges[e])
        edges.append((v, u) if rng.random() < 0.5 else (u, v))
        twist.append(tree.joints.twist[e])
        lower.append(tree.joints.lower[e])
        upper.append(tree.joints.upper[e])
    for node in list(rename.values()):
        edges = [tuple(f"{x}/inner" if x == node else x for x in e) for e in edges]
        edges.append((node, f"{node}/inner"))
        twist.append(np.zeros(6))
        lower.append(0.0)
        upper.append(0.0)
    return metric.Tree(edges, metric.Joints(np.array(twist), lower, upper))


def test_equivalent_encodings_of_real_trees_are_at_distance_zero(trees):
    rng = np.random.default_rng(0)
    for tree in trees.values():
        copy = _relabeled_with_fixed_edges(tree, rng)
        result = metric.tree_distance(tree, copy, ALPHA, kappa=np.pi)
        assert result.value == 0.0 and result.exact and result.certified
        assert len(result.matching) == int((~tree.joints.fixed).sum())


def test_part_split_along_its_screw_costs_the_smaller_piece_twice(trees):
    """Splitting joint J into ranges t and 1 - t of the same screw costs 2 min(t, 1 - t) E(J, J0):
    substitute the larger piece, expand the smaller one."""
    rng = np.random.default_rng(1)
    checked = 0
    for tree in trees.values():
        joints = tree.joints
        candidates = np.flatnonzero(~joints.fixed & joints.bounded)
        e = int(candidates[rng.integers(len(candidates))])
        share = 0.3
        parent, child = tree.edges[e]
        edges = [*tree.edges[:e], (parent, "middle"), *tree.edges[e + 1 :], ("middle", child)]
        twist = np.vstack([joints.twist, joints.twist[e]])
        lower = np.append(joints.lower, (1 - share) * joints.lower[e])
        upper = np.append(joints.upper, (1 - share) * joints.upper[e])
        lower[e], upper[e] = share * joints.lower[e], share * joints.upper[e]
        split = metric.Tree(edges, metric.Joints(twist, lower, upper))
        if joints.bounded.all():
            checked += 1
            expected = 2 * share * metric.distance_to_fixed(joints[[e]], ALPHA)[0]
            assert metric.tree_distance(split, tree, ALPHA).value == pytest.approx(expected)
        result = metric.tree_distance(split, tree, ALPHA, kappa=np.pi)
        assert result.exact and result.value > 0.0
        assert len(result.matching) == int((~joints.fixed).sum())
    assert checked >= 2  # objects with only bounded joints get the closed form


def test_every_corpus_object_is_at_distance_zero_from_its_rerootings(corpus_candidates):
    """Base-link choice is a representation equivalence: the unrooted distance between a real
    object and the same object re-rooted at any of its links is 0 (with kappa, so continuous
    joints are included)."""
    checked = 0
    for candidate in corpus_candidates.values():
        try:
            obj = get_adapter(candidate.source.format).load(candidate)
        except Exception:  # objects the adapters refuse are tested by the normalize suite
            continue
        tree = metric_tree(obj)
        for link in tree.nodes:
            result = metric.unrooted_tree_distance(tree, tree.reroot(link), ALPHA, kappa=np.pi)
            assert result.value == 0.0 and result.exact, (candidate.object_id, link)
        checked += 1
    assert checked >= 80  # 87 of the 107 load through the adapters alone
