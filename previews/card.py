"""The dataset card's previews section: which objects have previews, and why the others not."""

from __future__ import annotations

from collections import Counter

from previews import PREVIEW_FOLDER


def card_section(accepted: list[dict]) -> str:
    """Markdown of the previews section. `accepted`: the outcomes of the accepted objects
    (`pipeline.chain`: each has a "preview" entry, {"rendered": bool, "detail": str})."""
    previews = [
        o.get("preview") or {"rendered": False, "detail": "skipped: not recorded"} for o in accepted
    ]
    rendered = [p for p in previews if p["rendered"]]
    missing = Counter(p["detail"] for p in previews if not p["rendered"])
    lines = ["## Previews", ""]
    if rendered:
        renderers = ", ".join(sorted({p["detail"] for p in rendered}))
        lines += [
            f"{len(rendered)} of {len(accepted)} objects have previews, rendered offscreen from "
            f"the shipped file ({renderers}) under `objects/<object_id>/{PREVIEW_FOLDER}/`: "
            "`rest.png`, "
            "`<joint group>-lower.png` and `-upper.png` for every driving joint group, "
            "`sheet.png` (the contact sheet: lower | rest | upper) and `previews.json` (the pose "
            "of every view). The camera is the same for every object; moving parts are "
            "coloured by the joint that moves them.",
            "",
        ]
    if missing:
        lines += [
            f"Previews were not rendered for {sum(missing.values())} of {len(accepted)} objects:",
            "",
            "| reason | objects |",
            "| --- | ---: |",
        ]
        lines += [f"| {reason} | {n} |" for reason, n in sorted(missing.items())]
        lines.append("")
    if not accepted:
        lines += ["No objects.", ""]
    return "\n".join(lines)
