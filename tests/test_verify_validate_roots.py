"""`arena validate FILE` confines references to the enclosing package or model folder, not to the
file's own folder; `--root` and `--package-root` widen it; an unknown package:// package is
`path.package_unresolved`, naming the package and every folder looked in."""

from __future__ import annotations

from verify_assets import CUBE_OBJ, box, door_urdf, mesh, write

from verify.validate import candidates_for, validate_command, validate_paths

PACKAGE_XML = "<package format='2'><name>{name}</name><version>1.0.0</version></package>"


def door_with_mesh(reference: str) -> str:
    return door_urdf(door_geometry=mesh(reference, xyz=(0.0, -0.4, 0.0), scale=(0.02, 0.8, 1.0)))


def ros_package(folder, reference: str, *, name: str = "door_description"):
    """The standard layout: pkg/package.xml, pkg/urdf/door.urdf, pkg/meshes/door.obj."""
    return write(
        folder,
        {
            "package.xml": PACKAGE_XML.format(name=name),
            "urdf/door.urdf": door_with_mesh(reference),
            "meshes/door.obj": CUBE_OBJ,
        },
    )


def test_a_file_in_the_standard_package_layout_resolves_relative_and_package_references(tmp_path):
    for i, reference in enumerate(
        ("../meshes/door.obj", "package://door_description/meshes/door.obj")
    ):
        pkg = ros_package(tmp_path / f"pkg{i}", reference)
        [report] = validate_paths([pkg / "urdf" / "door.urdf"], workers=1)
        assert report.status == "pass", [(c.id, c.message) for c in report.failures]
        assert report.source_id == "urdf/door"


def test_a_package_found_by_its_package_xml_name_in_a_differently_named_folder(tmp_path):
    pkg = ros_package(tmp_path / "checkout", "package://door_description/meshes/door.obj")
    [candidate] = candidates_for([pkg / "urdf"])
    assert candidate.source.path == pkg  # the folder given lies inside the package
    [report] = validate_paths([pkg / "urdf"], workers=1)
    assert report.status == "pass", [(c.id, c.message) for c in report.failures]


def test_references_stay_confined_to_the_package_unless_root_is_given(tmp_path):
    write(tmp_path / "ws", {"shared/door.obj": CUBE_OBJ})
    pkg = ros_package(tmp_path / "ws" / "pkg", "../../shared/door.obj")
    [report] = validate_paths([pkg / "urdf" / "door.urdf"], workers=1)
    assert [c.id for c in report.failures] == ["path.outside_root"]
    [report] = validate_paths([pkg / "urdf" / "door.urdf"], workers=1, root=tmp_path / "ws")
    assert report.status == "pass", [(c.id, c.message) for c in report.failures]


def test_without_a_package_or_model_folder_the_files_folder_confines(tmp_path):
    folder = write(tmp_path / "plain", {"urdf/door.urdf": door_with_mesh("../door.obj")})
    write(folder, {"door.obj": CUBE_OBJ})
    [report] = validate_paths([folder / "urdf" / "door.urdf"], workers=1)
    assert [c.id for c in report.failures] == ["path.outside_root"]


def test_an_unknown_package_is_unresolved_naming_it_and_every_place_looked_in(tmp_path):
    pkg = ros_package(tmp_path / "pkg", "package://other_meshes/meshes/door.obj")
    [report] = validate_paths([pkg / "urdf" / "door.urdf"], workers=1)
    [failure] = report.failures
    assert failure.id == "path.package_unresolved"
    assert "'other_meshes'" in failure.message and "--package-root" in failure.message
    for looked in (pkg / "urdf", pkg / "urdf" / "other_meshes", pkg, pkg / "other_meshes"):
        assert str(looked) in failure.message
    assert "mesh.missing" not in failure.message


def test_package_root_provides_a_package_outside_the_confinement(tmp_path):
    pkg = ros_package(tmp_path / "ws" / "src" / "door", "package://door_meshes/meshes/door.obj")
    write(tmp_path / "ws" / "src" / "door_meshes", {"meshes/door.obj": CUBE_OBJ})
    (pkg / "meshes" / "door.obj").unlink()
    [report] = validate_paths(
        [pkg / "urdf" / "door.urdf"], workers=1, package_roots=[tmp_path / "ws" / "src"]
    )
    assert report.status == "pass", [(c.id, c.message) for c in report.failures]


def test_a_package_that_exists_but_lacks_the_file_is_a_missing_mesh_at_a_real_path(tmp_path):
    pkg = ros_package(tmp_path / "pkg", "package://door_description/meshes/gone.obj")
    [report] = validate_paths([pkg / "urdf" / "door.urdf"], workers=1)
    [failure] = report.failures
    assert failure.id == "mesh.missing" and str(pkg / "meshes" / "gone.obj") in failure.message


def test_root_and_package_root_must_be_folders_holding_the_path(tmp_path, capsys):
    pkg = ros_package(tmp_path / "pkg", "../meshes/door.obj")
    write(tmp_path / "elsewhere", {"a.urdf": door_urdf(frame_geometry=box((1, 1, 1)))})
    entry = pkg / "urdf" / "door.urdf"
    assert validate_command([entry], root=tmp_path / "elsewhere") == 2
    assert validate_command([entry], package_roots=[tmp_path / "none"]) == 2
    err = capsys.readouterr().err
    assert "not inside --root" in err and "--package-root" in err


def test_a_model_config_folder_confines_like_a_package(tmp_path):
    model = write(
        tmp_path / "door_model",
        {
            "model.config": "<model><name>door</name><sdf>model.sdf</sdf></model>",
            "urdf/door.urdf": door_with_mesh("../meshes/door.obj"),
            "meshes/door.obj": CUBE_OBJ,
        },
    )
    [report] = validate_paths([model / "urdf" / "door.urdf"], workers=1)
    assert report.status == "pass", [(c.id, c.message) for c in report.failures]


def test_a_worker_starts_sapiens_child_before_importing_the_stages(monkeypatch):
    """SAPIEN's import (1 to 2 s) in its child overlaps the worker's own imports and usd-core's
    load, instead of following them."""
    import importlib

    import verify.checks.usd
    import verify.sapien_process
    from verify import validate

    calls = []
    monkeypatch.setattr(verify.sapien_process, "start_early", lambda: calls.append("sapien"))
    monkeypatch.setattr(verify.checks.usd, "load_usd", lambda: calls.append("usd"))
    monkeypatch.setattr(importlib, "import_module", lambda name: calls.append(name))
    assert list(validate.validated([])) == []
    assert calls == ["sapien", *validate.WORKER_MODULES, "usd"]
