"""`arena validate` of one corpus object against the user's script, and `arena --help`.

    .venv/bin/python bench/validate_speed.py [--runs 7] [--objects partnet_mobility/kettle ...]

Whole-process wall clock, paired: each round runs `arena validate OBJECT` and the user's script
of bench/realistic.py (`_user_load`: yourdfpy with meshes, then MuJoCo's compiler) on the same
`mobility.urdf`, in alternating order; the ratio is taken per round, then its median. One
unmeasured round first warms the file cache. Both run in the same environment, with this
checkout on PYTHONPATH and bytecode caching on (PYTHONDONTWRITEBYTECODE dropped: an installed
package has its .pyc files), output to /dev/null (a wall ends when the process exits, not when
a helper process that multiprocessing started closes the pipe). The default objects are the
two PartNet-Mobility objects of median size in the shared corpus (kettle: MuJoCo compiles it;
45001: MuJoCo refuses its flat mesh, so the user's script stops at the compiler). Prints the
medians and writes bench/results/validate_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
RESULTS = REPO / "bench" / "results" / "validate_speed.json"
ARENA = str(Path(sys.executable).parent / "arena")
OBJECTS = ("partnet_mobility/kettle", "partnet_mobility/45001")
#: mujoco and yourdfpy first, as `_user_load` imports them: realistic.py's own imports then
#: add about 3 ms to the user's process
USER_SCRIPT = (
    "import sys\nimport mujoco, yourdfpy\nsys.path.insert(0, {bench!r})\n"
    "from realistic import _user_load\nsys.exit(0 if _user_load({urdf!r}) else 1)\n"
)


def wall(command: list[str], env: dict) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(
        command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - started, done.returncode


def measure(folder: Path, runs: int, env: dict) -> dict:
    urdf = str(folder / "mobility.urdf")
    commands = {
        "arena": [ARENA, "validate", str(folder)],
        "user": [sys.executable, "-c", USER_SCRIPT.format(bench=str(REPO / "bench"), urdf=urdf)],
    }
    codes = {name: wall(command, env)[1] for name, command in commands.items()}  # warm-up
    times: dict[str, list[float]] = {"arena": [], "user": []}
    for k in range(runs):
        order = ("arena", "user") if k % 2 == 0 else ("user", "arena")
        for name in order:
            times[name].append(wall(commands[name], env)[0])
    ratios = [a / u for a, u in zip(times["arena"], times["user"], strict=True)]
    return {
        "arena_validate_s": [round(t, 3) for t in times["arena"]],
        "user_script_s": [round(t, 3) for t in times["user"]],
        "median_arena_validate_s": round(statistics.median(times["arena"]), 3),
        "median_user_script_s": round(statistics.median(times["user"]), 3),
        "median_ratio": round(statistics.median(ratios), 3),
        "arena_exit_code": codes["arena"],
        "user_script_loaded": codes["user"] == 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--objects", nargs="+", default=list(OBJECTS))
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    load_before = [round(x, 2) for x in os.getloadavg()]
    wall([ARENA, "--help"], env)
    help_s = [wall([ARENA, "--help"], env)[0] for _ in range(args.runs)]
    results: dict = {
        "help": {
            "runs_s": [round(t, 3) for t in help_s],
            "median_s": round(statistics.median(help_s), 3),
        },
        "objects": {},
    }
    print(f"arena --help: median {results['help']['median_s']:.3f} s", flush=True)
    for name in args.objects:
        figures = measure(CORPUS / name, args.runs, env)
        results["objects"][name] = figures
        print(
            f"{name}: arena validate {figures['median_arena_validate_s']:.3f} s, user's script "
            f"{figures['median_user_script_s']:.3f} s, median ratio {figures['median_ratio']:.2f}",
            flush=True,
        )
    results["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    results["machine"] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    results["runs"] = args.runs
    results["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
