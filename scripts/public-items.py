#!/usr/bin/env python3
"""Counts the host crates' `pub` items by who names them outside the crate.

For each `pub fn/struct/enum/trait/type/const/static` in `crates/*` and
`host`, it looks for the item's name in every other Rust file of the
repository and sorts the item into one of:

  outside     named by another crate's code (its real API)
  tests-only  named only by the end-to-end suites (`tests/`)
  none        named by no other crate: a candidate for `pub(crate)`,
              unless a public signature of its crate shows it

Names are matched as words, so a common name (`new`, `get`) counts as used
and the figures lean towards "outside". Run from anywhere:

  python3 scripts/public-items.py            # counts per crate
  python3 scripts/public-items.py none       # ... and each item of a kind
"""

import collections
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEARCHED = ["crates", "host", "tests", "capabilities", "guest-sdk", "guest-libs", "examples"]
DEFINITION = re.compile(
    r"^\s*pub (?:async )?(?:const )?(?:unsafe )?(fn|struct|enum|trait|type|const|static) ([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)


def rust_files():
    for base in SEARCHED:
        for folder, dirs, files in os.walk(os.path.join(ROOT, base)):
            dirs[:] = [d for d in dirs if d != "target"]
            for name in files:
                if name.endswith(".rs"):
                    yield os.path.join(folder, name)


def crate_sources():
    crates = {f"crates/{d}": os.path.join(ROOT, "crates", d, "src") for d in sorted(os.listdir(f"{ROOT}/crates"))}
    crates["host"] = os.path.join(ROOT, "host", "src")
    return crates


def main():
    text = {path: open(path, errors="ignore").read() for path in rust_files()}
    suites = os.path.join(ROOT, "tests") + os.sep
    found = collections.defaultdict(list)
    for crate, src in crate_sources().items():
        mine = [p for p in text if p.startswith(src + os.sep)]
        others = [p for p in text if not p.startswith(src + os.sep)]
        code = [p for p in others if not p.startswith(suites)]
        tests = [p for p in others if p.startswith(suites)]
        for path in mine:
            for m in DEFINITION.finditer(text[path]):
                kind, name = m.groups()
                word = re.compile(r"\b" + re.escape(name) + r"\b")
                if any(word.search(text[p]) for p in code):
                    who = "outside"
                elif any(word.search(text[p]) for p in tests):
                    who = "tests-only"
                else:
                    who = "none"
                line = text[path][: m.start() + m.group(0).index("pub ")].count("\n") + 1
                found[crate].append((who, kind, name, os.path.relpath(path, ROOT), line))
    total = collections.Counter()
    for crate, items in found.items():
        counts = collections.Counter(who for who, *_ in items)
        total.update(counts)
        print(f"{crate:20} " + "  ".join(f"{k} {counts[k]:>3}" for k in ("outside", "tests-only", "none")))
    print(f"{'all':20} " + "  ".join(f"{k} {total[k]:>3}" for k in ("outside", "tests-only", "none")))
    if len(sys.argv) > 1:
        for items in found.values():
            for who, kind, name, path, line in items:
                if who == sys.argv[1]:
                    print(f"{path}:{line}: {kind} {name}")


if __name__ == "__main__":
    main()
