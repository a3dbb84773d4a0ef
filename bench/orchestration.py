"""Orchestration benchmark: the same cold build on every runner, in paired rounds.

    .venv/bin/python bench/orchestration.py [--generated 2000] [--rounds 2] [--workers 2]
                                            [--libraries corpus generated]
                                            [--servers temporary existing]

Libraries: the shared corpus (tests/corpus_sources.yaml, ../shared/corpus) and a generated
library of `--generated` objects. Each round builds a library cold (an empty cache) four ways,
one after the other: `--runner local` (no Prefect), the Prefect process runner, Dask's
`LocalCluster` and an existing cluster (a `dask scheduler` and a `dask worker` with `--workers`
processes, started once per library). Each build is a subprocess of its own. Two Prefect
servers (`--servers`): `temporary`, each build starting its own as `arena build` does without
PREFECT_API_URL (its start counted; Prefect's database is created before the rounds), and
`existing`, one `prefect server start` started before the rounds with PREFECT_API_URL set for
the builds, the setup the README recommends for schedules and clusters (its process tree's CPU
during each build counted).

Per build: wall and CPU seconds (the build's process tree, the temporary Prefect server
included; the existing server's CPU during the build; for the existing cluster also its worker
processes' CPU during the build), the load average at its start, the objects' stage seconds,
the task runs' seconds as Prefect recorded them (batch tasks and the assembly) and the serial
part (discovery, the wait for the server, the assembly). Ratios to the local build are taken
per round, then their median; Prefect's CPU share of a build is 1 - local CPU / its CPU, per
round, and, by process (`cpu_by_process_s`: the build process, its worker processes, Prefect's
temporary server, the rest), its server's CPU and its build process's CPU beyond the local
build's over its CPU (`prefect_cpu_share_by_process`; for the process runner, whose worker
processes run no Prefect). `--runners` picks the runners compared with the local build. The
20,000-object projection on 16 workers takes the generated library's serial seconds times
20,000 / N and its stage CPU seconds / 16. Writes bench/results/orchestration.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "orchestration.json"
RUNNERS = ("local", "process", "dask_local", "dask_existing")
BIN = Path(sys.executable).parent


def child(args: argparse.Namespace) -> None:
    """One build in this process; its figures to args.report."""
    from flows.commands import build_release
    from normalize.sources import load_sources
    from pipeline.build import BuildConfig

    config = BuildConfig(
        sources=load_sources(args.sources),
        out=args.out,
        version="bench",
        runner="local" if args.runner == "local" else args.runner.split("_")[0],
        dask_address=args.address,
        workers=args.workers,
        cache_dir=args.cache,
        live=False,
    )
    task_s = None
    if config.runner == "local":
        result = build_release(config)
    else:
        import datetime as dt

        from flows.build import build_with_prefect
        from flows.server import PrefectServer

        since = dt.datetime.now(dt.timezone.utc)
        server = PrefectServer.start()
        result = build_with_prefect(config, time.perf_counter(), None, server)
        with server.active():
            task_s = task_run_seconds(since)
    s = result.seconds
    discover = result.stage_seconds.get("discover", 0.0)
    report = {
        "build_s": s["total"],
        "prefect_wait_s": s["orchestrator_start"],
        "assemble_s": s["assemble"],
        "discover_s": discover,
        "serial_s": discover + s["orchestrator_start"] + s["assemble"],
        "stage_cpu_s": s["stages"],
        "task_run_s": task_s,
        "objects": result.info["counts"]["discovered"],
        "content_hash": result.content_hash,
        "cpu_by_process_s": cpu_by_process(),
    }
    args.report.write_text(json.dumps(report), encoding="utf-8")


def task_run_seconds(since) -> dict:
    """Seconds of the batch task runs and of the assembly task run started `since`, as Prefect
    recorded them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterStartTime

    batches = assemble = 0.0
    started = TaskRunFilter(start_time=TaskRunFilterStartTime(after_=since))
    with get_client(sync_client=True) as client:
        offset = 0
        while True:
            runs = client.read_task_runs(task_run_filter=started, limit=200, offset=offset)
            for run in runs:
                seconds = run.total_run_time.total_seconds()
                if " batch " in run.name:
                    batches += seconds
                elif run.name.startswith("assemble"):
                    assemble += seconds
            if len(runs) < 200:
                break
            offset += 200
    return {"batches": batches, "assemble": assemble}


def cpu_by_process() -> dict:
    """CPU seconds so far of this build's processes by role: this process (the flows, Prefect's
    engine and client), the worker processes, Prefect's temporary server, the rest (watchdogs,
    children already ended)."""
    import psutil

    from flows.server import SERVER_MARKER

    this = psutil.Process()
    roles = {"build": sum(this.cpu_times()[:2]), "workers": 0.0, "server": 0.0, "other": 0.0}
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    roles["other"] += ended.ru_utime + ended.ru_stime
    for p in this.children(recursive=True):
        try:
            command = " ".join(p.cmdline())
            times = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        role = "other"
        if "multiprocessing" in command:
            role = "workers"
        elif SERVER_MARKER in command:
            role = "server"
        roles[role] += times.user + times.system
    return {k: round(v, 3) for k, v in roles.items()}


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds so far of these processes and their descendants."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            process = psutil.Process(pid)
            for p in [process, *process.children(recursive=True)]:
                times = p.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


class Cluster:
    """A `dask scheduler` and a `dask worker` with `workers` processes, as subprocesses."""

    def __init__(self, root: Path, workers: int):
        from distributed import Client

        scheduler_file = root / "scheduler.json"
        with open(root / "cluster.log", "ab") as log:  # the processes keep their own copy
            common = dict(stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            self.processes = [
                subprocess.Popen(
                    [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0"]
                    + ["--scheduler-file", scheduler_file, "--no-dashboard"],
                    **common,
                )
            ]
            while not scheduler_file.is_file():
                time.sleep(0.2)
            self.processes.append(
                subprocess.Popen(
                    [BIN / "dask", "worker", "--scheduler-file", scheduler_file]
                    + ["--no-dashboard", "--nworkers", str(workers), "--nthreads", "1"],
                    **common,
                )
            )
        self.address = json.loads(scheduler_file.read_text())["address"]
        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)

    def cpu(self) -> float:
        return tree_cpu([p.pid for p in self.processes])

    def stop(self) -> None:
        for process in reversed(self.processes):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)


class Server:
    """A long-running `prefect server start` (no UI), with PREFECT_API_URL set to it in this
    process's environment, which the builds inherit."""

    def __init__(self, root: Path):
        import httpx

        from flows.server import _free_port

        port = _free_port()
        with open(root / "server.log", "ab") as log:
            self.process = subprocess.Popen(
                [BIN / "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                env={**os.environ, "PREFECT_UI_ENABLED": "0"},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}/api"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prefect server start did not answer at {url}")
            time.sleep(0.5)
        os.environ["PREFECT_API_URL"] = url

    def cpu(self) -> float:
        return tree_cpu([self.process.pid])

    def stop(self) -> None:
        os.environ.pop("PREFECT_API_URL", None)
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(30)


def build(
    sources: Path,
    work: Path,
    runner: str,
    workers: int,
    cluster: Cluster | None,
    server: Server | None,
) -> dict:
    """One cold build in a subprocess; its figures with its wall and CPU seconds."""
    out, cache = work / f"out-{runner}", work / f"cache-{runner}"
    report = work / f"{runner}.report.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--sources", sources]
    command += ["--out", out, "--cache", cache, "--runner", runner, "--workers", str(workers)]
    command += ["--report", report]
    if runner == "dask_existing":
        command += ["--address", cluster.address]
    cluster_before = cluster.cpu() if runner == "dask_existing" else 0.0
    server_before = server.cpu() if server else 0.0
    load = os.getloadavg()[0]
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, cwd=REPO)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cluster_cpu = cluster.cpu() - cluster_before if runner == "dask_existing" else 0.0
    server_cpu = server.cpu() - server_before if server else 0.0
    data = json.loads(report.read_text(encoding="utf-8"))
    for path in (report,):
        path.unlink()
    shutil.rmtree(out)
    shutil.rmtree(cache, ignore_errors=True)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu += cluster_cpu + server_cpu
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "cluster_cpu_s": cluster_cpu,
        "server_cpu_s": server_cpu,
        "load_average_1min": round(load, 2),
        **data,
    }


def library_sources(name: str, work: Path, generated: int) -> Path:
    if name == "corpus":
        return REPO / "tests" / "corpus_sources.yaml"
    from samples.generate import generate_library

    root = work / "generated"
    generate_library(root, n=generated, seed=11)
    return root / "sources.yaml"


def summarize(rounds: list[dict[str, dict]], workers: int, runners: list[str]) -> dict:
    """Medians per runner, paired ratios to the local build, Prefect's CPU share."""
    figures = ("wall_s", "cpu_s", "server_cpu_s", "stage_cpu_s", "serial_s", "prefect_wait_s")
    figures += ("assemble_s", "load_average_1min")
    medians = {
        runner: {k: round(statistics.median(r[runner][k] for r in rounds), 3) for k in figures}
        for runner in runners
    }
    for runner in runners:
        medians[runner]["cpu_by_process_s"] = {
            role: round(statistics.median(r[runner]["cpu_by_process_s"][role] for r in rounds), 3)
            for role in rounds[0][runner]["cpu_by_process_s"]
        }
    paired = {}
    for runner in runners[1:]:
        paired[runner] = {
            "wall_over_local": round(
                statistics.median(r[runner]["wall_s"] / r["local"]["wall_s"] for r in rounds), 3
            ),
            "cpu_over_local": round(
                statistics.median(r[runner]["cpu_s"] / r["local"]["cpu_s"] for r in rounds), 3
            ),
            "prefect_cpu_share": round(
                statistics.median(1 - r["local"]["cpu_s"] / r[runner]["cpu_s"] for r in rounds), 3
            ),
            "prefect_cpu_share_by_process": round(
                statistics.median(prefect_share_by_process(r, runner) for r in rounds), 3
            ),
            "task_runs_over_stage_seconds": round(
                statistics.median(
                    r[runner]["task_run_s"]["batches"] / r[runner]["stage_cpu_s"] for r in rounds
                ),
                3,
            ),
        }
    hashes = {r[runner]["content_hash"] for r in rounds for runner in runners}
    process = medians["process"]
    n = rounds[0]["local"]["objects"]
    return {
        "objects": n,
        "medians": medians,
        "paired_ratios": paired,
        "identical_releases": len(hashes) == 1,
        "serial_fraction_of_wall": round(process["serial_s"] / process["wall_s"], 3),
        "per_object": {
            "stage_cpu_s": round(process["stage_cpu_s"] / n, 4),
            "serial_s": round(process["serial_s"] / n, 5),
        },
        "workers": workers,
    }


def prefect_share_by_process(build_round: dict, runner: str) -> float:
    """Prefect's CPU share of a build counted where Prefect runs: its server's process and the
    build process's CPU beyond the local build's, over the build's CPU. Unlike 1 - local CPU /
    its CPU, this leaves out the worker processes, whose hundreds of seconds vary by several
    per cent with the machine's load (the same objects took 12 % more CPU in a busier round)."""
    local = build_round["local"]["cpu_by_process_s"]
    this = build_round[runner]["cpu_by_process_s"]
    prefect = this["server"] + build_round[runner]["server_cpu_s"] + this["build"] - local["build"]
    return prefect / build_round[runner]["cpu_s"]


def projection(generated: dict) -> dict:
    """20,000 objects from the generated library's per-object figures (the serial part taken
    as linear in N, which the assembly is; the server's start is not)."""
    per = generated["per_object"]
    wait = generated["medians"]["process"]["prefect_wait_s"]  # the temporary server's
    serial = per["serial_s"] * 20000
    return {
        "objects": 20000,
        "serial_s": round(serial, 1),
        **{
            f"wall_s_on_{w}_workers": round(serial + wait + per["stage_cpu_s"] * 20000 / w, 1)
            for w in (2, 16)
        },
        "assumes": "stage CPU divides evenly over the workers; serial part linear in N",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libraries", nargs="+", default=["corpus", "generated"])
    parser.add_argument("--generated", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--servers", nargs="+", default=["temporary", "existing"])
    parser.add_argument(
        "--runners",
        nargs="+",
        default=list(RUNNERS[1:]),
        choices=RUNNERS[1:],
        help="the runners compared with --runner local (which always runs)",
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for hidden in ("--sources", "--out", "--cache", "--report"):
        parser.add_argument(hidden, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--runner", help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    work = Path(tempfile.mkdtemp(prefix="orchestration-"))
    os.environ["PREFECT_HOME"] = str(work / "prefect_home")
    os.environ.pop("PREFECT_API_URL", None)
    load_before = os.getloadavg()
    # Prefect's database is created once, before the rounds, as on any machine where Prefect
    # ran before (the first start migrates it: seconds that no build of a user pays twice)
    start = "from flows.server import PrefectServer; PrefectServer.start().wait()"
    subprocess.run([sys.executable, "-c", start], check=True, cwd=REPO)
    runners = ["local", *args.runners]
    results = {}
    try:
        for name in args.libraries:
            sources = library_sources(name, work, args.generated)
            cluster = Cluster(work, args.workers) if "dask_existing" in runners else None
            results[name] = {}
            try:
                for kind in args.servers:
                    server = Server(work) if kind == "existing" else None
                    rounds = []
                    try:
                        for i in range(args.rounds):
                            runs = {}
                            for runner in runners:
                                on = server if runner != "local" else None
                                runs[runner] = build(
                                    sources, work, runner, args.workers, cluster, on
                                )
                                shown = {
                                    k: v for k, v in runs[runner].items() if k != "content_hash"
                                }
                                print(
                                    f"{name} {kind} server, round {i + 1} {runner}: {shown}",
                                    flush=True,
                                )
                            rounds.append(runs)
                    finally:
                        if server:
                            server.stop()
                    results[name][f"{kind}_server"] = {
                        **summarize(rounds, args.workers, runners),
                        "rounds": rounds,
                    }
            finally:
                if cluster:
                    cluster.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if "temporary_server" in results.get("generated", {}):
        results["projection_20000"] = projection(results["generated"]["temporary_server"])
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    results["machine"] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    results["commit"] = commit
    results["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    brief = {k: v for k, v in results.items() if k not in ("machine",)}
    for library in args.libraries:
        brief[library] = {
            kind: {k: v for k, v in summary.items() if k != "rounds"}
            for kind, summary in results[library].items()
        }
    print(json.dumps(brief, indent=2))


if __name__ == "__main__":
    main()
