"""An object's recorded inputs are files of its source, the same whichever process computes it
and whatever that process computed before: never the pipeline's own files (its packaged
taxonomy, loaded once per process; the temporary URDF the swap check writes and reads back),
which made a source's snapshot in release.json differ from one build of it to the next."""

from __future__ import annotations

from normalize.adapters import discover
from normalize.sources import load_sources
from pipeline import chain
from samples.generate import generate_library
from taxonomy import data


def test_inputs_are_the_sources_files_and_do_not_depend_on_the_process(tmp_path):
    generate_library(tmp_path / "library", n=2, seed=3)
    sources = load_sources(tmp_path / "library" / "sources.yaml")
    candidates = [(s, c) for s in sources for c in discover(s)][:2]
    staging = tmp_path / "staging"
    (staging / "objects").mkdir(parents=True)
    versions = chain.current_versions()
    settings = chain.BatchSettings(staging, cache_dir=None, overrides=(), versions=versions)
    data._load_default.cache_clear()  # as in a new worker: the taxonomy is not loaded yet
    first = list(chain.batch_outcomes([c for _, c in candidates], settings))
    again = list(chain.batch_outcomes([c for _, c in reversed(candidates)], settings))[::-1]
    for (source, _), one, other in zip(candidates, first, again, strict=True):
        assert one.accepted, one.reject
        root = str(source.path.resolve())
        assert one.inputs and all(path.startswith(root) for path in one.inputs), one.inputs
        assert one.inputs == other.inputs
