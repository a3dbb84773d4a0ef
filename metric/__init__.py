"""The ArticulateArena metric: pure, vectorized, arrays in and arrays out.

A one-DOF joint is its screw twist xi (angular part first) with limits [l-, l+], represented by
the unordered endpoint pair {l- xi, l+ xi}. E is the quotient distance between endpoint pairs
under an inner product on se(3) given as a 6x6 Gram matrix; E^phi compactifies unbounded joints;
E^tree lifts E to kinematic trees. See docs/metric.md for the formulas and a short guide.

This package imports nothing of the rest of the project and touches no files.
"""

from metric.baselines import ComponentScores, JointParameters, component_scores
from metric.joint_distance import (
    compactify,
    distance_to_fixed,
    endpoints,
    joint_distance,
    joint_distance_matrix,
)
from metric.joints import TYPE_CODES, Joints, screw_twists, type_codes
from metric.material_motion import configuration_discrepancy, material_motion_distance, se3_exp
from metric.norms import (
    kinetic_norm,
    kinetic_norms,
    riemannian_norm,
    split_norm,
    transform_mass_moments,
)
from metric.surrogates import invariant_surrogate, softmin_surrogate, swap_invariants
from metric.tree import Tree
from metric.tree_distance import (
    Assignment,
    TreeDistance,
    assignment_distance,
    matching_orientation,
    matching_realizable,
    skeleton_distance,
    tree_distance,
    unrooted_tree_distance,
)

__all__ = [
    "TYPE_CODES",
    "Assignment",
    "ComponentScores",
    "JointParameters",
    "Joints",
    "Tree",
    "TreeDistance",
    "assignment_distance",
    "compactify",
    "component_scores",
    "configuration_discrepancy",
    "distance_to_fixed",
    "endpoints",
    "invariant_surrogate",
    "joint_distance",
    "joint_distance_matrix",
    "kinetic_norm",
    "kinetic_norms",
    "material_motion_distance",
    "matching_orientation",
    "matching_realizable",
    "riemannian_norm",
    "screw_twists",
    "se3_exp",
    "skeleton_distance",
    "softmin_surrogate",
    "split_norm",
    "swap_invariants",
    "transform_mass_moments",
    "tree_distance",
    "type_codes",
    "unrooted_tree_distance",
]
