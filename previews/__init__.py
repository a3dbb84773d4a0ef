"""Previews: offscreen MuJoCo renderings of shipped objects at rest and at their joint limits,
contact sheets, the card's gallery, the HTML validation report and the release browser.

Placed between taxonomy and export in the import order: it reads shipped files (normalize's
helpers) and export writes what it renders into the release.
"""

from previews.gl import Backend, backend
from previews.render import SHEET, SHEET_JSON, PreviewError, model_file, render_object

PREVIEW_FOLDER = "preview"  # objects/<object_id>/preview/: thumbnails, contact sheet, index

__all__ = [
    "PREVIEW_FOLDER",
    "SHEET",
    "SHEET_JSON",
    "Backend",
    "PreviewError",
    "backend",
    "model_file",
    "render_object",
]
