#!/usr/bin/env python3
"""The structure ARCHITECTURE.md promises, checked: no function of the engine, People or
driver crates is longer than 120 lines (tests excepted), and the faces (cli, server) reach
the engine and People only through the driver. Prints each offender and exits 1."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIMIT = 120
CORE = ["engine/src", "engine/people/src", "engine/driver/src"]
FACES = ["cli"]
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
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
