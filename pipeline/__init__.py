"""The build without Prefect: the per-object chain of stages, its cache, and the whole build.

- `chain`: one object through normalize -> verify -> taxonomy -> manifest rows, cached.
- `cache`: the content-keyed object cache.
- `build`: discovery, batches, worker processes, accounting, assembly and publish.
- `defaults`: the build's defaults (`BuildConfig`'s and `arena build`'s).

`flows` orchestrates these same functions as Prefect flows and tasks.
"""
