"""`arena score`: predicted articulated objects against a release's ground truth, Table-4 style.

    score_release(release, predictions, out, settings)  the plain function (no Prefect)
      score_objects     per object and method: read, match exactly, score (scoring.compare)
      summarize         means, bootstrap intervals over objects, paired differences, coverage
      write_outputs     scores.parquet, summary.json, plots, worst-objects tables, report.md

`flows.score.score_flow` wraps the same steps as a Prefect flow; `score_command` (the
CLI) runs the flow when a Prefect server is configured (PREFECT_API_URL) and the plain
function otherwise. `distance_command` (`arena distance`) lives in scoring.distance.
The choices behind every number are in docs/scoring.md.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

import schemas
from normalize.errors import AssetError
from normalize.files import regular_status
from normalize.paths import is_inside
from scoring import defaults
from scoring.compare import TAU_AXIS, TAU_ORIGIN, compare, object_values
from scoring.objects import find_entry, kinematics, read_any
from scoring.plots import distribution_plot, supercategory_plot
from scoring.report import report_markdown
from scoring.stats import CONFIDENCE, bootstrap, rng_for
from scoring.worst import worst_objects, write_csv

SUMMARY_FORMAT = "articulate-arena-scores/1"
SUBSETS = ("eval200", "all")

#: The reported scores: column of scores.parquet, label, unit, better direction.
METRICS = (
    ("gen", "Gen", "%", "higher"),
    ("type_err_pct", "TypeErr", "%", "lower"),
    ("origin_err_m", "OriginErr", "m", "lower"),
    ("axis_err_rad", "AxisErr", "rad", "lower"),
    ("limit_range", "LimitErr range", "m or rad", "lower"),
    ("limit_dir", "LimitErr direction", "", "lower"),
    ("succ_rate_pct", "SuccRate", "%", "higher"),
    ("e_b_m", "E_B", "m", "lower"),
    ("e_phi", "E_alpha^phi", "", "lower"),
    ("e_tree", "E_alpha^{phi,tree}", "per joint", "lower"),
    ("e_tree_edit", "E_alpha^{phi,tree} edit distance", "", "lower"),
)
#: Scores defined per valid output (everything but Gen, which is over all objects).
VALID_METRICS = tuple(m[0] for m in METRICS[1:])

_I32 = pa.int32()
_F64 = pa.float64()
PAIR = pa.struct(
    [
        pa.field("pred_joint", pa.string(), nullable=False),
        pa.field("gt_joint", pa.string(), nullable=False),
        pa.field("e_phi", _F64, nullable=False),
        pa.field("fixed_pair", pa.bool_(), nullable=False),
    ]
)


def _f(name: str, type_: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable=nullable)


#: One row per object and method (JSON Schema of a row: schemas/scores.schema.json).
SCORES = pa.schema(
    [
        _f("method", pa.string(), False),
        _f("object_id", pa.string(), False),
        _f("category", pa.string(), False),
        _f("supercategory", pa.string(), False),
        _f("eval200", pa.bool_(), False),
        _f("gen", pa.bool_(), False),
        _f("error_code", pa.string()),
        _f("error_message", pa.string()),
        _f("prediction_file", pa.string()),
        _f("n_gt_joints", _I32, False),
        _f("n_pred_joints", _I32),
        _f("n_matched", _I32),
        _f("n_fixed_pairs", _I32),
        _f("n_unmatched_pred", _I32),
        _f("n_unmatched_gt", _I32),
        _f("type_err_pct", _F64),
        _f("origin_err_m", _F64),
        _f("n_origin_parallel", _I32),
        _f("axis_err_rad", _F64),
        _f("limit_range", _F64),
        _f("limit_dir", _F64),
        _f("succ_rate_pct", _F64),
        _f("n_finite_pairs", _I32),
        _f("n_eb_pairs", _I32),
        _f("e_b_m", _F64),
        _f("e_phi", _F64),
        _f("e_tree", _F64),
        _f("e_tree_edit", _F64),
        _f("e_tree_relaxation", _F64),
        _f("tree_exact", pa.bool_()),
        _f("n_inverted", _I32),
        _f("certified", pa.bool_()),
        _f("search_nodes", _I32),
        _f("exact", pa.bool_()),
        _f("pairs", pa.list_(PAIR)),
    ]
)


class ScoreError(ValueError):
    """The inputs cannot be scored: no release at the path, a bad option, an unreadable ground
    truth (a broken release, unlike a bad prediction, stops the run)."""


@dataclass(frozen=True)
class Settings:
    """What a score depends on (summary.json's settings); the defaults are `arena score`'s."""

    subset: str = defaults.SUBSET
    alpha: float = defaults.ALPHA
    kappa: float = defaults.KAPPA
    bootstrap: int = defaults.BOOTSTRAP
    seed: int = defaults.SEED
    tau_axis: float = TAU_AXIS
    tau_origin: float = TAU_ORIGIN
    confidence: float = CONFIDENCE

    def check(self) -> None:
        if self.subset not in SUBSETS:
            raise ScoreError(f"--subset must be one of {', '.join(SUBSETS)}, not {self.subset!r}")
        for name in ("alpha", "kappa"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ScoreError(f"--{name} must be a finite number > 0, got {value}")
        if self.bootstrap < 0:
            raise ScoreError(f"--bootstrap must be >= 0, got {self.bootstrap}")


@dataclass
class ScoreResult:
    """What `score_release` wrote: the output files, the summary and timings (seconds)."""

    out: Path
    summary: dict
    rows: list[dict]
    seconds: dict[str, float] = field(default_factory=dict)

    def text(self) -> str:
        files = output_files(list(self.summary["methods"]))
        lines = [
            f"Scores written to {self.out} (scores.parquet, summary.json, report.md, "
            f"{len(files['distribution']) + 1} PNG plots, {len(files['worst'])} worst-objects "
            "tables; report.md lists them)"
        ]
        for name, method in self.summary["methods"].items():
            s, c = method["scores"], method["coverage"]
            e_tree = s["e_tree"]["mean"]
            lines.append(
                f"  {name:<24} Gen {c['gen']}/{c['objects']}  E_tree "
                + (f"{e_tree:.4f}" if e_tree is not None else "-")
                + f"  certified {c['certified']}/{c['gen']}"
            )
        lines.append(f"  {self.seconds.get('total', 0.0):.1f} s")
        return "\n".join(lines)


# --------------------------------------------------------------------------- inputs
def ground_truth_index(release: Path, subset: str) -> list[dict]:
    """The release objects to score, sorted by object_id: object_id, urdf_path, category,
    supercategory, eval200 (from manifest/objects.parquet)."""
    import pyarrow.parquet as pq

    path = Path(release) / "manifest" / "objects.parquet"
    if not path.is_file():
        raise ScoreError(f"{release} is not a release: {path} does not exist")
    columns = ["object_id", "urdf_path", "category", "supercategory", "eval200"]
    try:
        rows = pq.read_table(path, columns=columns).to_pylist()
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise ScoreError(f"cannot read {path}: {exc}") from exc
    if subset == "eval200":
        rows = [r for r in rows if r["eval200"]]
    return sorted(rows, key=lambda r: r["object_id"])


def release_ids(release: Path) -> set[str]:
    """Every object id of the release's objects manifest."""
    import pyarrow.parquet as pq

    path = Path(release) / "manifest" / "objects.parquet"
    try:
        return set(pq.read_table(path, columns=["object_id"]).column("object_id").to_pylist())
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise ScoreError(f"cannot read {path}: {exc}") from exc


def checked_release(release: Path, subset: str, accept_modified: bool = False) -> list[str]:
    """Check what scoring reads of a release against its checksums.sha256: release.json and the
    manifests first, then the files of every object of `subset`. Raises ScoreError naming the
    files that are missing or modified, unless `accept_modified`; then returns them as
    warnings."""
    from export import release as releases

    def manifests(name: str) -> bool:
        return name == releases.RELEASE_JSON or name.startswith("manifest/")

    try:
        said = releases.check_integrity(release, manifests, accept_modified=accept_modified)
        ids = {row["object_id"] for row in ground_truth_index(release, subset)}
        said += releases.check_integrity(
            release,
            lambda name: name.startswith("objects/") and name.split("/")[1] in ids,
            accept_modified=accept_modified,
        )
    except releases.ReleaseError as exc:
        raise ScoreError(str(exc)) from exc
    return said


def unmatched_predictions(release: Path, predictions: Mapping[str, Path]) -> dict[str, list]:
    """Per method, the sub-folders of its prediction folder that name no object of the release
    (a typo, or predictions for another release): they are not scored, so they are named."""
    ids = release_ids(release)
    unmatched = {}
    for name, folder in predictions.items():
        extra = sorted(p.name for p in Path(folder).iterdir() if p.is_dir() and p.name not in ids)
        if extra:
            unmatched[name] = extra
    return unmatched


def parse_predictions(specs: Sequence[str]) -> dict[str, Path]:
    """NAME=PATH strings as {name: folder}, in the given order; ScoreError on a malformed spec,
    a repeated name or a folder that does not exist."""
    out: dict[str, Path] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        name = name.strip()
        if not sep or not name or not path:
            raise ScoreError(f"--pred {spec!r}: expected NAME=PATH")
        if name in out:
            raise ScoreError(f"--pred: method name {name!r} is given twice")
        folder = Path(path)
        if not folder.is_dir():
            raise ScoreError(f"--pred {name}: prediction folder {folder} does not exist")
        out[name] = folder
    if not out:
        raise ScoreError("give at least one --pred NAME=PATH")
    return out


# --------------------------------------------------------------------------- per object
def _read_prediction(folder: Path, object_id: str):
    """(kinematics, file relative to the method folder) or (None, code, message)."""
    target = folder / object_id
    if not target.is_dir():
        return None, "prediction.missing", f"no folder {object_id} in {folder}"
    try:
        entry = find_entry(target)
        if not is_inside(entry, folder):  # a link to the ground truth must not score perfect
            return (
                None,
                "prediction.outside",
                f"{entry.relative_to(folder).as_posix()} leads out of the prediction folder "
                f"{folder}; it was not read",
            )
        regular_status(entry)  # a FIFO or device: file.not_regular, never opened blocking
        return kinematics(read_any(entry)), entry.relative_to(folder).as_posix(), None
    except AssetError as exc:
        return None, exc.code, str(exc)
    except Exception as exc:  # an untrusted file: any failure to read it is a failed output
        return None, "prediction.unreadable", f"{type(exc).__name__}: {exc}"


#: Columns every row gets from the release (the rest come from the comparison).
_BASE_COLUMNS = ("method", "object_id", "category", "supercategory", "eval200", "gen")


def _empty_values() -> dict:
    return {f.name: None for f in SCORES if f.name not in _BASE_COLUMNS}


def score_object(gt_row: dict, release: Path, predictions: Mapping[str, Path], settings) -> list:
    """One row per method for one release object (see SCORES)."""
    gt_path = Path(release) / gt_row["urdf_path"]
    try:
        gt = kinematics(read_any(gt_path))
    except (AssetError, ValueError, OSError) as exc:
        raise ScoreError(f"ground truth {gt_row['object_id']} cannot be read: {exc}") from exc
    base = {
        "object_id": gt_row["object_id"],
        "category": gt_row["category"],
        "supercategory": gt_row["supercategory"],
        "eval200": bool(gt_row["eval200"]),
    }
    rows = []
    for method, folder in predictions.items():
        row = {"method": method, **base, **_empty_values()}
        row["n_gt_joints"] = int(gt.moving.sum())
        pred, detail, message = _read_prediction(Path(folder), gt_row["object_id"])
        if pred is None:
            row.update(gen=False, error_code=detail, error_message=message)
        else:
            comparison = compare(pred, gt, settings)
            row.update(object_values(comparison, pred, gt))
            row.update(gen=True, error_code=None, error_message=None, prediction_file=detail)
        rows.append(row)
    return rows


def _score_chunk(args) -> list[dict]:
    gt_rows, release, predictions, settings = args
    return [
        row for gt_row in gt_rows for row in score_object(gt_row, release, predictions, settings)
    ]


def score_objects(
    release: Path,
    predictions: Mapping[str, Path],
    settings: Settings,
    workers: int = defaults.WORKERS,
) -> list[dict]:
    """Rows for every object of the subset and every method, sorted by (method, object_id).
    `workers` > 1 spreads the objects over that many processes."""
    index = ground_truth_index(release, settings.subset)
    predictions = {name: Path(path).absolute() for name, path in predictions.items()}
    release = Path(release).absolute()
    if workers <= 1 or len(index) < 2 * workers:
        rows = _score_chunk((index, release, predictions, settings))
    else:
        size = max(1, math.ceil(len(index) / (4 * workers)))
        chunks = [
            (index[i : i + size], release, predictions, settings)
            for i in range(0, len(index), size)
        ]
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            rows = [row for part in pool.map(_score_chunk, chunks) for row in part]
    order = {name: i for i, name in enumerate(predictions)}
    return sorted(rows, key=lambda r: (order[r["method"]], r["object_id"]))


# --------------------------------------------------------------------------- aggregates
def _number(value) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _intervals(interval, keys) -> dict:
    return {
        key: {
            "mean": _number(interval.mean[j]),
            "low": _number(interval.low[j]),
            "high": _number(interval.high[j]),
            "n": int(interval.n[j]),
        }
        for j, key in enumerate(keys)
    }


def _matrix(rows: list[dict], keys) -> np.ndarray:
    return np.array(
        [[np.nan if r[k] is None else r[k] for k in keys] for r in rows], dtype=float
    ).reshape(len(rows), len(keys))


def _scores(rows: list[dict], rng: np.random.Generator, settings: Settings) -> dict:
    """Every score's mean and bootstrap interval over `rows` (one method's objects): Gen over
    all of them, the others within the valid outputs (resampled with the same generator)."""
    gen = bootstrap(
        np.array([[100.0 * r["gen"]] for r in rows]).reshape(-1, 1),
        settings.bootstrap,
        rng,
        settings.confidence,
    )
    values = _matrix([r for r in rows if r["gen"]], VALID_METRICS)
    return {
        **_intervals(gen, ["gen"]),
        **_intervals(
            bootstrap(values, settings.bootstrap, rng, settings.confidence), VALID_METRICS
        ),
    }


def _supercategories(rows: list[dict], method: str, settings: Settings) -> dict:
    """Per supercategory (sorted): objects, valid outputs and `_scores` over its objects, each
    resampled with its own stream seeded by (seed, method, supercategory)."""
    names = sorted({r["supercategory"] for r in rows})
    out = {}
    for name in names:
        group = [r for r in rows if r["supercategory"] == name]
        rng = rng_for(settings.seed, method, f"supercategory {name}")
        out[name] = {
            "objects": len(group),
            "gen": sum(1 for r in group if r["gen"]),
            "scores": _scores(group, rng, settings),
        }
    return out


def summarize(rows: list[dict], methods: Sequence[str], settings: Settings) -> dict:
    """Per method: coverage, failure codes, every score's mean with its bootstrap interval, and
    the same per supercategory; per pair of methods: the paired bootstrap of the differences on
    their common objects."""
    by_method = {m: [r for r in rows if r["method"] == m] for m in methods}
    summary: dict = {"methods": {}, "paired": []}
    valid_values = {}
    for method, method_rows in by_method.items():
        valid = [r for r in method_rows if r["gen"]]
        values = _matrix(valid, VALID_METRICS)
        valid_values[method] = {r["object_id"]: v for r, v in zip(valid, values, strict=True)}
        scores = _scores(method_rows, rng_for(settings.seed, method), settings)
        certified = sum(1 for r in valid if r["certified"])
        summary["methods"][method] = {
            "scores": scores,
            "coverage": {
                "objects": len(method_rows),
                "gen": len(valid),
                "pairs": sum(r["n_finite_pairs"] for r in valid),
                "eb_pairs": sum(r["n_eb_pairs"] for r in valid),
                "eb_objects": sum(1 for r in valid if r["e_b_m"] is not None),
                "matched_pairs": sum(r["n_matched"] for r in valid),
                "fixed_pairs": sum(r["n_fixed_pairs"] for r in valid),
                "certified": certified,
                "searched": len(valid) - certified,
                "not_exact": sum(1 for r in valid if not r["tree_exact"]),
                "inverted_pairs": sum(r["n_inverted"] for r in valid),
                "certified_share": certified / len(valid) if valid else None,
                "search_share": (len(valid) - certified) / len(valid) if valid else None,
            },
            "failures": dict(
                sorted(Counter(r["error_code"] for r in method_rows if not r["gen"]).items())
            ),
            "supercategories": _supercategories(method_rows, method, settings),
        }
    for i, a in enumerate(methods):
        for b in methods[i + 1 :]:
            common = sorted(set(valid_values[a]) & set(valid_values[b]))
            diff = np.array(
                [valid_values[a][o] - valid_values[b][o] for o in common], dtype=float
            ).reshape(len(common), len(VALID_METRICS))
            interval = bootstrap(
                diff, settings.bootstrap, rng_for(settings.seed, a, b), settings.confidence
            )
            summary["paired"].append(
                {
                    "a": a,
                    "b": b,
                    "n_common": len(common),
                    "differences": _intervals(interval, VALID_METRICS),
                }
            )
    return summary


# --------------------------------------------------------------------------- outputs
def scores_table(rows: list[dict]) -> pa.Table:
    """The rows as an Arrow table of the SCORES schema (row order kept)."""
    return pa.Table.from_pylist(rows, schema=SCORES)


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def output_files(methods: Sequence[str]) -> dict:
    """Names of the files written beside scores.parquet, summary.json and report.md: per method
    its E distribution plot and worst-objects table, and the supercategory plot. A method name
    becomes a file name part of letters, digits, '_', '.' and '-' (made unique)."""
    stems: dict[str, str] = {}
    for method in methods:
        base = _UNSAFE_NAME.sub("-", method).strip("-.") or "method"
        stem, k = base, 2
        while stem.lower() in {s.lower() for s in stems.values()}:
            stem, k = f"{base}-{k}", k + 1
        stems[method] = stem
    return {
        "distribution": {m: f"e-distribution-{s}.png" for m, s in stems.items()},
        "supercategories": "e-supercategories.png",
        "worst": {m: f"worst-objects-{s}.csv" for m, s in stems.items()},
    }


def write_outputs(out: Path, rows: list[dict], summary: dict) -> None:
    """scores.parquet, summary.json, the plots and worst-objects tables (`output_files`) and
    report.md into `out` (created; files replaced). The worst objects link the browser of the
    release at summary["release"]["path"], relative to `out`."""
    from export.manifests import write_table

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    schemas.validate(summary, "score_summary", source="summary.json")
    write_table(scores_table(rows), out / "scores.parquet.tmp")
    os.replace(out / "scores.parquet.tmp", out / "scores.parquet")
    text = json.dumps(summary, indent=2, allow_nan=False) + "\n"
    (out / "summary.json").write_text(text, encoding="utf-8")
    methods = summary["methods"]
    files = output_files(list(methods))
    release = Path(summary["release"]["path"])
    worst = {method: worst_objects(rows, method, release, out) for method in methods}
    for method, name in files["worst"].items():
        write_csv(out / name, worst[method])
    for method, name in files["distribution"].items():
        method_rows = [r for r in rows if r["method"] == method]
        distribution_plot(out / name, method, method_rows, methods[method]["scores"])
    supercategory_plot(out / files["supercategories"], summary)
    report = report_markdown(summary, METRICS, files, worst)
    (out / "report.md").write_text(report, encoding="utf-8")


def _release_info(release: Path) -> dict:
    info = {"path": str(Path(release).absolute()), "version": None, "content_hash": None}
    path = Path(release) / "release.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ScoreError(f"cannot read {path}: {exc}") from exc
        info.update(version=data.get("version"), content_hash=data.get("content_hash"))
    return info


def build_summary(release: Path, predictions: Mapping[str, Path], rows, settings) -> dict:
    """summary.json: format, release, settings, object count, then `summarize`."""
    return {
        "format": SUMMARY_FORMAT,
        "release": _release_info(release),
        "settings": {
            "subset": settings.subset,
            "alpha": settings.alpha,
            "kappa": settings.kappa,
            "bootstrap": settings.bootstrap,
            "seed": settings.seed,
            "confidence": settings.confidence,
            "tau_axis": settings.tau_axis,
            "tau_origin": settings.tau_origin,
        },
        "n_objects": len({r["object_id"] for r in rows}),
        "predictions": {name: str(Path(path).absolute()) for name, path in predictions.items()},
        "unmatched_predictions": unmatched_predictions(release, predictions),
        **summarize(rows, list(predictions), settings),
    }


def score_release(
    release: Path,
    predictions: Mapping[str, Path],
    out: Path,
    settings: Settings = Settings(),
    workers: int = defaults.WORKERS,
) -> ScoreResult:
    """Score every method's predictions against the release and write the outputs into `out`.

    predictions: {method name: folder with one sub-folder per object id}. Raises ScoreError
    for unusable inputs; a missing or unreadable prediction is a failed output, not an error.
    """
    settings.check()
    started = time.perf_counter()
    rows = score_objects(release, predictions, settings, workers=workers)
    scored = time.perf_counter()
    summary = build_summary(release, predictions, rows, settings)
    summarized = time.perf_counter()
    write_outputs(out, rows, summary)
    done = time.perf_counter()
    seconds = {
        "objects": scored - started,
        "summary": summarized - scored,
        "write": done - summarized,
        "total": done - started,
    }
    return ScoreResult(Path(out), summary, rows, seconds)
