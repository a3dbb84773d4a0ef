"""Which objects a library holds: the curated demo set, or n objects cycling through it.

Each object gets its own random generator seeded by (seed, index), so objects are independent
of each other and of the order they are written in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

# Source folder -> (format, up axis). One entry each in sources.yaml.
SOURCES = {
    "sample_partnet": ("partnet_mobility", "z"),
    "sample_urdf": ("urdf", "z"),
    "sample_urdf_yup": ("urdf", "y"),
    "sample_mjcf": ("mjcf", "z"),
    "sample_sdf": ("sdf", "z"),
}
# Sources that only a library with planted duplicates has (samples.twins): name -> (format, up
# axis, scale).
PLANTED_SOURCES = {"sample_urdf_mm": ("urdf", "z", 0.001)}
ALL_SOURCES = {**SOURCES, **{k: v[:2] for k, v in PLANTED_SOURCES.items()}}


@dataclass(frozen=True)
class ObjectPlan:
    """One object to generate and the quirks it carries (see docs/sample_library.md)."""

    index: int
    source: str
    kind: str
    demo: bool = False
    helpers: bool = False  # accessories on their own links, joined by fixed joints
    placement: bool = False  # object moved and turned away from its root frame origin
    rotated_frames: bool = False  # joint frames turned, so written axes differ from world axes
    non_unit_axis: int = 0  # how many joints get an axis of length 2
    upper_first: int = 0  # how many joints get their limits written upper-first
    turn_first: bool = False  # URDF helical pair: the rotational joint comes first
    revolute_driver: bool = False  # URDF helical pair: a bounded (revolute) rotational joint
    angle_degree: bool = False  # MJCF
    body_fragment: bool = False  # MJCF
    relative_to: bool = False  # SDF
    deprecated_pitch: bool = False  # SDF
    twin_of: int | None = None  # a twin: built from the design of object `twin_of`
    variant: str = ""  # what the twin changes (samples.twins)

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.index:04d}"

    @property
    def format(self) -> str:
        return ALL_SOURCES[self.source][0]

    def rng(self, seed: int) -> np.random.Generator:
        """The design's choices: a twin makes those of the object it copies."""
        return np.random.default_rng([seed, self.index if self.twin_of is None else self.twin_of])


def _demo(source: str, kind: str, **quirks) -> ObjectPlan:
    return ObjectPlan(0, source, kind, demo=True, **quirks)


# The curated set: every kind in every format where it makes sense (MJCF has no helical joint),
# each quirk shown at least once per format that has it.
DEMO = [
    _demo("sample_partnet", "cabinet", helpers=True, upper_first=1),
    _demo("sample_partnet", "refrigerator", helpers=True),
    _demo("sample_partnet", "laptop"),
    _demo("sample_partnet", "scissors", non_unit_axis=1),
    _demo("sample_partnet", "faucet"),
    _demo("sample_partnet", "bottle"),
    _demo("sample_partnet", "cart", helpers=True),
    _demo("sample_partnet", "folding_chair"),
    _demo("sample_partnet", "window", upper_first=1),
    _demo("sample_partnet", "keyboard"),
    _demo("sample_urdf", "cabinet", helpers=True, non_unit_axis=2, placement=True),
    _demo("sample_urdf", "refrigerator", helpers=True, rotated_frames=True),
    _demo("sample_urdf", "laptop", helpers=True, upper_first=1),
    _demo("sample_urdf", "scissors", non_unit_axis=1),
    _demo("sample_urdf", "faucet", helpers=True, rotated_frames=True),
    _demo("sample_urdf", "bottle", turn_first=True),
    _demo("sample_urdf", "cart", helpers=True, placement=True),
    _demo("sample_urdf", "folding_chair", placement=True, rotated_frames=True),
    _demo("sample_urdf", "window", non_unit_axis=1),
    _demo("sample_urdf", "keyboard"),
    _demo("sample_urdf_yup", "cabinet", helpers=True),
    _demo("sample_urdf_yup", "laptop"),
    _demo("sample_urdf_yup", "bottle", revolute_driver=True),
    _demo("sample_mjcf", "cabinet", helpers=True, body_fragment=True, angle_degree=True),
    _demo("sample_mjcf", "refrigerator", helpers=True),
    _demo("sample_mjcf", "laptop", helpers=True, angle_degree=True),
    _demo("sample_mjcf", "scissors", non_unit_axis=1),
    _demo("sample_mjcf", "faucet", rotated_frames=True),
    _demo("sample_mjcf", "cart", helpers=True, placement=True),
    _demo("sample_mjcf", "folding_chair", angle_degree=True, placement=True),
    _demo("sample_mjcf", "window", body_fragment=True),
    _demo("sample_mjcf", "keyboard"),
    _demo("sample_sdf", "cabinet", helpers=True, relative_to=True),
    _demo("sample_sdf", "refrigerator", helpers=True, rotated_frames=True),
    _demo("sample_sdf", "laptop", upper_first=1),
    _demo("sample_sdf", "bottle", deprecated_pitch=True),
    _demo("sample_sdf", "cart", helpers=True, placement=True),
    _demo("sample_sdf", "faucet"),
    _demo("sample_sdf", "window", non_unit_axis=1),
    _demo("sample_sdf", "folding_chair", rotated_frames=True),
]


def _random_plan(index: int, source: str, kind: str, seed: int) -> ObjectPlan:
    rng = np.random.default_rng([seed, index, 1])
    fmt = ALL_SOURCES[source][0]

    def p(probability: float) -> bool:
        return bool(rng.random() < probability)

    canonical = fmt == "partnet_mobility"  # PartNet objects keep the dataset's fixed frames
    return ObjectPlan(
        index,
        source,
        kind,
        helpers=p(0.6),
        placement=not canonical and p(0.4),
        rotated_frames=not canonical and p(0.4),
        non_unit_axis=int(p(0.25)),
        upper_first=int(fmt != "mjcf" and p(0.1)),
        turn_first=p(0.5),
        revolute_driver=p(0.5),
        angle_degree=fmt == "mjcf" and p(0.5),
        body_fragment=fmt == "mjcf" and p(0.3),
        relative_to=fmt == "sdf" and p(0.5),
        deprecated_pitch=fmt == "sdf" and p(0.3),
    )


def plan_library(n: int = 0, seed: int = 0, twins: float = 0.0) -> list[ObjectPlan]:
    """The curated demo set when n == 0, else exactly n objects cycling through its
    (source, kind) pairs with seeded quirks; with `twins` > 0 about that fraction of them are
    planted duplicates or near-misses of earlier objects (`samples.twins`)."""
    if n < 0:
        raise ValueError(f"--n must be 0 (the demo set) or a positive count, got {n}")
    if n == 0:
        return [replace(plan, index=i) for i, plan in enumerate(DEMO)]
    plans = [
        _random_plan(i, DEMO[i % len(DEMO)].source, DEMO[i % len(DEMO)].kind, seed)
        for i in range(n)
    ]
    if twins > 0:
        plans = _plant_twins(plans, seed, twins)
    return plans


# Kinds never twinned: a bottle's screw is bounded or not depending on the writer's quirks.
UNTWINNED = ("bottle",)


def _plant_twins(plans: list[ObjectPlan], seed: int, fraction: float) -> list[ObjectPlan]:
    from samples.twins import (
        DUPLICATE_VARIANTS,
        MESH_LAYOUTS,
        MM_SOURCE,
        NEAR_MISS_VARIANTS,
        URDF_SOURCES,
    )

    rng = np.random.default_rng([seed, 2])
    originals: list[ObjectPlan] = []
    out = []
    for plan in plans:
        if not originals or rng.random() >= fraction:
            originals.append(plan)
            out.append(plan)
            continue
        duplicate = rng.random() < 0.7
        variants = DUPLICATE_VARIANTS if duplicate else NEAR_MISS_VARIANTS
        variant = variants[int(rng.integers(len(variants)))]
        pool = [o for o in originals if o.kind not in UNTWINNED]
        if variant == "one_more_drawer":
            pool = [o for o in originals if o.kind == "cabinet"]
            if not pool:
                variant, pool = "another_size", originals
        original = pool[int(rng.integers(len(pool)))]
        if variant == "millimetres":
            source = MM_SOURCE
        elif variant in MESH_LAYOUTS:  # the plain URDF writer lays meshes out otherwise
            source = URDF_SOURCES[int(rng.integers(len(URDF_SOURCES)))]
        else:
            others = [s for s in SOURCES if ALL_SOURCES[s][0] != original.format]
            if original.placement or original.rotated_frames:  # PartNet keeps fixed frames
                others = [s for s in others if ALL_SOURCES[s][0] != "partnet_mobility"]
            source = others[int(rng.integers(len(others)))]
        # The twin keeps the original's frames (the same placement) and takes the quirks of
        # its own format.
        quirks = _random_plan(plan.index, source, original.kind, seed)
        out.append(
            replace(
                original,
                index=plan.index,
                source=source,
                non_unit_axis=quirks.non_unit_axis,
                upper_first=quirks.upper_first,
                angle_degree=quirks.angle_degree,
                body_fragment=quirks.body_fragment,
                relative_to=quirks.relative_to,
                deprecated_pitch=quirks.deprecated_pitch,
                twin_of=original.index,
                variant=variant,
            )
        )
    return out
