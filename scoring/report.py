"""report.md: the scores in the layout of the paper's Table 4 (methods as rows; a group row,
the column names and their units, means), the same columns with 95 % bootstrap intervals (the
intervals of its Tables 6 and 8), the coverage in the layout of Table 7 (Gen, Pair) with the
exact search's diagnostics beside it, the paired differences, the means per supercategory, the
plots, each method's worst objects with links to the release's browser, the failure codes and
the list of files written."""

from __future__ import annotations

from scoring.worst import WORST_OBJECTS

LABELS = {
    "gen": "Gen ↑ (%)",
    "type_err_pct": "TypeErr ↓ (%)",
    "origin_err_m": "OriginErr ↓ (m)",
    "axis_err_rad": "AxisErr ↓ (rad)",
    "limit": "LimitErr ↓ (range / dir)",
    "succ_rate_pct": "SuccRate ↑ (%)",
    "e_b_m": "E_B ↓ (m)",
    "e_phi": "E_α^φ ↓",
    "e_tree": "E_α^{φ,tree} ↓",
    "e_tree_edit": "E^{φ,tree} edit distance ↓",
}
#: What each column of the main table averages (one line each under the table).
AVERAGES = {
    "gen": "share of all objects with a valid output.",
    "type_err_pct": "per object, the share of its component pairs with another joint type; "
    "then the mean over objects.",
    "origin_err_m": "per object, the mean origin error over its component pairs; then over "
    "objects.",
    "axis_err_rad": "per object, the mean unsigned axis angle over its component pairs; then "
    "over objects.",
    "limit": "per object, the mean LimitErr range ‖m_p − m_g‖ and direction 1 − cos over the "
    "component pairs where they are defined (finite limits, non-zero ranges); then over objects.",
    "succ_rate_pct": "per object, the share of its component pairs that succeed (same type, "
    "axis and origin within τ_a, τ_p); then over objects.",
    "e_b_m": "per object, the mean E_B over its component pairs with finite limits on both "
    "sides (ground-truth child link's kinetic norm); then over objects.",
    "e_phi": "per object, the mean of its edit script's terms (E^φ of each matched pair, "
    "E^φ(J, J0) of each unmatched moving joint); then over objects.",
    "e_tree": "per object, the exact unrooted tree edit distance divided by the number of "
    "moving joints of both objects (our reading of the paper's normalization, "
    "docs/scoring.md); then over objects.",
    "e_tree_edit": "per object, the exact unrooted tree edit distance itself (a sum over "
    "joints, not normalized); then over objects.",
}
#: Table 4's group row and units row (the paper's layout), column by column after Method.
GROUPS = ["Prior per-component scores", "", "", "", "", "", "Ours", "", "", ""]
UNITS = ["(%)", "(%)", "(m)", "(rad)", "(range / dir)", "(%)", "(m)", "", "(per joint)", ""]
#: Differences shown in the paired table (summary.json holds every score).
PAIRED = ("e_tree", "e_phi", "e_b_m", "succ_rate_pct")


def _digits(key: str) -> int:
    return 1 if key.endswith("pct") or key == "gen" else 3


def _value(stat: dict, key: str, signed: bool = False) -> str:
    if stat["mean"] is None:
        return "–"
    d = _digits(key)
    sign = "+" if signed else ""

    def number(x: float) -> str:
        return f"{round(x, d) + 0.0:{sign}.{d}f}"  # + 0.0 turns -0.0 into 0.0

    text = number(stat["mean"])
    if stat["low"] is not None:
        text += f" [{number(stat['low'])}, {number(stat['high'])}]"
    return text


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _best(methods: dict, key: str, direction: str) -> float | None:
    means = [m["scores"][key]["mean"] for m in methods.values()]
    means = [v for v in means if v is not None]
    if len(means) < 2:
        return None
    return max(means) if direction == "higher" else min(means)


def _value_cells(cell, name: str) -> list[str]:
    """A method's row of the main columns (LABELS order), each cell from `cell(name, key)`."""
    limit = cell(name, "limit_range") + " / " + cell(name, "limit_dir")
    keys = ("gen", "type_err_pct", "origin_err_m", "axis_err_rad")
    tail = ("succ_rate_pct", "e_b_m", "e_phi", "e_tree", "e_tree_edit")
    return [cell(name, k) for k in keys] + [limit] + [cell(name, k) for k in tail]


def _supercategory_lines(summary: dict, files: dict) -> list[str]:
    methods = summary["methods"]
    names = sorted({s for m in methods.values() for s in m["supercategories"]})
    lines = [
        "",
        "## Per supercategory",
        "",
        "Means of E_α^{φ,tree} over each supercategory's valid outputs with bootstrap "
        "intervals (resampling the supercategory's objects, as for the whole subset). "
        f"`{files['supercategories']}` plots them with E_B (m).",
        "",
        f"![Means per supercategory]({files['supercategories']})",
        "",
    ]
    rows = []
    for name in names:
        groups = [m["supercategories"].get(name) for m in methods.values()]
        objects = max(g["objects"] for g in groups if g is not None)
        cells = ["–" if g is None else _value(g["scores"]["e_tree"], "e_tree") for g in groups]
        rows.append([name, str(objects), *cells])
    return lines + _table(["Supercategory", "Objects", *methods], rows)


def _worst_lines(worst: dict, files: dict) -> list[str]:
    lines = [
        "",
        "## Worst objects",
        "",
        f"Per method, the {WORST_OBJECTS} valid outputs with the highest E_α^{{φ,tree}} above 0 "
        "(ties by object id; failed outputs have no E and are counted under Failed outputs). "
        "Each id links its page in the release's browser "
        "(`index.html#object=<id>`), relative to this report's folder: the links work while the "
        "report and the release stay where `arena score` found them.",
    ]
    for method, objects in worst.items():
        lines += ["", f"### {method}", "", f"Also in `{files['worst'][method]}`.", ""]
        rows = [
            [
                str(o["rank"]),
                f"[{o['object_id']}]({o['link']})",
                o["supercategory"],
                o["category"],
                *(_value({"mean": o[k], "low": None}, k) for k in ("e_tree", "e_phi", "e_b_m")),
            ]
            for o in objects
        ]
        header = ["Rank", "Object", "Supercategory", "Category"]
        header += [LABELS[k].replace(" ↓", "") for k in ("e_tree", "e_phi", "e_b_m")]
        lines += _table(header, rows) if rows else ["No valid output with E_α^{φ,tree} > 0."]
    return lines


def _files_lines(files: dict) -> list[str]:
    listed = [
        ("scores.parquet", "one row per object and method (schemas/scores.schema.json)"),
        ("summary.json", "means, intervals, coverage (schemas/score_summary.schema.json)"),
        ("report.md", "this report"),
    ]
    listed += [
        (name, f"{method}: E over objects (distribution functions)")
        for method, name in files["distribution"].items()
    ]
    listed.append((files["supercategories"], "means per supercategory with intervals"))
    listed += [
        (name, f"{method}: worst objects with browser links")
        for method, name in files["worst"].items()
    ]
    return ["", "## Files", "", *(f"- `{name}`: {what}" for name, what in listed)]


def report_markdown(summary: dict, metrics, files: dict, worst: dict) -> str:
    """The Markdown report of a summary (see scoring.score.build_summary); `metrics` is
    scoring.score.METRICS (key, label, unit, better direction), `files` the names of the
    plots and tables (scoring.score.output_files), `worst` each method's worst objects
    (scoring.worst.worst_objects)."""
    methods = summary["methods"]
    settings = summary["settings"]
    release = summary["release"]
    direction = {key: better for key, _, _, better in metrics}
    best = {key: _best(methods, key, direction[key]) for key in direction}

    def cell(name: str, key: str, intervals: bool = True) -> str:
        stat = methods[name]["scores"][key]
        text = _value(stat if intervals else {**stat, "low": None}, key)
        if best[key] is not None and stat["mean"] == best[key]:
            text = f"**{text}**"
        return text

    def mean_cell(name: str, key: str) -> str:
        return cell(name, key, intervals=False)

    lines = [
        "# Scores",
        "",
        f"Release {release['version'] or '(unversioned)'} at `{release['path']}`"
        + (f", content hash `{release['content_hash'][:16]}`" if release["content_hash"] else "")
        + f"; subset {settings['subset']}: {summary['n_objects']} objects.",
        "",
        f"Split norm α = {settings['alpha']:g}, compactification κ = {settings['kappa']:.6g}; "
        f"success thresholds τ_a = {settings['tau_axis']:g} rad, τ_p = {settings['tau_origin']:g} "
        f"m. Means over objects with {round(100 * settings['confidence'])} % percentile "
        f"bootstrap intervals ({settings['bootstrap']} resamples of objects, seed "
        f"{settings['seed']}), each method within its own valid outputs. Gen is over all "
        "objects; every other column is conditional on a valid output. Bold: best mean.",
        "",
        "## Articulated reconstruction (the layout of the paper's Table 4)",
        "",
        "Means over objects. E_α^{φ,tree} is the exact unrooted tree edit distance per moving "
        "joint of both objects (the normalization is our reading, docs/scoring.md); the raw "
        "edit distance is the last column, under its own name.",
        "",
    ]
    names = [label.rsplit(" (", 1)[0] for label in LABELS.values()]
    rows = [["", *names], ["", *UNITS]]
    rows += [[name, *_value_cells(mean_cell, name)] for name in methods]
    lines += _table(["", *GROUPS], rows)
    lines += [
        "",
        "## Means with bootstrap intervals (every column; the paper's Tables 6 and 8)",
        "",
    ]
    rows = [[name, *_value_cells(cell, name)] for name in methods]
    lines += _table(["Method", *LABELS.values()], rows)
    lines += ["", "What each column averages:", ""]
    lines += [f"- {LABELS[key]}: {text}" for key, text in AVERAGES.items()]
    lines += [
        "",
        "## Coverage (the layout of the paper's Table 7)",
        "",
        "Gen counts objects with a valid output; Pair counts the component joint pairs (matched "
        "and fixed pairs) with finite predicted and ground-truth limits.",
        "",
    ]
    rows = [
        [name, str(method["coverage"]["gen"]), str(method["coverage"]["pairs"])]
        for name, method in methods.items()
    ]
    lines += _table(["Method", "Gen", "Pair"], rows)
    lines += [
        "",
        "Beside it: Objects scored; E_B objects have at least one Pair whose ground-truth child "
        "link has a usable mass distribution. Certified: objects whose exact E_α^{φ,tree} the "
        "assignment relaxation certified; Search: objects that needed the exact search; Not "
        "exact: objects whose search stopped at its node budget (their tree values are the "
        "best matching found); Reversed pairs: matched joints on edges oriented the other way "
        "(a prediction rooted at another part), compared with the inverse joint.",
        "",
    ]
    rows = []
    for name, method in methods.items():
        c = method["coverage"]
        keys = ("objects", "eb_objects", "certified", "searched", "not_exact", "inverted_pairs")
        rows.append([name, *(str(c[k]) for k in keys)])
    lines += _table(
        ["Method", "Objects", "E_B objects", "Certified", "Search", "Not exact", "Reversed pairs"],
        rows,
    )
    if summary["paired"]:
        lines += [
            "",
            "## Paired differences",
            "",
            "Mean of (A − B) over the objects both methods score, with a paired percentile "
            "bootstrap interval (the same objects resampled for both).",
            "",
        ]
        rows = [
            [f"{p['a']} − {p['b']}", str(p["n_common"])]
            + [_value(p["differences"][key], key, signed=True) for key in PAIRED]
            for p in summary["paired"]
        ]
        labels = [f"Δ {LABELS[k].replace(' ↓', '').replace(' ↑', '')}" for k in PAIRED]
        lines += _table(["A − B", "Common objects", *labels], rows)
    lines += _supercategory_lines(summary, files)
    lines += [
        "",
        "## Distributions of E over objects",
        "",
        "Per method, the share of its valid outputs with E at most x, for E_α^{φ,tree} "
        "(per joint, dimensionless) and E_B (m), with the mean and its bootstrap interval.",
    ]
    for method, name in files["distribution"].items():
        lines += ["", f"![{method}: E over objects]({name})"]
    lines += _worst_lines(worst, files)
    failures = [
        [name, code, str(count)]
        for name, method in methods.items()
        for code, count in method["failures"].items()
    ]
    if failures:
        lines += ["", "## Failed outputs", ""]
        lines += _table(["Method", "Code", "Objects"], failures)
    unmatched = summary["unmatched_predictions"]
    if unmatched:
        lines += [
            "",
            "## Predictions for objects the release does not have",
            "",
            "Not scored: these sub-folders of a prediction folder name no object of the release.",
            "",
        ]
        rows = [
            [name, str(len(ids)), ", ".join(ids[:20]) + (" ..." if len(ids) > 20 else "")]
            for name, ids in unmatched.items()
        ]
        lines += _table(["Method", "Folders", "Names"], rows)
    lines += _files_lines(files)
    return "\n".join(lines) + "\n"
