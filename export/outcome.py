"""What the per-object chain (`pipeline.chain`) decided for one candidate: `ObjectOutcome`, the
record the release is assembled from (`export.assemble`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

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

    def rejected_as(self, reject: dict) -> ObjectOutcome:
        """This outcome turned into a rejection with `reject` (e.g. moved out as a duplicate)."""
        return replace(self, accepted=False, rows={}, reject=reject, files={}, preview=None)
