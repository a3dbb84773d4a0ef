"""The release browser and the `arena validate --html` page in a real browser: Debian's
headless Chromium driven by Selenium through Debian's chromedriver (nothing downloaded).

Each test checks what a person sees (rows, a filter narrowing them, an object page with its
previews loaded, no console errors) and saves a screenshot under its temporary folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from verify_assets import door_urdf, write

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


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium with its own profile under tmp_path; skipped (or failed when
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
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'profile'}"):
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


def choose(driver, select_id: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, select_id)).select_by_value(value)


LOADED = "Array.from(document.querySelectorAll('{0}')).every(i => i.complete && i.naturalWidth > 0)"


def test_the_release_browser_lists_filters_and_opens_an_object(browser, sample_release, tmp_path):
    from selenium.webdriver.common.by import By

    objects = pd.read_parquet(sample_release / "manifest" / "objects.parquet")
    browser.get((sample_release / "index.html").as_uri())
    wait_for(browser, "document.querySelectorAll('#objects tbody tr').length > 0")
    assert rows(browser) == len(objects) == 40
    assert browser.find_element(By.ID, "count").text == "40 of 40 objects"
    wait_for(browser, LOADED.format("#objects tbody tr:first-child img"))

    supercategory = "Storage Furniture"
    choose(browser, "f-supercategory", supercategory)
    expected = int((objects["supercategory"] == supercategory).sum())
    assert 0 < expected < 40 and rows(browser) == expected
    listed = browser.find_elements(By.CSS_SELECTOR, "#objects tbody tr td:nth-child(4)")
    assert {cell.text for cell in listed} == {supercategory}
    choose(browser, "f-supercategory", "")
    choose(browser, "f-joint", "helical")
    assert rows(browser) == int((objects["n_helical"] > 0).sum()) > 0
    choose(browser, "f-joint", "")
    assert rows(browser) == 40

    cabinet = sorted(objects.loc[objects["category"] == "storage_furniture", "object_id"])[0]
    browser.find_element(By.LINK_TEXT, cabinet).click()
    wait_for(browser, "!document.getElementById('object').classList.contains('hidden')")
    panel = browser.find_element(By.ID, "object")
    assert panel.find_element(By.TAG_NAME, "h2").text == cabinet
    assert rows(browser) == 0, "the object's page replaces the list"
    groups = panel.find_elements(By.CSS_SELECTOR, ".group h4")
    assert groups[0].text.startswith("all ") and len(groups) >= 3
    wait_for(browser, LOADED.format("#object .group:first-of-type img"))
    first = panel.find_elements(By.CSS_SELECTOR, ".group img")[:3]
    assert [img.get_attribute("naturalWidth") for img in first] == ["256"] * 3
    tree = panel.find_element(By.CLASS_NAME, "tree").text
    n_joints = int(objects.set_index("object_id").loc[cabinet, "n_joints"])
    assert tree.startswith("base") and tree.count("(prismatic)") + tree.count("(revolute)") == (
        n_joints
    )
    assert (
        panel.find_element(By.LINK_TEXT, "object.urdf")
        .get_attribute("href")
        .endswith(f"objects/{cabinet}/object.urdf")
    )
    browser.save_screenshot(str(tmp_path / "object_page.png"))
    browser.find_element(By.LINK_TEXT, "back to the list").click()
    wait_for(browser, "document.querySelectorAll('#objects:not(.hidden) tbody tr').length == 40")
    browser.save_screenshot(str(tmp_path / "list.png"))
    assert (tmp_path / "object_page.png").stat().st_size > 10_000
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
