"""Release-browser benchmark: how long index.html takes to open with 20,000 objects.

    .venv/bin/python bench/browser_bench.py [--objects 20000]

Builds the demo release (sample library, no Prefect) into a temporary folder, then writes a
synthetic release folder whose browser data repeats the demo's 40 objects under new ids up to
`--objects` (their details included: kinematic trees, file lists, joint groups, source files
with their sha256; data.js and the details files have the sizes a real release of that many
objects would have); the first rows' thumbnails are links to the demo's. Opens it from
file:// in Debian's headless Chromium (Selenium) and reads the navigation timing: load event
(the data parsed and the first 200 rows drawn), the time a supercategory filter and a sort by
moving joints take over every object, and how long the page of an object in the middle takes
to show (its details file loaded). Writes bench/results/browser_bench.json.
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
from previews.browser import DATA, DETAILS, INDEX, read_data, write_browser
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


def synthetic_release(demo: Path, out: Path, n: int) -> dict:
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
    details = sorted(p.stat().st_size for p in (out / DETAILS).iterdir())
    return {
        "data_js_bytes": (out / DATA).stat().st_size,
        "data_js_bytes_per_object": round((out / DATA).stat().st_size / n, 1),
        "details_files": len(details),
        "details_bytes_per_object": round(sum(details) / n, 1),
        "largest_details_file_bytes": details[-1],
    }


def open_in_chromium(root: Path, profile: Path, middle: str) -> dict:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

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
        changed = (
            "const s = document.getElementById(arguments[0]); s.value = arguments[1];"
            "const t0 = performance.now(); s.dispatchEvent(new Event('change'));"
            "return performance.now() - t0;"
        )
        supercategory = driver.execute_script(
            "return document.getElementById('supercategory').options[1].value"
        )
        filter_ms = driver.execute_script(changed, "supercategory", supercategory)
        driver.execute_script(changed, "supercategory", "")
        sort_ms = driver.execute_script(changed, "sort", "-joints")
        started = time.perf_counter()
        driver.execute_script("location.hash = 'object=' + arguments[0]", middle)
        WebDriverWait(driver, 60).until(
            lambda d: d.execute_script(
                "return document.getElementById('object').dataset.shown === arguments[0]", middle
            )
        )
        object_s = time.perf_counter() - started
    finally:
        driver.quit()
    return {
        "get_s": round(wall, 3),
        "dom_content_loaded_ms": round(timing[0], 1),
        "load_event_ms": round(timing[1], 1),
        "rows_drawn": timing[2],
        "count_text": timing[3],
        "supercategory_filter_ms": round(filter_ms, 1),
        "sort_by_moving_joints_ms": round(sort_ms, 1),
        "object_page_s": round(object_s, 3),
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
        demo_bytes = (demo / DATA).stat().st_size
        sizes = synthetic_release(demo, tmp / "big", args.objects)
        middle = sorted(o["id"] for o in read_data(tmp / "big")["objects"])[args.objects // 2]
        result = {
            "objects": args.objects,
            "demo_data_js_bytes_per_object": round(demo_bytes / len(read_data(demo)["objects"]), 1),
            **sizes,
            "load_before": os.getloadavg(),
            "chromium": open_in_chromium(tmp / "big", tmp / "profile", middle),
            "load_after": os.getloadavg(),
        }
    RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
