#!/usr/bin/env python3
"""The structure ARCHITECTURE.md promises, checked: no function of the engine, People or
driver crates is longer than 120 lines (tests excepted), and the faces (cli, server) reach
the engine and People only through the driver, and a face or a driver folder names
another driver folder only through what that folder's `mod.rs` exports (`pub mod`,
`pub use`). Prints each offender and exits 1."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIMIT = 120
CORE = ["engine/src", "engine/people/src", "engine/driver/src"]
FACES = ["cli"]
DRIVER = ROOT / "engine/driver/src"
DRIVER_PATH = re.compile(r"\b(acompose_driver|crate)((?:::\w+)+)")
EXPORT = re.compile(r"^\s*pub(?:\(crate\))?\s+(?:mod\s+(\w+)|use\s+([^;]+);)", re.M)
ITEM = re.compile(r"^pub(?:\(crate\))?\s+(?:async\s+)?(?:fn|const|static|struct|enum|type|trait)\s+(\w+)", re.M)
FUNCTION = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def long_functions(path):
    """Yields (first line, length, name) of each function over the limit before the
    file's test module, measured from `fn` to the brace that closes it at its indent."""
    lines = path.read_text(errors="replace").split("\n")
    for number, line in enumerate(lines):
        if re.match(r"\s*#\[cfg\(test\)\]", line):
            return
        found = FUNCTION.match(line)
        if not found or line.rstrip().endswith(";"):
            continue
        indent = found.group(1)
        end = number + 1
        while end < len(lines) and not re.match("^" + indent + r"\}\s*$", lines[end]):
            end += 1
        length = end - number + 1
        if length > LIMIT:
            yield number + 1, length, found.group(7)


def module_file(segments):
    """The file of the driver module `segments` (crate-relative), and whether it is a
    folder (its children are separate files), or None when it is no file of its own."""
    if not segments:
        return DRIVER / "lib.rs", True
    base = DRIVER.joinpath(*segments)
    for path, folder in ((base / "mod.rs", True), (base.with_suffix(".rs"), base.is_dir())):
        if path.is_file():
            return path, folder
    return None


def exports(path):
    """The names a module file makes public: its own items, its `pub mod`s and what its
    `pub use`s name."""
    text = path.read_text(errors="replace")
    names = set(ITEM.findall(text))
    for declared, used in EXPORT.findall(text):
        if declared:
            names.add(declared)
        else:
            names.update(re.findall(r"(\w+)\s*(?:[,}]|$)", used.replace("self", "")))
            names.update(re.findall(r"\bas\s+(\w+)", used))
    return names


def past_exports(segments, owner):
    """The first name in a driver path that its folder does not export, when the path
    leaves `owner` (the top folder the naming file is in; None for a face)."""
    if owner is not None and (not segments or segments[0] == owner):
        return None
    for depth in range(len(segments)):
        found = module_file(segments[:depth])
        if found is None or not found[1]:
            return None
        if segments[depth] not in exports(found[0]):
            return "::".join(segments[: depth + 1])
    return None


def door_problems(path, owner):
    """Each line of `path` that names a driver module's internals past its folder's exports."""
    prefix = "crate" if owner is not None else "acompose_driver"
    for number, line in enumerate(path.read_text(errors="replace").split("\n"), 1):
        if line.lstrip().startswith("//"):
            continue
        for crate, rest in DRIVER_PATH.findall(line):
            if crate != prefix:
                continue
            segments = rest.strip(":").split("::")
            name = past_exports(segments, owner)
            if name:
                yield f"{path.relative_to(ROOT)}:{number}: `{name}` is not exported by its folder's mod.rs"


def driver_owner(path):
    """The top folder (or file) of the driver that `path` belongs to."""
    first = path.relative_to(DRIVER).parts[0]
    return first[:-3] if first.endswith(".rs") else first


def main():
    problems = []
    for folder in CORE:
        for path in sorted((ROOT / folder).rglob("*.rs")):
            for line, length, name in long_functions(path):
                problems.append(f"{path.relative_to(ROOT)}:{line}: `{name}` is {length} lines (at most {LIMIT})")
    for folder in FACES:
        for manifest in sorted((ROOT / folder).rglob("Cargo.toml")):
            for crate in ("acompose-engine", "acompose-people"):
                if re.search(rf"^{crate}\b", manifest.read_text(), re.M):
                    problems.append(f"{manifest.relative_to(ROOT)}: depends on {crate}; a face depends on the driver only")
        for path in sorted((ROOT / folder).rglob("*.rs")):
            for number, line in enumerate(path.read_text(errors="replace").split("\n"), 1):
                if re.search(r"\bacompose_(engine|people)\b", line):
                    problems.append(f"{path.relative_to(ROOT)}:{number}: names a core crate; use what the driver re-exports")
    for path in sorted(DRIVER.rglob("*.rs")):
        problems.extend(door_problems(path, driver_owner(path)))
    for folder in FACES + ["tests", "benches"]:
        for path in sorted((ROOT / folder).rglob("*.rs")):
            problems.extend(door_problems(path, None))
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
