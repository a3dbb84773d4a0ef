"""How often the exact tree search finishes within a fixed node budget.

    .venv/bin/python bench/tree_exactness.py [--quick] [--budget 22000] [--output FILE]

A node budget (not a time budget) makes every result reproducible on any machine; the default
of 22,000 nodes is one second of CPU time for the unrooted search on the random 20-joint
pairs: `calibration` below runs each of them to its proof (a budget of 20 times the default)
and divides the nodes by the CPU seconds (22,300 per CPU second at a load average near 1.6 on
the shared 2-core machine, rounded down). The rooted search is slower per node; the measured
wall-clock and CPU rates of every case are reported. `--budget 15000 --output
bench/results/tree_exactness_15000.json` gives the earlier budget for comparison.

Cases, for both `tree_distance` (rooted, the reference's distance) and
`unrooted_tree_distance` (base link free, what scoring uses):

1. independent random trees of 20 and 30 joints;
2. corrupted copies of random 50-joint trees and of the largest real corpus trees: 1 to 3 edits
   each (a joint perturbed, a spurious joint, a missing joint, a part split), as in
   bench/tree_agreement.py.

The budget counts the assignment relaxations solved, one node per rooting of the subtree
bound (tried once per search, docs/metric.md) and, in the unrooted search, three nodes per
node tightened by its rooted bound (about the CPU time of three relaxations). For the pairs
proven exact within the budget, the value is compared with an unbudgeted run (20 times the
budget). Writes
bench/results/tree_exactness.json (or --output).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
from tree_agreement import EDITS, Prediction, corpus_trees, missing, perturb, split, spurious  # noqa: E402

import metric  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "tree_exactness.json"
GRAM = metric.split_norm(1.0)
DISTANCES = {"rooted": metric.tree_distance, "unrooted": metric.unrooted_tree_distance}


def random_tree(rng, n):
    parents = [int(rng.integers(0, j)) for j in range(1, n + 1)]
    lower = rng.normal(size=n)
    joints = metric.Joints(rng.normal(size=(n, 6)), lower, lower + rng.exponential(size=n))
    return metric.Tree([(p, j) for j, p in zip(range(1, n + 1), parents, strict=True)], joints)


def corrupted(rng, tree):
    edit_functions = dict(zip(EDITS, (perturb, spurious, missing, split), strict=True))
    prediction = Prediction(tree)
    for _ in range(int(rng.integers(1, 4))):
        edit_functions[EDITS[int(rng.integers(len(EDITS)))]](prediction, rng)
    return prediction.tree()


def measure(pairs, budget, kappa=None) -> dict:
    out = {}
    for name, distance in DISTANCES.items():
        exact, certified, nodes, seconds, cpu, mismatches = 0, 0, 0, 0.0, [], 0
        for a, b in pairs:
            start, cpu_start = time.perf_counter(), time.process_time()
            result = distance(a, b, GRAM, kappa, budget=budget)
            seconds += time.perf_counter() - start
            cpu.append(time.process_time() - cpu_start)
            nodes += result.nodes_explored
            certified += result.certified
            if result.exact:
                exact += 1
                if not result.certified:
                    full = distance(a, b, GRAM, kappa, budget=20 * budget)
                    scale = max(result.value, 1e-300)
                    mismatches += abs(full.value - result.value) > 1e-9 * scale
        out[name] = {
            "pairs": len(pairs),
            "exact_share": exact / len(pairs),
            "certified_share": certified / len(pairs),
            "exact_values_differing_from_unbudgeted": mismatches,
            "nodes_per_second": nodes / seconds,
            "mean_seconds": seconds / len(pairs),
            # CPU time of this process: independent of the other work on a shared machine.
            "nodes_per_cpu_second": nodes / sum(cpu),
            "median_cpu_seconds": float(np.median(cpu)),
            "max_cpu_seconds": max(cpu),
        }
        print(
            f"    {name:<8} exact {exact}/{len(pairs)} (certified {certified}), "
            f"{nodes / seconds:.0f} nodes/s, mean {seconds / len(pairs):.3f} s, "
            f"{nodes / sum(cpu):.0f} nodes per CPU second, CPU max {max(cpu):.2f} s",
            flush=True,
        )
    return out


def calibration(pairs, budget) -> dict:
    """Unrooted search run to its proof on each pair (a budget of 20 times `budget`): the
    nodes each pair needs, the share of pairs that a budget of 15,000 to 120,000 nodes proves,
    and the nodes per CPU second (what makes `budget` one CPU second)."""
    needed, cpu = [], []
    for a, b in pairs:
        cpu_start = time.process_time()
        result = metric.unrooted_tree_distance(a, b, GRAM, budget=20 * budget)
        cpu.append(time.process_time() - cpu_start)
        needed.append(result.nodes_explored if result.exact else None)
    proven = [n for n in needed if n is not None]
    out = {
        "nodes_needed": needed,
        "cpu_seconds": [round(c, 4) for c in cpu],
        "nodes_per_cpu_second": sum(proven) / sum(c for n, c in zip(needed, cpu, strict=True) if n),
        "share_proven_within": {
            str(limit): sum(n <= limit for n in proven) / len(pairs)
            for limit in sorted({15000, 30000, 60000, 120000, budget})
        },
        "share_within_one_cpu_second": sum(c <= 1.0 for c in cpu) / len(pairs),
    }
    print(
        f"    calibration: {out['nodes_per_cpu_second']:.0f} nodes per CPU second, "
        f"proven within: {out['share_proven_within']}",
        flush=True,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer pairs (for a smoke run)")
    parser.add_argument("--budget", type=int, default=22000, help="search nodes per pair")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON file to write")
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    count = 5 if args.quick else 40
    report = {
        "budget_nodes": args.budget,
        "norm": "split, alpha = 1",
        "load_average_at_start": os.getloadavg(),
    }
    for n in (20, 30):
        print(f"independent random {n}-joint trees ...", flush=True)
        pairs = [(random_tree(rng, n), random_tree(rng, n)) for _ in range(count)]
        report[f"random_{n}"] = measure(pairs, args.budget)
        if n == 20:
            report["random_20"]["calibration"] = calibration(pairs, args.budget)
    print("corrupted copies of random 50-joint trees ...", flush=True)
    trees = [random_tree(rng, 50) for _ in range(count)]
    report["corrupted_random_50"] = measure([(corrupted(rng, t), t) for t in trees], args.budget)
    real = [t for _, t in corpus_trees(min_moving=10, max_moving=200)]
    print(f"corrupted copies of the {len(real)} corpus trees with 10+ moving joints ...")
    pairs = [(corrupted(rng, t), t) for t in real for _ in range(3 if args.quick else 10)]
    report["corrupted_corpus_10_plus"] = measure(pairs, args.budget, kappa=np.pi)
    report["corrupted_corpus_10_plus"]["moving_joints"] = sorted(
        int((~t.joints.fixed).sum()) for t in real
    )
    if not args.quick:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
