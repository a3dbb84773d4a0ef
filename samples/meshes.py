"""OBJ text for the box and cylinder parts, cached by shape, size and baked rotation.

Written directly as text (not through trimesh): the same few sizes recur across thousands of
objects, so each distinct mesh is formatted once. Meshes are closed, consistently wound with
outward normals and centred on the part frame.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

CYLINDER_SEGMENTS = 24


def _box(size) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    hx, hy, hz = (v / 2 for v in size)
    vertices = np.array(
        [[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    )
    # vertex index = 4*ix + 2*iy + iz
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    faces = [tri for a, b, c, d in quads for tri in ((a, b, c), (a, c, d))]
    return vertices, faces


def _cylinder(radius: float, length: float) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    n, h = CYLINDER_SEGMENTS, length / 2
    ring = [
        (radius * math.cos(2 * math.pi * k / n), radius * math.sin(2 * math.pi * k / n))
        for k in range(n)
    ]
    vertices = [(x, y, -h) for x, y in ring] + [(x, y, h) for x, y in ring]
    vertices += [(0.0, 0.0, -h), (0.0, 0.0, h)]
    bottom, top = 2 * n, 2 * n + 1
    faces = []
    for k in range(n):
        k1 = (k + 1) % n
        faces += [(k, k1, n + k1), (k, n + k1, n + k), (bottom, k1, k), (top, n + k, n + k1)]
    return np.array(vertices), faces


@lru_cache(maxsize=4096)
def obj_text(shape: str, size: tuple[float, ...], rotation: tuple[float, ...] = ()) -> str:
    """OBJ text of a centred box (size = x, y, z extents) or z-axis cylinder (radius, length),
    its vertices rotated by the row-major 3x3 `rotation` when given (baked orientation)."""
    vertices, faces = _box(size) if shape == "box" else _cylinder(*size)
    if rotation:
        vertices = vertices @ np.array(rotation).reshape(3, 3).T
    vertices = np.where(np.abs(vertices) < 5e-7, 0.0, vertices)
    lines = [f"# {shape} {' '.join(f'{v:g}' for v in size)}"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in vertices]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces]
    return "\n".join(lines) + "\n"


def merged_obj_text(parts: list[tuple], half: int | None = None) -> str:
    """OBJ text of several (shape, size, 4x4 transform) parts in one mesh; with `half` (0 or
    1) only that half of the faces of each part (the surface of a mesh split into two files)."""
    lines = [f"# {len(parts)} parts" + ("" if half is None else f", half {half} of the faces")]
    faces_out, offset = [], 0
    for shape, size, transform in parts:
        vertices, faces = _box(size) if shape == "box" else _cylinder(*size)
        if half is not None:
            faces = faces[: len(faces) // 2] if half == 0 else faces[len(faces) // 2 :]
        used = sorted({v for f in faces for v in f})
        index = {v: k for k, v in enumerate(used)}
        world = np.asarray(vertices)[used] @ transform[:3, :3].T + transform[:3, 3]
        world = np.where(np.abs(world) < 5e-7, 0.0, world)
        lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in world]
        faces_out += [tuple(index[v] + offset + 1 for v in f) for f in faces]
        offset += len(used)
    lines += [f"f {a} {b} {c}" for a, b, c in faces_out]
    return "\n".join(lines) + "\n"
