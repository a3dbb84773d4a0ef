"""What the release says about duplicates: release.json counts and the dataset card's section."""

from __future__ import annotations

from collections import Counter


def library_pairs(rows: list[dict]) -> Counter:
    """Duplicates (non-canonical members) by "canonical source + member source"."""
    source_of = {r["object_id"]: r["source"] for r in rows}
    return Counter(
        f"{source_of[r['canonical_id']]} + {r['source']}"
        for r in rows
        if r["decision"] != "override.distinct" and not r["is_canonical"]
    )


def counts(rows: list[dict]) -> dict:
    members = {r["object_id"] for r in rows if r["decision"] != "override.distinct"}
    clusters = {r["cluster_id"] for r in rows if r["decision"] != "override.distinct"}
    return {
        "clusters": len(clusters),
        "members": len(members),
        "moved_out": sum(r["handling"] == "move_out" for r in rows),
        "by_library_pair": dict(sorted(library_pairs(rows).items())),
    }


def card_section(rows: list[dict]) -> str:
    """Markdown for the card: clusters found and duplicates by library pair."""
    c = counts(rows)
    lines = [
        "",
        "## Duplicates",
        "",
        f"{c['members']} objects are copies of one another: {c['clusters']} clusters of the same "
        "physical object (`manifest/duplicates.parquet` lists every member with its "
        "evidence). Each cluster has one canonical member (`objects.is_canonical`); splits are "
        "drawn by cluster and eval200 holds canonical members only.",
    ]
    if c["moved_out"]:
        lines.append(
            f"{c['moved_out']} non-canonical members were moved out (rejects, code `duplicate.of`)."
        )
    if c["by_library_pair"]:
        lines += ["", "| canonical source + duplicate source | duplicates |", "| --- | --- |"]
        lines += [f"| {pair} | {n} |" for pair, n in c["by_library_pair"].items()]
    return "\n".join(lines) + "\n"
