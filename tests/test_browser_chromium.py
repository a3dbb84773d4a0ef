"""The release browser and the `arena validate --html` page in a real browser: Debian's
headless Chromium driven by Selenium through Debian's chromedriver (nothing downloaded).

Each test checks what a person sees (rows, filters and sorting narrowing and ordering them, the
view kept in the URL hash, object pages with their previews and provenance, no console errors)
and saves a screenshot under its temporary folder. One Chromium serves the whole module, and
the release browsed is `decided_release` (accepted, review and rejected objects), built once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import DOORS_SOURCE
from verify_assets import door_urdf, write

#: Each test builds a release: part of `make test`, not of `make test-fast`.
pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
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
# CI sets this: without Chromium, chromedriver or Selenium these tests fail instead of skipping.
REQUIRE_BROWSER = os.environ.get("ARENA_REQUIRE_BROWSER") == "1"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """A headless Chromium with its own profile, one per module; skipped (or failed when
    ARENA_REQUIRE_BROWSER=1) without Debian's chromium and chromium-driver or Selenium."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).is_file()]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("selenium (the dev extra)")
    if missing:
        reason = f"needs {', '.join(missing)} (apt-get install chromium chromium-driver)"
        if REQUIRE_BROWSER:
            pytest.fail(reason + "; ARENA_REQUIRE_BROWSER=1 forbids skipping")
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium') / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def wait_for(driver, script: str, timeout: float = 20.0):
    """Wait until the JavaScript expression `script` is truthy; returns its value."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script("return " + script))


def rows(driver) -> int:
    return driver.execute_script(
        "return document.querySelectorAll('#objects:not(.hidden) tbody tr').length"
    )


def listed(driver) -> list[str]:
    """The ids of the rows shown, in order."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#objects:not(.hidden) tbody tr'),"
        " (tr) => tr.dataset.id)"
    )


def choose(driver, select_id: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, select_id)).select_by_value(value)


def control(driver, select_id: str) -> str:
    return driver.execute_script(f"return document.getElementById('{select_id}').value")


SHOWN = "document.getElementById('object').dataset.shown === {0!r}"


def open_view(driver, release: Path, fragment: str = "") -> None:
    """Load the release's browser afresh at `index.html#<fragment>`; wait for the list (and the
    object page when the fragment names one)."""
    driver.get("about:blank")
    driver.get((release / "index.html").as_uri() + ("#" + fragment if fragment else ""))
    wait_for(driver, "document.getElementById('count').textContent !== ''")
    if "object=" in fragment:
        wait_for(driver, "document.getElementById('object').dataset.shown !== undefined")


LOADED = "Array.from(document.querySelectorAll('{0}')).every(i => i.complete && i.naturalWidth > 0)"


@pytest.fixture(scope="module")
def decided(decided_release) -> pd.DataFrame:
    """Every decided object of the release, one row each: the objects rows (with `moving`
    joints and `review`) and the rejects, with `status` accepted or rejected and their license."""
    manifest = decided_release / "manifest"
    objects = pd.read_parquet(manifest / "objects.parquet")
    moving = ["n_revolute", "n_prismatic", "n_continuous", "n_helical"]
    objects = objects.assign(
        moving=objects[moving].sum(axis=1),
        checks=objects["status"],
        status="accepted",
        review=objects["object_id"].isin(pd.read_parquet(manifest / "review.parquet")["object_id"]),
    )
    rejects = pd.read_parquet(manifest / "rejects.parquet").assign(status="rejected", review=False)
    info = json.loads((decided_release / "release.json").read_text(encoding="utf-8"))
    rejects["license"] = rejects["source"].map({s["name"]: s["license"] for s in info["sources"]})
    return pd.concat([objects, rejects], ignore_index=True).set_index("object_id", drop=False)


def test_the_release_browser_lists_filters_and_opens_an_object(
    browser, decided_release, decided, gl_backend, tmp_path
):
    from selenium.webdriver.common.by import By

    accepted = decided[decided["status"] == "accepted"]
    open_view(browser, decided_release)
    assert rows(browser) == len(accepted) == 42, "accepted objects by default"
    assert browser.find_element(By.ID, "count").text == "42 of 44 objects"
    wait_for(browser, LOADED.format("#objects tbody tr:first-child img"))

    supercategory = "Storage Furniture"
    choose(browser, "supercategory", supercategory)
    expected = int((accepted["supercategory"] == supercategory).sum())
    assert 0 < expected < 42 and rows(browser) == expected
    cells = browser.find_elements(By.CSS_SELECTOR, "#objects tbody tr td:nth-child(4)")
    assert {cell.text for cell in cells} == {supercategory}
    choose(browser, "supercategory", "")
    choose(browser, "joint", "helical")
    assert rows(browser) == int((accepted["n_helical"] > 0).sum()) > 0
    choose(browser, "joint", "")
    assert rows(browser) == 42

    cabinet = sorted(accepted.loc[accepted["source"] == "sample_mjcf"].index)[0]
    assert accepted.loc[cabinet, "category"] == "storage_furniture"
    browser.find_element(By.LINK_TEXT, cabinet).click()
    wait_for(browser, SHOWN.format(cabinet))
    panel = browser.find_element(By.ID, "object")
    assert panel.find_element(By.TAG_NAME, "h2").text == cabinet
    assert rows(browser) == 0, "the object's page replaces the list"
    groups = panel.find_elements(By.CSS_SELECTOR, ".group h4")
    assert groups[0].text.startswith("all ") and len(groups) >= 3
    wait_for(browser, LOADED.format("#object .group:first-of-type img"))
    first = panel.find_elements(By.CSS_SELECTOR, ".group img")[:3]
    assert [img.get_attribute("naturalWidth") for img in first] == ["256"] * 3
    tree = panel.find_element(By.CLASS_NAME, "tree").text
    assert tree.startswith("base") and tree.count("(prismatic)") + tree.count("(revolute)") == (
        int(accepted.loc[cabinet, "n_joints"])
    )
    assert (
        panel.find_element(By.LINK_TEXT, "object.urdf")
        .get_attribute("href")
        .endswith(f"objects/{cabinet}/object.urdf")
    )
    browser.find_element(By.LINK_TEXT, "back to the list").click()
    wait_for(browser, "document.querySelectorAll('#objects:not(.hidden) tbody tr').length == 42")
    browser.save_screenshot(str(tmp_path / "list.png"))
    assert (tmp_path / "list.png").stat().st_size > 10_000
    assert console_errors(browser) == []


def test_the_status_filter_shows_rejects_and_review_items(browser, decided_release, decided):
    from selenium.webdriver.common.by import By

    open_view(browser, decided_release)
    choose(browser, "status", "rejected")
    rejected = decided[decided["status"] == "rejected"]
    assert (
        listed(browser)
        == sorted(rejected.index)
        == [
            "doors__broken__cabinet",
            "doors__reversed__cabinet",
        ]
    )
    for tr in browser.find_elements(By.CSS_SELECTOR, "#objects tbody tr"):
        assert tr.get_attribute("data-status") == "rejected"
        row = rejected.loc[tr.get_attribute("data-id")]
        assert row["code"] in tr.text and row["message"] in tr.text
    choose(browser, "status", "review")
    # the far door (attachment.axis) and the folding chair whose seat folds into the convex hull
    # of its frame (mechanism.penetration)
    assert (
        listed(browser)
        == sorted(decided.index[decided["review"]])
        == [
            "doors__far__cabinet",
            "sample_partnet__folding_chair_0007",
        ]
    )
    assert "review" in browser.find_element(By.CSS_SELECTOR, "#objects tbody tr").text
    choose(browser, "status", "all")
    assert listed(browser) == sorted(decided.index) and len(decided) == 44
    assert browser.find_element(By.ID, "count").text == "44 of 44 objects"
    options = browser.find_elements(By.CSS_SELECTOR, "#status option")
    assert [o.text for o in options] == ["accepted (42)", "review (2)", "rejected (2)", "all (44)"]
    assert console_errors(browser) == []


def loads_in(value, name: str) -> bool:
    """Whether a `loads_in` cell (an array; NaN for rejects) holds `name`."""
    return not isinstance(value, float) and name in list(value)


FILTERS = [  # select, value, the rows it keeps (status all)
    ("supercategory", "Storage Furniture", lambda d: d["supercategory"] == "Storage Furniture"),
    ("category", "laptop", lambda d: d["category"] == "laptop"),
    ("joint", "prismatic", lambda d: d["n_prismatic"] > 0),
    ("checks", "warn", lambda d: d["checks"] == "warn"),
    ("source", "doors", lambda d: d["source"] == "doors"),
    ("split", "test", lambda d: d["split"] == "test"),
    ("eval200", "no", lambda d: d["eval200"] == False),  # noqa: E712 (NaN for rejects)
    ("license", DOORS_SOURCE["license"], lambda d: d["license"] == DOORS_SOURCE["license"]),
    ("loads", "mujoco", lambda d: d["loads_in"].map(lambda v: loads_in(v, "mujoco"))),
]


def test_each_filter_narrows_the_list(browser, decided_release, decided):
    open_view(browser, decided_release, "status=all")
    assert rows(browser) == len(decided)
    for select, value, keep in FILTERS:
        choose(browser, select, value)
        expected = sorted(decided.index[keep(decided).fillna(False).astype(bool)])
        assert 0 < len(expected) < len(decided), select
        assert listed(browser) == expected, select
        choose(browser, select, "")
        assert rows(browser) == len(decided)
    choose(browser, "source", "doors")
    choose(browser, "status", "rejected")
    assert rows(browser) == 2, "filters combine"
    assert console_errors(browser) == []


def test_sorting_orders_rows(browser, decided_release, decided):
    open_view(browser, decided_release, "status=all")
    accepted = decided[decided["status"] == "accepted"].copy()
    rejects = sorted(decided.index[decided["status"] == "rejected"])
    accepted["id"] = accepted.index
    for sort, column, ascending in (("-joints", "moving", False), ("size", "total_bytes", True)):
        choose(browser, "sort", sort)
        order = accepted.sort_values(by=[column, "id"], ascending=[ascending, True])
        assert listed(browser) == [*order.index, *rejects], "rejects (no joints, no size) last"
        values = order[column].tolist()
        assert values[0] != values[-1]
    choose(browser, "sort", "-id")
    assert listed(browser) == sorted(decided.index, reverse=True)
    assert console_errors(browser) == []


def test_the_view_is_in_the_url_hash(browser, decided_release):
    from selenium.webdriver.common.by import By

    doors = ["doors__reversed__cabinet", "doors__broken__cabinet"]
    open_view(browser, decided_release, "status=rejected&source=doors&sort=-id")
    assert [control(browser, s) for s in ("status", "source", "sort")] == [
        "rejected",
        "doors",
        "-id",
    ]
    assert listed(browser) == doors

    choose(browser, "status", "all")
    hash_ = "#status=all&source=doors&sort=-id"
    assert browser.execute_script("return location.hash") == hash_
    assert listed(browser)[0] == "doors__reversed__cabinet" and rows(browser) == 4
    browser.back()
    wait_for(browser, "location.hash === '#status=rejected&source=doors&sort=-id'")
    assert control(browser, "status") == "rejected" and listed(browser) == doors
    browser.forward()
    wait_for(browser, f"location.hash === {hash_!r}")
    assert control(browser, "status") == "all" and rows(browser) == 4

    browser.find_element(By.LINK_TEXT, "doors__good__cabinet").click()
    wait_for(browser, SHOWN.format("doors__good__cabinet"))
    assert browser.execute_script("return location.hash") == hash_ + "&object=doors__good__cabinet"
    browser.back()
    wait_for(browser, "document.getElementById('object').classList.contains('hidden')")
    assert rows(browser) == 4 and control(browser, "source") == "doors"

    browser.find_element(By.ID, "q").send_keys("far")
    assert (
        browser.execute_script("return location.hash") == "#q=far&status=all&source=doors&sort=-id"
    )
    assert listed(browser) == ["doors__far__cabinet"]
    browser.refresh()
    wait_for(browser, "document.getElementById('count').textContent !== ''")
    assert listed(browser) == ["doors__far__cabinet"] and control(browser, "q") == "far"
    assert console_errors(browser) == []


def test_an_unknown_object_id_says_so(browser, decided_release):
    from selenium.webdriver.common.by import By

    open_view(browser, decided_release, "object=no_such_object")
    panel = browser.find_element(By.ID, "object")
    assert panel.find_element(By.TAG_NAME, "h2").text == "no object no_such_object in this release"
    assert rows(browser) == 0, "not the list"
    browser.find_element(By.LINK_TEXT, "back to the list").click()
    wait_for(browser, "document.querySelectorAll('#objects:not(.hidden) tbody tr').length == 42")
    assert console_errors(browser) == []


def test_a_rejected_object_page_shows_its_code_message_and_file(browser, decided_release, decided):
    from selenium.webdriver.common.by import By

    reject = decided.loc["doors__reversed__cabinet"]
    open_view(browser, decided_release, "object=doors__reversed__cabinet")
    text = browser.find_element(By.ID, "object").text
    for expected in ("rejected", reject["code"], reject["message"], "reversed/cabinet.urdf"):
        assert expected in text
    assert DOORS_SOURCE["license"] in text
    assert console_errors(browser) == []


def test_an_object_page_shows_license_source_and_sha256s(
    browser, decided_release, gl_backend, tmp_path
):
    from PIL import Image
    from selenium.webdriver.common.by import By

    far = "doors__far__cabinet"
    open_view(browser, decided_release, f"object={far}")
    panel = browser.find_element(By.ID, "object")
    text = panel.text
    assert panel.find_element(By.TAG_NAME, "h2").text == far
    assert DOORS_SOURCE["license"] in text
    loads = pd.read_parquet(decided_release / "manifest" / "objects.parquet").set_index("object_id")
    shown = panel.find_element(By.CSS_SELECTOR, "p.loads-in").text
    assert shown == ", ".join(loads.loc[far, "loads_in"]) and "mujoco" in shown
    link = panel.find_element(By.CSS_SELECTOR, "a.source-link")
    assert link.get_attribute("href") == (f"{DOORS_SOURCE['url']}/tree/{DOORS_SOURCE['revision']}")
    assert DOORS_SOURCE["revision"] in link.text
    review = pd.read_parquet(decided_release / "manifest" / "review.parquet")
    assert review.set_index("object_id").loc[far, "reason"] in text
    files = pd.read_parquet(decided_release / "manifest" / "source_files.parquet")
    expected = files[files["object_id"] == far][["path", "sha256"]].values.tolist()
    shown = [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in panel.find_elements(By.CSS_SELECTOR, "table.sources tbody tr")
    ]
    assert shown == expected == [["far/cabinet.urdf", expected[0][1]]]
    wait_for(browser, LOADED.format("#object .group img"))

    shot = tmp_path / "object_page.png"
    browser.save_screenshot(str(shot))
    width, height, ratio = browser.execute_script(
        "return [innerWidth, innerHeight, devicePixelRatio]"
    )
    with Image.open(shot) as image:
        assert image.format == "PNG"
        assert image.size == (round(width * ratio), round(height * ratio)) and width == 1200
        pixels = image.convert("RGB")
        assert pixels.getpixel((5, 5)) == (0x28, 0x53, 0x6B), "the header's colour"
        assert len(pixels.getcolors(maxcolors=1 << 16) or []) > 100, "text and previews drawn"
    page = browser.execute_script("return document.body.textContent")
    for key in (far, DOORS_SOURCE["license"], DOORS_SOURCE["revision"], expected[0][1], "sha256"):
        assert key in page
    assert console_errors(browser) == []


def test_the_validate_report_shows_verdicts_and_previews(browser, tmp_path, gl_backend):
    from selenium.webdriver.common.by import By

    library = tmp_path / "lib"
    write(library / "good", {"door.urdf": door_urdf()})
    write(library / "detached", {"door.urdf": door_urdf(hinge_offset=0.3)})
    write(library / "broken", {"door.urdf": '<robot name="x"><link name="a"></robot>'})
    report = tmp_path / "report.html"
    arena = Path(sys.executable).parent / "arena"
    run = subprocess.run(
        [str(arena), "validate", str(library), "--html", str(report)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr
    browser.get(report.as_uri())
    sections = browser.find_elements(By.CSS_SELECTOR, "section.object")
    # detached: attachment.axis is a warning that sends the object to review
    assert [s.get_attribute("data-status") for s in sections] == ["fail", "warn", "pass"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "table.overview tbody tr")) == 3
    wait_for(browser, LOADED.format("section.object img"))
    images = browser.find_elements(By.CSS_SELECTOR, "section.object img")
    assert len(images) == 6 and {i.get_attribute("naturalWidth") for i in images} == {"256"}
    assert "attachment.axis" in sections[1].text
    browser.save_screenshot(str(tmp_path / "report.png"))
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert console_errors(browser) == []
