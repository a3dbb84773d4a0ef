"""What the per-object chain (`pipeline.chain`) decided for one candidate: `ObjectOutcome`, the
record the release is assembled from (`export.assemble`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: The fields that are the decision itself, stored in the result cache; the others say how this
#: build came by it.
DECISION_FIELDS = (
    "object_id",
    "source",
    "source_id",
    "source_path",
    "accepted",
    "rows",
    "reject",
    "files",
    "preview",
)


@dataclass
class ObjectOutcome:
    """One candidate's outcome: accepted with its manifest rows and files, or rejected with its
    `manifest/rejects.parquet` row.

    - `rows`: table name (objects, joints, links, review) -> the object's manifest rows
      (accepted only).
    - `reject`: its rejects row (`export.manifests.reject_row`), rejected only.
    - `files`: path in the object folder -> sha256 of every shipped file (accepted only).
    - `preview`: what `pipeline.chain._previews` says of the previews (accepted only).
    - `cached`: taken from the result cache instead of computed; `inputs`: every file the
      stages read (path -> sha256); `seconds`: the object's stage record
      (`normalize.timing`); `internal_error`: a stage raised an unexpected exception.
    """

    object_id: str
    source: str
    source_id: str
    source_path: str | None
    accepted: bool
    rows: dict[str, list[dict]] = field(default_factory=dict)
    reject: dict | None = None
    files: dict[str, str] = field(default_factory=dict)
    preview: dict | None = None
    cached: bool = False
    inputs: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    internal_error: bool = False

    def decision(self) -> dict:
        """The decision as the result cache stores it (JSON: `DECISION_FIELDS`)."""
        values = asdict(self)
        return {name: values[name] for name in DECISION_FIELDS if values[name] is not None}

    @classmethod
    def from_decision(cls, stored: dict, **how) -> ObjectOutcome:
        """The outcome of a stored `decision()`, with `how` (cached, inputs, seconds)."""
        return cls(**{name: stored.get(name) for name in DECISION_FIELDS}, **how)


class OutcomeFile:
    """One source's outcomes on disk, one JSON line each, appended as its batches finish and
    read back (each time it is iterated) by the assembly: the build process keeps only their
    count, so its memory does not grow with the number of objects. Not thread-safe: writers
    share a lock."""

    def __init__(self, path: Path):
        self.path, self.count = Path(path), 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(b"")

    def add(self, outcomes: Iterable[ObjectOutcome]) -> None:
        lines = [json.dumps(asdict(o)) + "\n" for o in outcomes]
        with open(self.path, "a", encoding="utf-8") as f:
            f.writelines(lines)
        self.count += len(lines)

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[ObjectOutcome]:
        for _, outcome in self.positions():
            yield outcome

    def positions(self) -> Iterator[tuple[int, ObjectOutcome]]:
        """Each outcome with its position in the file, which `at` reads it back from."""
        with open(self.path, "rb") as f:
            position = 0
            for line in f:
                yield position, ObjectOutcome(**json.loads(line))
                position += len(line)

    def at(self, position: int) -> ObjectOutcome:
        """The outcome at `position` (from `positions`): the assembly reads one object back
        when it needs it instead of keeping them all."""
        with open(self.path, "rb") as f:
            f.seek(position)
            return ObjectOutcome(**json.loads(f.readline()))
