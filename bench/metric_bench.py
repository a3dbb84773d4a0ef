"""Metric benchmarks, measured side by side in one process against the reference package.

    .venv/bin/python bench/metric_bench.py [--quick]

1. Batched E on 100,000 joint pairs against the reference's per-call loop (timed on a
   subsample, scaled per pair); target at least 300x per pair. Both sides are the median of
   repeated runs (7 of ours, 3 of the reference's loop) and both include their input
   checking: ours builds and validates the Joints batches inside the timed call (the figure
   without construction is reported beside it).
2. Exact E^tree on random 8-joint trees against the reference's exact routine, equal values;
   target at least 100x (one run each side per pair).
3. Random 12-joint trees: exact or certified within a budget of 5,000 search nodes each.
4. The deepest large real tree of the corpus (the moving tree of most joints among those
   whose depth is at least a third of their joint count: a chain-like robot, not a star)
   against corrupted copies, rooted and unrooted, within 5,000 nodes; and the 115-key
   keyboard (a star, like partnet_mobility/7619) against a perturbed copy.

Prints the figures and writes bench/results/metric_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

# One BLAS thread: both sides then measure single-core throughput, and tiny matrix products do
# not stall on thread hand-offs when other processes share the machine.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import articulatearena as aa  # noqa: E402
import numpy as np  # noqa: E402
from articulatearena.new_equation import tree as aa_tree  # noqa: E402
from tree_agreement import EDITS, Prediction, corpus_trees, missing, perturb, split, spurious  # noqa: E402

import metric  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "metric_bench.json"


def random_joints(rng, n):
    lower = rng.normal(size=n)
    return metric.Joints(rng.normal(size=(n, 6)), lower, lower + rng.exponential(size=n))


def random_tree(rng, n):
    parents = [int(rng.integers(0, j)) for j in range(1, n + 1)]
    edges = [(f"link{p}", f"link{j}") for j, p in zip(range(1, n + 1), parents, strict=True)]
    return metric.Tree(edges, random_joints(rng, n))


def oracle_edges(tree):
    joints = tree.joints
    return [
        (u, v, (joints.lower[e] * joints.twist[e], joints.upper[e] * joints.twist[e]))
        for e, (u, v) in enumerate(tree.edges)
    ]


#: Search nodes per tree pair (a node budget: the same result on any machine).
NODE_BUDGET = 5000


def median_of(repeats, fn):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def bench_joint_distance(rng, pairs=100_000, sample=3_000):
    gram = metric.split_norm(1.0)
    inner = aa.make_split_norm(1.0)
    j1, j2 = random_joints(rng, pairs), random_joints(rng, pairs)
    values = metric.joint_distance(j1, j2, gram)
    ours = median_of(7, lambda: metric.joint_distance(j1, j2, gram))
    arrays = (j1.twist, j1.lower, j1.upper, j2.twist, j2.lower, j2.upper)
    with_build = median_of(
        7,
        lambda: metric.joint_distance(metric.Joints(*arrays[:3]), metric.Joints(*arrays[3:]), gram),
    )
    ends = [
        (j1.lower[i] * j1.twist[i], j1.upper[i] * j1.twist[i],
         j2.lower[i] * j2.twist[i], j2.upper[i] * j2.twist[i])
        for i in range(sample)
    ]  # fmt: skip
    reference = [aa.joint_metric(*e, inner) for e in ends]
    oracle = median_of(3, lambda: [aa.joint_metric(*e, inner) for e in ends])
    error = float(np.max(np.abs(values[:sample] - reference) / np.asarray(reference)))
    per_pair_ours, per_pair_oracle = ours / pairs, oracle / sample
    return {
        "pairs": pairs,
        "oracle_sample": sample,
        "ours_seconds": ours,
        "ours_seconds_including_joint_construction": with_build,
        "ours_us_per_pair": per_pair_ours * 1e6,
        "oracle_us_per_pair": per_pair_oracle * 1e6,
        "timing": "median of 7 runs (ours) and of 3 runs (reference)",
        "speedup_per_pair_without_construction": per_pair_oracle / per_pair_ours,
        "speedup_per_pair": per_pair_oracle / (with_build / pairs),
        "max_relative_difference": error,
        "target_speedup": 300,
    }


def bench_accuracy(rng, pairs=300):
    """E between a joint and a copy perturbed by delta, against the same formula evaluated in
    50-digit decimal arithmetic from the same float inputs: the worst relative error of E, and
    the worst absolute error over the endpoint norms, per delta."""
    from decimal import Decimal, getcontext

    getcontext().prec = 50
    gram = metric.split_norm(1.0)

    def exact(t1, lo1, up1, t2, lo2, up2):
        d = [[Decimal(float(v)) for v in t] for t in (t1, t2)]
        a1, b1 = ([Decimal(float(x)) * v for v in d[0]] for x in (lo1, up1))
        a2, b2 = ([Decimal(float(x)) * v for v in d[1]] for x in (lo2, up2))

        def sq(u, v):
            return sum((x - y) ** 2 for x, y in zip(u, v, strict=True))

        zero = [Decimal(0)] * 6
        value = min(sq(a1, a2) + sq(b1, b2), sq(a1, b2) + sq(b1, a2)).sqrt()
        return value, (sq(a1, zero) + sq(b1, zero)).sqrt()

    rows = []
    for delta in (1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0):
        relative, absolute = [], []
        for _ in range(pairs):
            t1, lo1 = rng.normal(size=6), rng.normal()
            up1 = lo1 + rng.exponential()
            t2 = t1 + delta * rng.normal(size=6)
            lo2, up2 = sorted((lo1 + delta * rng.normal(), up1 + delta * rng.normal()))
            ours = metric.joint_distance(
                metric.Joints(t1, lo1, up1), metric.Joints(t2, lo2, up2), gram
            )[0]
            value, size = exact(t1, lo1, up1, t2, lo2, up2)
            error = abs(Decimal(float(ours)) - value)
            relative.append(float(error / value))
            absolute.append(float(error / size))
        rows.append(
            {
                "delta": delta,
                "max_relative_error": max(relative),
                "median_relative_error": float(np.median(relative)),
                "max_error_over_endpoint_norm": max(absolute),
            }
        )
    return rows


def bench_exact_tree(rng, pairs=4, joints=8):
    gram = metric.split_norm(1.0)
    inner = aa.make_split_norm(1.0)
    rows = []
    for _ in range(pairs):
        t1, t2 = random_tree(rng, joints), random_tree(rng, joints)
        start = time.perf_counter()
        ours = metric.tree_distance(t1, t2, gram)
        ours_time = time.perf_counter() - start
        start = time.perf_counter()
        value, certified = aa_tree.exact_tree_distance(oracle_edges(t1), oracle_edges(t2), inner)
        oracle_time = time.perf_counter() - start
        rows.append(
            {
                "value": ours.value,
                "oracle_value": value,
                "relative_difference": abs(ours.value - value) / value,
                "certified": ours.certified,
                "oracle_certified": certified,
                "exact": ours.exact,
                "nodes_explored": ours.nodes_explored,
                "ours_seconds": ours_time,
                "oracle_seconds": oracle_time,
            }
        )
        print(
            f"    8-joint pair: ours {ours_time:.4f} s, reference {oracle_time:.2f} s", flush=True
        )
    total_ours = sum(r["ours_seconds"] for r in rows)
    total_oracle = sum(r["oracle_seconds"] for r in rows)
    return {
        "joints_per_tree": joints,
        "pairs": rows,
        "all_equal_1e-9": all(r["relative_difference"] <= 1e-9 for r in rows),
        "all_exact": all(r["exact"] for r in rows),
        "ours_seconds_total": total_ours,
        "oracle_seconds_total": total_oracle,
        "speedup": total_oracle / total_ours,
        "min_speedup_per_pair": min(r["oracle_seconds"] / r["ours_seconds"] for r in rows),
        "target_speedup": 100,
    }


def bench_twelve(rng, pairs=50, joints=12):
    gram = metric.split_norm(1.0)
    times, nodes, exact, certified = [], [], [], []
    for _ in range(pairs):
        t1, t2 = random_tree(rng, joints), random_tree(rng, joints)
        start = time.perf_counter()
        result = metric.tree_distance(t1, t2, gram, budget=NODE_BUDGET)
        times.append(time.perf_counter() - start)
        nodes.append(result.nodes_explored)
        exact.append(result.exact)
        certified.append(result.certified)
    return {
        "joints_per_tree": joints,
        "pairs": pairs,
        "budget_nodes": NODE_BUDGET,
        "all_exact": bool(all(exact)),
        "certified_share": float(np.mean(certified)),
        "max_seconds": max(times),
        "median_seconds": float(np.median(times)),
        "max_nodes_explored": max(nodes),
    }


def keyboard(rng, keys=115):
    """A base with `keys` prismatic keys in parallel (the layout of partnet_mobility/7619)."""
    grid = np.stack(np.meshgrid(np.arange(23), np.arange(5)), -1).reshape(-1, 2)[:keys]
    origin = np.column_stack([0.02 * grid[:, 0], 0.02 * grid[:, 1], np.full(keys, 0.01)])
    joints = metric.Joints.from_parameters(
        ["prismatic"] * keys,
        np.tile([0.0, 0.0, -1.0], (keys, 1)),
        origin,
        0.0,
        rng.uniform(0.003, 0.006, keys),
    )
    return metric.Tree([("base", f"key{i}") for i in range(keys)], joints)


def perturbed_copy(rng, tree):
    """Noisy axes and limits, two keys missing, one spurious revolute joint, shuffled order."""
    joints = tree.joints
    n = len(joints)
    noise = metric.Joints(
        joints.twist + 0.01 * rng.normal(size=joints.twist.shape),
        joints.lower,
        joints.upper * rng.uniform(0.8, 1.2, n),
    )
    keep = np.sort(rng.choice(n, n - 2, replace=False))
    spurious = metric.Joints.from_parameters(["revolute"], [[1.0, 0, 0]], [[0.2, 0, 0]], 0.0, 0.3)
    edges = [("board", f"k{i}") for i in keep] + [("board", "lid")]
    joints = metric.Joints.concatenate([noise[keep], spurious])
    order = rng.permutation(len(edges))
    return metric.Tree([edges[i] for i in order], joints[order])


def bench_large(rng):
    gram = metric.split_norm(1.0)
    tree = keyboard(rng)
    copy = perturbed_copy(rng, tree)
    start = time.perf_counter()
    result = metric.tree_distance(copy, tree, gram, budget=NODE_BUDGET)
    seconds = time.perf_counter() - start
    return {
        "joints": [len(copy), len(tree)],
        "budget_nodes": NODE_BUDGET,
        "seconds": seconds,
        "value": result.value,
        "lower_bound": result.lower_bound,
        "relaxation": result.relaxation,
        "certified": result.certified,
        "exact": result.exact,
        "nodes_explored": result.nodes_explored,
    }


def _depth(tree) -> int:
    """Moving joints on the longest root-to-leaf path of the contracted tree."""
    c = tree.contracted
    children: dict = {}
    for a, b in zip(c.u.tolist(), c.v.tolist(), strict=True):
        children.setdefault(a, []).append(b)
    roots = set(c.u.tolist()) - set(c.v.tolist())

    def depth(node):
        return max((1 + depth(child) for child in children.get(node, [])), default=0)

    return max(depth(r) for r in roots)


def bench_deep_real(rng, copies=10):
    """The deepest large real tree of the corpus against corrupted copies (1 to 3 edits as in
    bench/tree_agreement.py), rooted and unrooted, E^{phi,tree} with kappa = pi."""
    gram = metric.split_norm(1.0)
    pool = [
        (name, tree, _depth(tree))
        for name, tree in corpus_trees(min_moving=10, max_moving=200)
        if 3 * _depth(tree) >= int((~tree.joints.fixed).sum())
    ]
    name, tree, depth = max(pool, key=lambda item: int((~item[1].joints.fixed).sum()))
    edit_functions = dict(zip(EDITS, (perturb, spurious, missing, split), strict=True))
    rows = []
    for _ in range(copies):
        prediction = Prediction(tree)
        for _ in range(int(rng.integers(1, 4))):
            edit_functions[EDITS[int(rng.integers(len(EDITS)))]](prediction, rng)
        copy = prediction.tree()
        row = {}
        for label, distance in (
            ("rooted", metric.tree_distance),
            ("unrooted", metric.unrooted_tree_distance),
        ):
            start = time.perf_counter()
            result = distance(copy, tree, gram, np.pi, budget=NODE_BUDGET)
            row[label] = {
                "seconds": time.perf_counter() - start,
                "value": result.value,
                "exact": result.exact,
                "certified": result.certified,
                "nodes_explored": result.nodes_explored,
            }
        rows.append(row)
    return {
        "tree": name,
        "moving_joints": int((~tree.joints.fixed).sum()),
        "depth": depth,
        "budget_nodes": NODE_BUDGET,
        "copies": rows,
        "exact_share": {
            label: float(np.mean([r[label]["exact"] for r in rows]))
            for label in ("rooted", "unrooted")
        },
        "median_seconds": {
            label: float(np.median([r[label]["seconds"] for r in rows]))
            for label in ("rooted", "unrooted")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer pairs (for a smoke run)")
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    report = {
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        "norm": "split, alpha = 1",
    }
    print("batched E on 100,000 joint pairs ...", flush=True)
    report["joint_distance"] = bench_joint_distance(rng, sample=500 if args.quick else 3000)
    jd = report["joint_distance"]
    print(
        f"  ours {jd['ours_us_per_pair']:.4f} us/pair, reference {jd['oracle_us_per_pair']:.2f} "
        f"us/pair (medians): {jd['speedup_per_pair']:.0f}x with Joints construction and checks "
        f"({jd['speedup_per_pair_without_construction']:.0f}x without), max rel. diff "
        f"{jd['max_relative_difference']:.1e}"
    )
    print("accuracy of E against 50-digit arithmetic, joints perturbed by delta ...", flush=True)
    report["accuracy"] = bench_accuracy(rng, pairs=50 if args.quick else 300)
    for row in report["accuracy"]:
        print(
            f"  delta {row['delta']:.0e}: max relative error {row['max_relative_error']:.1e} "
            f"(median {row['median_relative_error']:.1e}), max error / endpoint norm "
            f"{row['max_error_over_endpoint_norm']:.1e}"
        )
    print("exact E_tree on random 8-joint trees ...", flush=True)
    report["exact_tree_8"] = bench_exact_tree(rng, pairs=1 if args.quick else 4)
    et = report["exact_tree_8"]
    print(
        f"  ours {et['ours_seconds_total']:.3f} s, reference {et['oracle_seconds_total']:.1f} s: "
        f"{et['speedup']:.0f}x (slowest pair {et['min_speedup_per_pair']:.0f}x), equal "
        f"{et['all_equal_1e-9']}"
    )
    print(f"random 12-joint trees, budget {NODE_BUDGET} nodes ...", flush=True)
    report["trees_12"] = bench_twelve(rng, pairs=10 if args.quick else 50)
    tw = report["trees_12"]
    print(
        f"  all exact {tw['all_exact']}, certified {tw['certified_share']:.0%}, max "
        f"{tw['max_seconds']:.3f} s, median {tw['median_seconds']:.3f} s"
    )
    print(
        f"115-joint keyboard against a perturbed copy, budget {NODE_BUDGET} nodes ...", flush=True
    )
    report["tree_115"] = bench_large(rng)
    lg = report["tree_115"]
    print(
        f"  {lg['seconds']:.3f} s: value {lg['value']:.4f}, lower bound {lg['lower_bound']:.4f}, "
        f"certified {lg['certified']}, exact {lg['exact']}"
    )
    print(f"deepest large real tree against corrupted copies, budget {NODE_BUDGET} nodes ...")
    report["deep_real_tree"] = bench_deep_real(rng, copies=3 if args.quick else 10)
    dr = report["deep_real_tree"]
    print(
        f"  {dr['tree']} ({dr['moving_joints']} moving joints, depth {dr['depth']}): exact "
        f"rooted {dr['exact_share']['rooted']:.0%}, unrooted {dr['exact_share']['unrooted']:.0%}"
        f"; median seconds {dr['median_seconds']}"
    )
    if not args.quick:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
