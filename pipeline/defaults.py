"""The defaults of a build, written once: `pipeline.build.BuildConfig`,
`flows.commands.build_command` and the options of `arena build` take them from here (a module
that imports nothing, so the command line reads them without importing the stages)."""

BATCH_SIZE = 64  # objects per batch
WORKERS = 2  # worker processes computing the objects
RUNNER = "process"  # Prefect flows, batches in the worker processes
