"""The tree lift E^tree, its assignment relaxation, the realizability certificate, an exact
branch and bound, and the constant-penalty skeleton distance D_lambda.

After contracting exactly fixed edges, every edit sequence T1 ~> T2 reduces to: contract the
edges of T1 that do not survive, substitute the survivors, expand the edges T2 needs. So

    E^tree(T1, T2) = min over realizable matchings M of
                     sum_{(i,k) in M} E(J1_i, J2_k) + sum_{unmatched J} E(J, J0),

where M (a partial one-to-one matching of edges) is realizable when contracting every unmatched
edge of both trees leaves two trees that are isomorphic with matched edges corresponding.
`tree_distance` compares every matched joint as given (the reference package's distance, which
depends on the choice of base link through the orientation of the joints);
`unrooted_tree_distance` (`unrooted.py`) compares a joint with its partner's
inverse where the matching reverses their edge, which makes the base link free.

Writing savings S_ik = E(J1_i, J0) + E(J0, J2_k) - E(J1_i, J2_k), E^tree = (all contraction
costs) - max over realizable M of the summed savings. Dropping realizability gives the
assignment relaxation (a lower bound, one Hungarian solve). Realizability is decided two ways:

- whole matching: two edge-labelled trees are isomorphic iff they have the same family of
  node incidence sets (the sets of edge labels meeting at each node), checked in linear time;
- during the search: M is realizable iff for every three matched pairs the betweenness agrees
  (edge z lies on the path between x and y in T1 iff its partner does in T2), because
  contraction keeps betweenness and, for trees, the edge adjacency determines the tree.

Realizability is inherited by sub-matchings, so the exact search is a branch and bound over
matchings: each node fixes some pairs and forbids others, its bound is the relaxation restricted
to pairs consistent with the fixed ones (a valid upper bound on savings), and a violated triple
in the relaxation's matching splits the node into three disjoint children (forbid the first
pair; fix it and forbid the second; fix both and forbid the third). Search ends when no open node
can beat the best realizable matching found, which is then optimal (up to a relative tolerance
of 1e-12 on the savings).

Rooting both trees, realizable matchings are the ancestry-preserving ones, i.e. unordered tree
edit mappings with contraction as node deletion; that problem is NP-hard (Zhang, Statman and
Shasha 1992), so no per-node-pair assignment DP is exact for it (such a DP computes the
constrained distance, a restriction). A DP over node pairs that relaxes instead of restricting
gives a second upper bound on the savings (`bounds._subtree_bound`): much tighter than the
assignment bound on trees with many equal joints (it is exact on corrupted copies of a
keyboard), weaker than needed on unrelated random trees. Both searches try it once, after
`_CERTIFY_AFTER` nodes; the unrooted search also tightens each node with fixed pairs by a
one-rooting version of it before branching the node (`unrooted._OrientedSearch.rooted_bound`).
"""

from metric.tree_distance.realizability import matching_realizable
from metric.tree_distance.results import Assignment, TreeDistance
from metric.tree_distance.rooted import assignment_distance, skeleton_distance, tree_distance
from metric.tree_distance.unrooted import matching_orientation, unrooted_tree_distance

__all__ = [
    "Assignment",
    "TreeDistance",
    "assignment_distance",
    "matching_orientation",
    "matching_realizable",
    "skeleton_distance",
    "tree_distance",
    "unrooted_tree_distance",
]
