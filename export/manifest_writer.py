"""Manifests written while the release is assembled, one object's rows at a time
(`TableWriter`): not part of an object's cached result, so this module is not in the code
fingerprint (`pipeline.chain._FINGERPRINTED`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from export.manifests import PARQUET_SETTINGS, SCHEMAS, to_table


class TableWriter:
    """A manifest written as its rows arrive, one object's rows at a time in the order of the
    table's first sort key (object_id): rows become Arrow columns every BATCH_ROWS rows and a
    row group every ROWS_PER_GROUP rows, so the build process never holds a whole table. The
    same rows give the same bytes, and a table of fewer rows the bytes of `write_table`."""

    BATCH_ROWS = 1024
    ROWS_PER_GROUP = 65_536

    def __init__(self, name: str, path: Path):
        self.name, self.count = name, 0
        self.rows: list[dict] = []
        self.batches: list[pa.Table] = []
        self.writer = pq.ParquetWriter(str(path), SCHEMAS[name], **PARQUET_SETTINGS)

    def add(self, rows: list[dict]) -> None:
        """Rows of the next object (sorted here by the rest of the sort key)."""
        self.rows += rows
        self.count += len(rows)
        if len(self.rows) >= self.BATCH_ROWS:
            self._to_batch()
            if sum(b.num_rows for b in self.batches) >= self.ROWS_PER_GROUP:
                self._write_group()

    def _to_batch(self) -> None:
        if self.rows:
            self.batches.append(to_table(self.name, self.rows))
            self.rows = []

    def _write_group(self) -> None:
        if self.batches:
            group = pa.concat_tables(self.batches).combine_chunks()
            self.writer.write_table(group, row_group_size=1 << 20)
            self.batches = []

    def close(self) -> None:
        self._to_batch()
        self._write_group()
        self.writer.close()


class RowBatches:
    """Rows of `schema` kept as Arrow record batches of TableWriter.BATCH_ROWS rows as they
    arrive (`add`), `table` at the end: a row as a Python dict takes kilobytes, in a batch
    its columns' bytes."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.rows: list[dict] = []
        self.batches: list[pa.RecordBatch] = []

    def add(self, row: dict) -> None:
        missing = [name for name in self.schema.names if name not in row]
        if missing:  # Arrow would make them null
            raise KeyError(f"row of {row.get('object_id')} lacks {missing}")
        self.rows.append(row)
        if len(self.rows) >= TableWriter.BATCH_ROWS:
            self._to_batch()

    def _to_batch(self) -> None:
        if self.rows:
            self.batches.append(pa.RecordBatch.from_pylist(self.rows, schema=self.schema))
            self.rows = []

    def table(self) -> pa.Table:
        self._to_batch()
        return pa.Table.from_batches(self.batches, schema=self.schema)
