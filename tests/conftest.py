"""Shared fixtures. The real corpus lives beside the checkout at ../shared/corpus."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pipeline.build import BuildConfig, BuildResult

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"
CORPUS_SOURCES = Path(__file__).parent / "corpus_sources.yaml"


# CI sets this: a missing corpus then fails the tests that need it instead of skipping them.
REQUIRE_CORPUS = os.environ.get("ARENA_REQUIRE_CORPUS") == "1"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """Root of the shared real-data corpus (PROVENANCE.md lists its libraries). Without it the
    test is skipped (a fresh clone has no corpus), or fails when ARENA_REQUIRE_CORPUS=1."""
    if not (CORPUS / "PROVENANCE.md").is_file():
        reason = f"needs the shared corpus, missing at {CORPUS} (CI has it beside the checkout)"
        if REQUIRE_CORPUS:
            pytest.fail(reason + "; ARENA_REQUIRE_CORPUS=1 forbids skipping")
        pytest.skip(reason)
    return CORPUS


# CI sets this too: without a headless GL backend, preview tests fail instead of skipping.
REQUIRE_PREVIEWS = os.environ.get("ARENA_REQUIRE_PREVIEWS") == "1"


@pytest.fixture(scope="session")
def gl_backend():
    """The preview renderer's GL backend (`previews.backend()`); the test is skipped when there
    is none (no libegl1 or libosmesa6), or fails when ARENA_REQUIRE_PREVIEWS=1."""
    import previews

    found = previews.backend()
    if not found.available:
        reason = f"needs a headless GL backend to render previews: {found.detail}"
        if REQUIRE_PREVIEWS:
            pytest.fail(reason + "; ARENA_REQUIRE_PREVIEWS=1 forbids skipping")
        pytest.skip(reason)
    return found


@pytest.fixture(scope="session")
def corpus_sources(corpus) -> dict:
    """name -> SourceConfig of every library in tests/corpus_sources.yaml, in the file's order."""
    from normalize.sources import load_sources

    return {source.name: source for source in load_sources(CORPUS_SOURCES)}


@pytest.fixture(scope="session")
def corpus_candidates(corpus_sources) -> dict:
    """object_id -> Candidate of every corpus source, discovered once per session (sources in
    the file's order, each sorted by source_id)."""
    from normalize.adapters import discover

    return {c.object_id: c for s in corpus_sources.values() for c in discover(s)}


@pytest.fixture(scope="session")
def sample_library(tmp_path_factory) -> Path:
    """The generated demo library (`generate_library(n=0, seed=0)`: 40 objects in 5 sources),
    written once per session. Tests read it in place; a test that changes it works on a copy."""
    from samples.generate import generate_library

    root = tmp_path_factory.mktemp("sample") / "library"
    generate_library(root, n=0, seed=0)
    return root


#: What a test build is unless the test says otherwise: without Prefect, in one worker process.
TEST_BUILD = {"version": "test", "runner": "local", "workers": 1}


def _sources_file(sources: Path) -> Path:
    """A sources file, or the sources.yaml of a library folder."""
    return sources / "sources.yaml" if sources.is_dir() else sources


class Builds:
    """The tests' builds (the `builds` fixture): TEST_BUILD, no cache (`cache_dir` None) and no
    live display, unless a test says otherwise. `sources`: a library folder (its sources.yaml),
    a sources file, or a list of SourceConfig (`config` and `release` only)."""

    def config(self, sources, out: Path, cache_dir: Path | None = None, **fields) -> BuildConfig:
        """The BuildConfig of the build; `fields`: its other fields."""
        from normalize.sources import load_sources
        from pipeline.build import BuildConfig

        if not isinstance(sources, list):
            sources = load_sources(_sources_file(Path(sources)))
        fields = {**TEST_BUILD, "live": False, **fields}
        return BuildConfig(sources=sources, out=out, cache_dir=cache_dir, **fields)

    def release(self, sources, out: Path, cache_dir: Path | None = None, **fields) -> BuildResult:
        """The build as `flows.commands.build_release` runs it: its BuildResult."""
        from flows.commands import build_release

        return build_release(self.config(sources, out, cache_dir, **fields))

    def command(self, sources: Path, out: Path, cache_dir: Path | None = None, **options) -> int:
        """The build as `arena build` (`flows.commands.build_command`; `options`: its other
        keywords): its exit code."""
        from flows.commands import build_command

        return build_command(
            sources=_sources_file(Path(sources)),
            out=out,
            cache_dir=cache_dir,
            no_cache=cache_dir is None,
            **{**TEST_BUILD, **options},
        )


@pytest.fixture(scope="session")
def builds() -> Builds:
    """How the tests build a release (`Builds`): as a config, in this process, or as `arena
    build`."""
    return Builds()


@pytest.fixture(scope="session")
def sample_release(sample_library, tmp_path_factory, builds) -> Path:
    """The release of the sample library, built once per session in this process (`builds`:
    no Prefect, no cache, version "test"). Read-only."""
    out = tmp_path_factory.mktemp("sample_release") / "release"
    builds.release(sample_library, out)
    return out


#: The source `decided_release` adds to the sample library.
DOORS_SOURCE = {
    "name": "doors",
    "format": "urdf",
    "path": "doors",
    "license": "CC-BY-4.0 (test doors)",
    "spdx": "CC-BY-4.0",
    "url": "https://github.com/example/doors",
    "revision": "0123456789abcdef0123456789abcdef01234567",
}


@pytest.fixture(scope="session")
def decided_release(sample_library, tmp_path_factory) -> Path:
    """A release with every kind of decision: the sample library and a source `doors` (with
    its own license, url and revision) of a good door (accepted), a door hinged far from it
    (accepted, to review: attachment.axis), reversed limits and malformed XML (rejected).
    Built once per session like `sample_release`. Read-only."""
    import yaml
    from verify_assets import door_urdf, write

    from flows.commands import build_release
    from normalize.sources import load_sources
    from pipeline.build import BuildConfig

    library = tmp_path_factory.mktemp("decided") / "library"
    shutil.copytree(sample_library, library)
    write(
        library / "doors",
        {
            "good/cabinet.urdf": door_urdf(),
            "far/cabinet.urdf": door_urdf(hinge_offset=1.0),
            "reversed/cabinet.urdf": door_urdf(lower=1.5, upper=0.0),
            "broken/cabinet.urdf": '<robot name="x"><link name="a"></robot>',
        },
    )
    sources = yaml.safe_load((library / "sources.yaml").read_text(encoding="utf-8"))
    sources["sources"].append(DOORS_SOURCE)
    (library / "sources.yaml").write_text(yaml.safe_dump(sources, sort_keys=False))
    out = library.parent / "release"
    config = BuildConfig(
        sources=load_sources(library / "sources.yaml"),
        out=out,
        version="test",
        runner="local",
        workers=1,
        live=False,
    )
    build_release(config)
    return out


# Prefect reads its settings when first imported: give the test session a private PREFECT_HOME
# (never the developer's profiles or database), quiet logs and no telemetry, before any test
# module imports it.
_PREFECT_HOME = tempfile.mkdtemp(prefix="arena-test-prefect-")
atexit.register(shutil.rmtree, _PREFECT_HOME, True)
os.environ["PREFECT_HOME"] = _PREFECT_HOME
os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

# One mesh store for the session's builds and normalize runs (`normalize.meshes.shared_store`):
# each corpus mesh is parsed, and its mass computed, once rather than once per test build. Set
# in the first process, before `make test` starts its others, which inherit it.
if "ARENA_MESH_STORE" not in os.environ:
    _MESH_STORE = tempfile.mkdtemp(prefix="arena-test-meshes-")
    atexit.register(shutil.rmtree, _MESH_STORE, True)
    os.environ["ARENA_MESH_STORE"] = _MESH_STORE


# One object cache for the session's builds of corpus sources (`corpus_cache`), shared by the
# test processes like the mesh store: the corpus release's cold build fills it, and the score and
# duplicate modules, run after it (`pytest_collection_modifyitems`), reuse its objects.
if "ARENA_TEST_CORPUS_CACHE" not in os.environ:
    _CORPUS_CACHE = tempfile.mkdtemp(prefix="arena-test-corpus-cache-")
    atexit.register(shutil.rmtree, _CORPUS_CACHE, True)
    os.environ["ARENA_TEST_CORPUS_CACHE"] = _CORPUS_CACHE

#: the module whose build fills `corpus_cache` first, and the modules that reuse it
CORPUS_CACHE_FILLER = "test_release_corpus"
CORPUS_CACHE_READERS = ("test_score_corpus", "test_duplicates_corpus")


@pytest.fixture(scope="session")
def corpus_cache(corpus) -> Path:
    """The object cache every test process's corpus builds share (entries are stored by atomic
    renames, so concurrent builds may write it)."""
    return Path(os.environ["ARENA_TEST_CORPUS_CACHE"])


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect server for every flow test of the session (it takes 16-24 s to
    start on a 2-core machine, longer when it first creates its database)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def prefect_api_url(prefect_harness) -> str:
    """The address of the session's Prefect API, for `arena build` subprocesses that need not
    start a temporary server of their own (PREFECT_API_URL in their environment)."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


def pytest_collection_modifyitems(items):
    """Mark every test that reads the shared corpus `corpus`, so that `make test-fast` can leave
    them out with the slow ones; then put the modules with slow or corpus tests first.
    `make test` hands whole modules to its processes in this order (`--dist loadscope
    --no-loadscope-reorder`: a module's fixtures are built once), so the long modules start
    first and the short ones fill in at the end. The corpus release (the longest module, whose
    cold build fills `corpus_cache`) comes first of all, the modules reusing that cache last of
    the long ones."""
    for item in items:
        if "corpus" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.corpus)
    heavy = {
        item.path.stem
        for item in items
        if item.get_closest_marker("slow") or item.get_closest_marker("corpus")
    }

    def order(item) -> int:
        module = item.path.stem
        if module == CORPUS_CACHE_FILLER:
            return 0
        if module in CORPUS_CACHE_READERS:
            return 2
        return 1 if module in heavy else 3

    items.sort(key=order)
