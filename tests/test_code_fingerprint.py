"""The code fingerprint covers what computing an object runs, and not the code that only
assembles the release: editing the browser keeps every cached object, editing the renderer
recomputes them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline import chain

REPO = Path(chain.__file__).resolve().parents[1]

_WORKER_MODULES = """
import json, sys
import normalize.run, verify.run, pipeline.chain
print(json.dumps(sorted(m.__file__ for m in list(sys.modules.values())
                        if getattr(m, "__file__", None))))
"""


def _fingerprinted(path: Path) -> bool:
    relative = path.relative_to(REPO).as_posix()
    return any(relative == e or relative.startswith(e + "/") for e in chain._FINGERPRINTED)


#: project modules a worker imports that store results rather than compute them: the cache
#: (its FORMAT versions its entries) and the outcome record, with their packages
STORAGE_ONLY = {
    "pipeline/__init__.py",
    "pipeline/cache.py",
    "export/__init__.py",
    "export/outcome.py",
}


def test_every_project_module_a_worker_imports_for_the_stages_is_fingerprinted():
    run = subprocess.run(
        [sys.executable, "-c", _WORKER_MODULES],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    files = [Path(f).resolve() for f in json.loads(run.stdout.splitlines()[-1])]
    project = [
        f
        for f in files
        if f.is_relative_to(REPO) and not f.relative_to(REPO).parts[0].startswith(".")
    ]
    assert any(f.name == "render.py" for f in project)
    assert "schemas/__init__.py" in {f.relative_to(REPO).as_posix() for f in project}
    unfingerprinted = {f.relative_to(REPO).as_posix() for f in project if not _fingerprinted(f)}
    assert unfingerprinted == STORAGE_ONLY


def test_editing_the_browser_keeps_the_fingerprint_and_editing_the_renderer_changes_it(
    tmp_path, monkeypatch
):
    copy = tmp_path / "repo"
    for entry in (*chain._FINGERPRINTED, "previews"):
        source = REPO / entry
        if source.is_dir():
            shutil.copytree(source, copy / entry, dirs_exist_ok=True)
        else:
            (copy / entry).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy / entry)
    monkeypatch.setattr(chain, "_REPO", copy)
    fingerprint = chain.code_fingerprint.__wrapped__  # computed anew, not the process's
    before = fingerprint()
    for assembly_only in ("browser.py", "card.py", "report.py"):
        with (copy / "previews" / assembly_only).open("a") as f:
            f.write("\n# edited\n")
    assert fingerprint() == before
    with (copy / "previews" / "render.py").open("a") as f:
        f.write("\n# edited\n")
    edited_renderer = fingerprint()
    assert edited_renderer != before
    schema = copy / "schemas" / "normalize_report.schema.json"
    schema.write_text(schema.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert fingerprint() != edited_renderer, "a schema the stages validate against"
