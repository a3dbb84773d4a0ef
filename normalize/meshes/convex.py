"""The convex hull of a point set, as outward-wound triangles."""

from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError


def _convex_hull(points: np.ndarray) -> np.ndarray | None:
    """The triangles of the convex hull of `points`, wound outwards, or None when qhull
    refuses them (flat or degenerate sets)."""
    try:
        hull = ConvexHull(points, qhull_options="QbB Pp Qt")
    except (QhullError, ValueError):
        return None
    triangles = points[hull.simplices]
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    inward = np.einsum("ij,ij->i", normals, hull.equations[:, :3]) < 0
    triangles[inward] = triangles[inward][:, ::-1]
    return triangles
