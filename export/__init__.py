"""The export stage: a release from the accepted objects.

- `manifests`: Arrow schemas and rows of the Parquet manifests.
- `selection`: the hashed train/validation/test split and the eval200 evaluation set.
- `assemble`: manifests, plots, release.json, CHANGELOG.md, the card and checksums in staging.
- `release`: locking, staging, atomic publish, checksums, versions, changelog and card text.
- `digests`: sha256 helpers shared by the manifests, the checksums and the cache.
- `outcome`: `ObjectOutcome`, what the per-object chain decided for one object.
"""
