"""The safety scan before MuJoCo sees a file: includes, file references kept inside the root,
sizes, magnitudes, and the bodies and joints the model would make."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from normalize.errors import AssetError
from normalize.files import nearest_file_hint, regular_status
from normalize.limits import MAX_INCLUDES, MAX_MAGNITUDE, check_count
from normalize.meshes import IMAGE_SUFFIXES, MAX_TEXTURE_PIXELS, check_texture
from normalize.paths import confine, is_inside, realpath
from normalize.safe_xml import parse_xml_bytes, read_limited

_DIR_ATTRIBUTES = ("meshdir", "texturedir", "assetdir")


def _include_targets(xml_file: Path, main_dir: Path, value: str) -> list[Path]:
    """Where MuJoCo may find an included file: relative to the main model's folder, then to
    the including file's folder (MuJoCo 3+ tries both)."""
    out = [main_dir / value]
    if xml_file.parent != main_dir:
        out.append(xml_file.parent / value)
    return out


@dataclass
class MjcfScan:
    """The XML files of one model (entry first) and every other file they reference."""

    files: list[Path] = field(default_factory=list)
    references: list[Path] = field(default_factory=list)
    root_tag: str = ""
    bodies: int = 0  # bodies and joints MuJoCo would make, <replicate> and includes expanded
    joints: int = 0


def _expanded(element, included: dict, tag_set: tuple[str, ...]) -> int:
    """How many elements with a tag in `tag_set` `element` holds once MuJoCo multiplies out
    `<replicate count>` and pastes includes (`included`: include element -> its file's root)."""
    total = 0
    for child in element:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "include":
            inner = included.get(child)
            total += 0 if inner is None else _expanded(inner, included, tag_set)
            continue
        inner = _expanded(child, included, tag_set)
        if child.tag == "replicate":
            try:
                count = max(0, int(child.get("count", "1")))
            except ValueError:
                count = 1  # MuJoCo refuses it when compiling
            total += count * inner
        else:
            total += inner + (child.tag in tag_set)
    return total


#: attributes holding lengths, angles, limits, masses and inertias: checked against
#: MAX_MAGNITUDE before MuJoCo compiles them (a size of 1e300 gives NaN inertias)
_MAGNITUDE_ATTRIBUTES = frozenset(
    ("pos", "size", "range", "mass", "fromto", "diaginertia", "fullinertia", "scale", "euler")
    + ("quat", "axisangle", "ref", "springref", "density")
)


#: elements whose size attributes make MuJoCo allocate that many values at compile time, and
#: the attributes: a builtin texture (RGB pixels, six faces for a cube or skybox) and a height
#: field's elevation grid
_GENERATED_SIZES = {"texture": ("width", "height"), "hfield": ("nrow", "ncol")}


def _check_generated_size(element, xml_file: Path) -> None:
    """`texture.too_large` for a texture or height field whose size attributes ask MuJoCo to
    generate more than MAX_TEXTURE_PIXELS values (an image file is checked by its header)."""
    first, second = _GENERATED_SIZES[element.tag]
    try:
        a = int(element.get(first, "0"))
        b = int(element.get(second, str(a)))
    except ValueError:
        return  # left to MuJoCo
    faces = 6 if element.tag == "texture" and element.get("type") in ("cube", "skybox") else 1
    if a > 0 and b > 0 and faces * a * b > MAX_TEXTURE_PIXELS:
        raise AssetError(
            f"{element.tag} {element.get('name') or ''} asks for {faces} x {a} x {b} values, "
            f"above the limit of {MAX_TEXTURE_PIXELS} (see docs/limits.md)",
            code="texture.too_large",
            stage="parse",
            path=str(xml_file),
            element=f"{element.tag} {first}={a} {second}={b}",
        )


def _check_magnitudes(value: str, where: str, xml_file: Path) -> None:
    """`parse.out_of_range` for a finite number in `value` beyond MAX_MAGNITUDE (text that is
    not numbers is left to MuJoCo)."""
    try:
        numbers = [float(token) for token in value.split()]
    except ValueError:
        return
    finite = [abs(x) for x in numbers if math.isfinite(x)]
    if finite and max(finite) > MAX_MAGNITUDE:
        raise AssetError(
            f"{where}: {max(finite):g} is beyond the plausible magnitude {MAX_MAGNITUDE:g} "
            "(see docs/limits.md)",
            code="parse.out_of_range",
            stage="parse",
            path=str(xml_file),
            element=where,
        )


def scan_mjcf(
    entry: Path,
    root: Path,
    *,
    max_bytes: int | None = None,
    assets: bool = True,
    problems: list[AssetError] | None = None,
) -> MjcfScan:
    """Parse `entry` and its includes with the hardened parser, refusing include cycles
    (``mjcf.include_cycle``) and includes leaving `root` (``path.*``, never read); with `assets`,
    also refuse asset references leaving `root` and referenced files above `max_bytes`
    (``file.too_large``). With `problems` (a list), the problems of the elements (references
    leaving the root, sizes, magnitudes) are appended to it, each with its file and line, and
    the scan goes on; references to missing files are appended too (``mesh.missing`` for a
    <mesh>, else ``file.missing``), which MuJoCo's compiler would refuse one at a time."""
    entry = Path(entry)
    main_dir = entry.parent
    scan = MjcfScan()
    trees = []
    included: dict = {}  # include element -> the root of the file it includes
    kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}

    def visit(xml_file: Path, chain: tuple[Path, ...], include=None) -> None:
        real = Path(realpath(xml_file))
        if real in chain:
            names = " -> ".join(p.name for p in (*chain, real))
            raise AssetError(
                f"include cycle: {names}",
                code="mjcf.include_cycle",
                stage="parse",
                path=str(xml_file),
                element="include",
            )
        confine(xml_file, root, referrer=str(chain[-1]) if chain else None)
        check_count("included files", len(scan.files) + 1, MAX_INCLUDES, xml_file)
        data = read_limited(xml_file, **kwargs)
        if not assets and b"include" not in data:
            scan.files.append(xml_file)  # discovery: a file without the word includes nothing
            return
        tree = parse_xml_bytes(data, xml_file)
        if include is not None:
            included[include] = tree
        scan.root_tag = scan.root_tag or str(tree.tag)
        scan.files.append(xml_file)
        trees.append((xml_file, tree))
        for element in tree.iter("include"):
            value = element.get("file")
            if not value:
                continue
            targets = _include_targets(xml_file, main_dir, value)
            existing = [t for t in targets if regular_status(t)]
            where = f"include {value}"
            checked = existing or targets[:1]
            inside = _collected(
                problems, element, xml_file, _confine_all, checked, root, xml_file, where
            )
            if problems is not None and inside and not existing:
                problems.append(_missing(element, xml_file, [main_dir], value, where))
            if inside and existing:
                visit(existing[0], (*chain, real), element)

    visit(entry, ())
    if not assets:
        return scan
    scan.bodies = _expanded(trees[0][1], included, ("body",))
    scan.joints = _expanded(trees[0][1], included, ("joint", "freejoint"))
    dirs = {name: None for name in _DIR_ATTRIBUTES}
    for _, tree in trees:
        for compiler in tree.iter("compiler"):
            for name in _DIR_ATTRIBUTES:
                if compiler.get(name) is not None:
                    dirs[name] = compiler.get(name)
    bases = [main_dir / d for d in dirs.values() if d is not None] + [main_dir]
    for xml_file, tree in trees:
        for element in tree.iter():
            if element.tag == "include" or not isinstance(element.tag, str):
                continue
            if element.tag in _GENERATED_SIZES:
                _collected(problems, element, xml_file, _check_generated_size, element, xml_file)
            for attribute, value in element.attrib.items():
                if attribute in _MAGNITUDE_ATTRIBUTES:
                    what = f"{element.tag} {attribute}"
                    _collected(
                        problems, element, xml_file, _check_magnitudes, value, what, xml_file
                    )
                if attribute.startswith("file") and value:
                    where = f"{element.tag} {attribute}={value}"
                    found = [*bases, xml_file.parent]
                    references = _collected(
                        problems,
                        element,
                        xml_file,
                        _check_reference,
                        value,
                        found,
                        root,
                        xml_file,
                        where,
                    )
                    if problems is not None and references == []:
                        problems.append(_missing(element, xml_file, found, value, where))
                    scan.references.extend(references or [])
    limit = max_bytes
    for reference in scan.references:
        if limit is not None and reference.stat().st_size > limit:
            raise AssetError(
                f"referenced file {reference.name} is above the limit of {limit} bytes",
                code="file.too_large",
                stage="parse",
                path=str(reference),
            )
        if reference.suffix.lower() in IMAGE_SUFFIXES:  # a texture or height field
            check_texture(read_limited(reference, **kwargs), reference, stage="parse")
    return scan


def _collected(problems, element, xml_file: Path, check, *args):
    """`check(*args)`, whose AssetError is given the file and line of `element`, then raised, or
    appended to `problems` when it is a list (None returned)."""
    try:
        return check(*args)
    except AssetError as exc:
        exc.path = exc.path or str(xml_file)
        exc.line = exc.line or element.sourceline
        if problems is None:
            raise
        problems.append(exc)
        return None


def _confine_all(paths, root: Path, xml_file: Path, where: str) -> bool:
    for path in paths:
        confine(path, root, referrer=str(xml_file), element=where)
    return True


def _missing(element, xml_file: Path, bases, value: str, where: str) -> AssetError:
    """The problem of a file reference that none of the folders `bases` holds."""
    looked: dict[Path, Path] = {}  # where the file was looked for -> its base folder
    for base in bases:
        looked.setdefault(base / value, base)
    hints = (nearest_file_hint(path, base) for path, base in looked.items())
    return AssetError(
        f"{element.tag} file {value!r} does not exist (looked for "
        + ", ".join(str(p) for p in looked)
        + ")",
        code="mesh.missing" if element.tag == "mesh" else "file.missing",
        stage="resolve",
        path=str(xml_file),
        element=where,
        line=element.sourceline,
        hint=next((h for h in hints if h), None),
    )


def _check_reference(value, bases, root, xml_file, where) -> list[Path]:
    """The existing candidates of one file reference, every one confined to the root (the
    first candidate is checked even when none exists)."""
    candidates = list(dict.fromkeys(base / value for base in bases))
    # a FIFO or device would block MuJoCo's own open: refused (file.not_regular) here
    existing = [c for c in candidates if is_inside(c, root) and regular_status(c)]
    for candidate in existing or candidates[:1]:
        confine(candidate, root, referrer=str(xml_file), element=where)
    return existing
