"""`arena validate --html`: one self-contained page with each object's verdict, its failing and
warning checks and its previews at rest and at its limits."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import html as lxml_html
from PIL import Image
from verify_assets import box, door_urdf, write

ARENA = Path(sys.executable).parent / "arena"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A good door, a frozen hinge (warning: nothing moves), a door whose hinge is 0.3 m away
    (warning: attachment, to review), an 80 m door (fails fidelity.size) and a malformed file
    (fails before normalization)."""
    root = tmp_path_factory.mktemp("validate_html") / "lib"
    write(root / "good", {"door.urdf": door_urdf()})
    write(root / "frozen", {"door.urdf": door_urdf(lower=0.0, upper=0.0)})
    write(root / "detached", {"door.urdf": door_urdf(hinge_offset=0.3)})
    giant = door_urdf(
        frame_geometry=box((40.0, 64.0, 80.0)), door_geometry=box((1.6, 64.0, 80.0), (0, -32, 0))
    ).replace('origin xyz="0.26 0.4 0"', 'origin xyz="20.8 32 0"')
    write(root / "giant", {"door.urdf": giant})
    write(root / "broken", {"door.urdf": '<robot name="x"><link name="a"></robot>'})
    return root


@pytest.fixture(scope="module")
def report(library, gl_backend):
    out = library.parent / "report.html"
    run = subprocess.run(
        [str(ARENA), "validate", str(library), "--html", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr  # one object fails
    assert "Traceback" not in run.stderr and "detached" in run.stdout  # the table still prints
    return out


def sections(report: Path) -> dict:
    page = lxml_html.fromstring(report.read_bytes())
    return {s.get("id"): s for s in page.xpath("//section[contains(@class, 'object')]")}, page


def by_name(found: dict, name: str):
    [section] = [s for s in found.values() if f"__{name}__" in s.findtext("h2")]
    return section


def test_every_object_has_its_verdict_and_checks(report):
    found, page = sections(report)
    assert len(found) == 5
    assert len(page.xpath("//table[@class='overview']/tbody/tr")) == 5
    statuses = {
        name: by_name(found, name).get("data-status")
        for name in ("good", "frozen", "detached", "giant", "broken")
    }
    assert statuses == {
        "good": "pass",
        "frozen": "warn",
        "detached": "warn",
        "giant": "fail",
        "broken": "fail",
    }
    detached = by_name(found, "detached").text_content()
    assert "Warnings" in detached and "attachment.axis" in detached
    assert "its axis passes 0.3 m from the part it turns" in detached
    giant = by_name(found, "giant").text_content()
    assert "Failing checks" in giant and "fidelity.size" in giant
    # limits [0, 0]: written as a fixed joint, so the object has no moving joint
    assert "structure.moving_joints" in by_name(found, "frozen").text_content()
    assert "xml.malformed" in by_name(found, "broken").text_content()
    assert "2 fail" in page.findtext(".//p[@class='summary']")


def test_previews_are_embedded_at_rest_and_at_the_limits(report):
    found, page = sections(report)
    frozen = by_name(found, "frozen").xpath(".//figure")
    assert [f.get("class") for f in frozen] == ["view rest"], "nothing moves: the rest pose only"
    for name in ("good", "detached", "giant"):  # a failing object shows how it moves too
        figures = by_name(found, name).xpath(".//figure")
        assert [f.get("class") for f in figures] == ["view lower", "view rest", "view upper"]
        for figure in figures:
            src = figure.find("img").get("src")
            assert src.startswith("data:image/png;base64,")
            image = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1])))
            assert image.size == (256, 256)
    good = by_name(found, "good").xpath(".//figure")
    assert good[2].findtext("figcaption") == "upper (joint_0 = 1.5)"
    broken = by_name(found, "broken")
    assert not broken.xpath(".//img")
    assert "not normalized" in broken.findtext(".//p[@class='no-previews']")


def test_the_page_needs_nothing_from_outside(report):
    _, page = sections(report)
    assert not page.xpath("//script | //link | //iframe | //object")
    sources = page.xpath("//@src | //@href")
    assert sources and all(s.startswith(("data:", "#")) for s in sources)


def test_an_html_path_in_a_missing_folder_is_a_usage_error(library, tmp_path):
    run = subprocess.run(
        [str(ARENA), "validate", str(library / "good"), "--html", str(tmp_path / "no" / "r.html")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2 and "--html" in run.stderr and "Traceback" not in run.stderr
