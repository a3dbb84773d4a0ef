"""Release-browser benchmark: how long index.html takes to open with 20,000 objects.

    .venv/bin/python bench/browser_bench.py [--objects 20000]

Builds the demo release (sample library, no Prefect) into a temporary folder, then writes a
synthetic release folder whose browser data repeats the demo's 40 objects under new ids up to
`--objects` (their kinematic trees, file lists and joint groups included: the data file has
the size a real release of that many objects would have); the first rows' thumbnails are
links to the demo's. Opens it from file:// in Debian's headless Chromium (Selenium) and reads
the navigation timing: load event (the data parsed and the first 200 rows drawn), and the time
a supercategory filter takes over every object. Writes bench/results/browser_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from flows.commands import build_release
from normalize.sources import load_sources
from pipeline.build import BuildConfig
from previews.browser import INDEX, read_data, write_browser
from samples.generate import generate_library

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "browser_bench.json"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1200,1400",
)
LINKED_FOLDERS = 400  # rows whose thumbnails exist (the first page shows 200)


def synthetic_release(demo: Path, out: Path, n: int) -> int:
    data = read_data(demo)
    base = data["objects"]
    objects = []
    for i in range(n):
        o = dict(base[i % len(base)])
        o["id"] = f"{o['id']}__copy{i:05d}"
        objects.append(o)
        if i < LINKED_FOLDERS:
            os.makedirs(out / "objects", exist_ok=True)
            os.symlink(demo / "objects" / base[i % len(base)]["id"], out / "objects" / o["id"])
    write_browser(out, {**data, "objects": objects})
    return (out / "browser" / "data.js").stat().st_size


def open_in_chromium(root: Path, profile: Path) -> dict:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(service=service, options=options)
    try:
        started = time.perf_counter()
        driver.get((root / INDEX).as_uri())
        wall = time.perf_counter() - started
        timing = driver.execute_script(
            "const t = performance.getEntriesByType('navigation')[0];"
            "return [t.domContentLoadedEventEnd, t.loadEventEnd,"
            " document.querySelectorAll('#objects tbody tr').length,"
            " document.getElementById('count').textContent];"
        )
        filter_ms = driver.execute_script(
            "const s = document.getElementById('f-supercategory');"
            "s.value = s.options[1].value; const t0 = performance.now();"
            "s.dispatchEvent(new Event('change')); return performance.now() - t0;"
        )
    finally:
        driver.quit()
    return {
        "get_s": round(wall, 3),
        "dom_content_loaded_ms": round(timing[0], 1),
        "load_event_ms": round(timing[1], 1),
        "rows_drawn": timing[2],
        "count_text": timing[3],
        "supercategory_filter_ms": round(filter_ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as tmp:
        tmp = Path(tmp)
        generate_library(tmp / "library", n=0)
        demo = tmp / "demo"
        build_release(
            BuildConfig(
                sources=load_sources(tmp / "library" / "sources.yaml"),
                out=demo,
                version="bench",
                runner="local",
                workers=1,
                cache_dir=None,
                live=False,
            )
        )
        size = synthetic_release(demo, tmp / "big", args.objects)
        result = {
            "objects": args.objects,
            "data_js_bytes": size,
            "load_before": os.getloadavg(),
            "chromium": open_in_chromium(tmp / "big", tmp / "profile"),
            "load_after": os.getloadavg(),
        }
    RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
