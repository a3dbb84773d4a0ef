"""`arena validate --html FILE`: one self-contained HTML page of a validation run.

For every object: its verdict, the failing and warning checks with their messages (and the
waived ones with their reasons), and its previews at rest and at its limits, rendered from the
normalized file the object would ship as, passing or failing (so a person adding an asset sees
the door swing the wrong way). Images are embedded as base64 PNG: the file opens anywhere,
offline, and can be sent as one attachment. No script, no external resource.
"""

from __future__ import annotations

import base64
import html
import tempfile
from pathlib import Path

from previews.gl import backend
from previews.render import PreviewError, model_file, render_object

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin: 0 0 .3em; word-break: break-all; }
table { border-collapse: collapse; } td, th { padding: .2em .6em; border-bottom: 1px solid #ddd;
  text-align: left; vertical-align: top; }
.verdict { display: inline-block; padding: 0 .5em; border-radius: .3em; color: #fff;
  font-weight: 600; }
.verdict.pass { background: #2e7d32; } .verdict.warn { background: #b7791f; }
.verdict.fail { background: #c62828; }
section.object { border: 1px solid #ccc; border-left: .5em solid #999; padding: .8em 1em;
  margin: 1em 0; border-radius: .3em; }
section.object.pass { border-left-color: #2e7d32; } section.object.warn { border-left-color:
  #b7791f; } section.object.fail { border-left-color: #c62828; }
code { background: #f3f3f3; padding: 0 .25em; } .element, .source { color: #666; }
.group { margin: .4em 0; } .group figure { display: inline-block; margin: 0 .4em 0 0; }
figure img { width: 192px; height: 192px; border: 1px solid #ddd; }
figcaption { font-size: .85em; color: #555; text-align: center; }
.no-previews { color: #666; font-style: italic; }
"""


def _e(text) -> str:
    return html.escape(str(text if text is not None else ""), quote=True)


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _checks(title: str, checks, waived: bool = False) -> list[str]:
    if not checks:
        return []
    out = [f"<h3>{_e(title)}</h3>", '<ul class="checks">']
    for c in checks:
        element = f' <span class="element">({_e(c.element)})</span>' if c.element else ""
        reason = f" &mdash; waived: {_e(c.waiver_reason)}" if waived else ""
        where = f"{c.file}:{c.line}" if c.file and c.line else c.file
        where = f"<code>{_e(where)}</code> " if where else ""
        hint = f" &mdash; {_e(c.hint)}" if c.hint else ""
        out.append(
            f"<li>{where}<code>{_e(c.id)}</code> {_e(c.message)}{element}{hint}{reason}</li>"
        )
    return out + ["</ul>"]


def _previews(folder: Path | None, scratch: Path, title: str) -> list[str]:
    """The figures of an object's previews (rendered into `scratch`), or why there are none."""
    if folder is None:
        return ['<p class="no-previews">No previews: the object was not normalized.</p>']
    gl = backend()
    if not gl.available:
        return [f'<p class="no-previews">No previews: {_e(gl.detail)}.</p>']
    try:
        document = render_object(model_file(folder), scratch, gl.name, title=title)
    except PreviewError as exc:
        return [f'<p class="no-previews">No previews: {_e(exc)}.</p>']
    views = document["views"]
    rest = views[0]
    out = ['<div class="previews">']
    groups = [g["name"] for g in document["groups"]] or [None]
    for name in groups:
        by_end = {v["end"]: v for v in views if v["group"] == name}
        label = by_end["lower"]["label"] if name else "no moving joints"
        out.append(f'<div class="group" data-group="{_e(name or "")}"><h4>{_e(label)}</h4>')
        for view in (by_end.get("lower"), rest, by_end.get("upper")):
            if view is None:
                continue
            pose = ", ".join(f"{k} = {v:g}" for k, v in view["pose"].items())
            alt = f"{title} {label} {view['end']}"
            out.append(
                f'<figure class="view {view["end"]}"><img alt="{_e(alt)}" '
                f'src="{_data_uri(scratch / view["file"])}">'
                f"<figcaption>{_e(view['end'])}{' (' + _e(pose) + ')' if pose else ''}"
                "</figcaption></figure>"
            )
        out.append("</div>")
    return out + ["</div>"]


def report_html(reports, folders, strict: bool, seconds: float) -> str:
    """The page (see the module docstring); `folders[i]`: the normalized folder of
    `reports[i]`, or None."""
    from verify.validate import summary

    s = summary(reports, strict, seconds)
    head = (
        f"{s['objects']} object(s): {s['pass']} pass, {s['warn']} warn, {s['fail']} fail in "
        f"{seconds:.1f} s" + (" (--strict: warnings fail)" if strict else "")
    )
    lines = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>arena validate: {_e(head)}</title><style>{STYLE}</style></head><body>",
        "<h1>arena validate</h1>",
        f'<p class="summary">{_e(head)}</p>',
        '<table class="overview"><thead><tr><th>object</th><th>verdict</th>'
        "<th>failing checks</th><th>warnings</th></tr></thead><tbody>",
    ]
    for i, r in enumerate(reports):
        failing = ", ".join(dict.fromkeys(c.id for c in r.failures))
        lines.append(
            f'<tr data-status="{r.status}"><td><a href="#object-{i}">{_e(r.object_id)}</a></td>'
            f'<td><span class="verdict {r.status}">{r.status}</span></td>'
            f"<td>{_e(failing)}</td><td>{_e(', '.join(r.warnings))}</td></tr>"
        )
    lines.append("</tbody></table>")
    with tempfile.TemporaryDirectory(prefix="arena-validate-previews-") as scratch:
        for i, (r, folder) in enumerate(zip(reports, folders, strict=True)):
            warned = [c for c in r.checks if c.counts and c.severity == "warning"]
            source = f"{r.source_path or r.source_id or ''} ({r.format or 'unknown format'})"
            lines += [
                f'<section class="object {r.status}" id="object-{i}" data-status="{r.status}">',
                f'<h2>{_e(r.object_id)} <span class="verdict {r.status}">{r.status}</span></h2>',
                f'<p class="source">{_e(source)}; stage {_e(r.stage)}; '
                f"{r.moving_joints if r.moving_joints is not None else 'no'} moving joints</p>",
                *_checks("Failing checks", r.failures),
                *_checks("Warnings", warned),
                *_checks("Waived by allowances", [c for c in r.checks if c.waived], waived=True),
                *_previews(folder, Path(scratch) / str(i), r.object_id),
                "</section>",
            ]
    lines.append("</body></html>")
    return "\n".join(lines) + "\n"


def html_writer(path: Path):
    """A `report_writer` for `verify.validate.validate_command` writing the page to `path`."""

    def write(reports, folders, strict: bool, seconds: float) -> None:
        Path(path).write_text(report_html(reports, folders, strict, seconds), encoding="utf-8")

    return write
