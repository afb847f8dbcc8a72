"""Runs guessit on release names for the parser comparison.

Reads names from standard input, one per line, and writes one JSON line per
name, {"name": ..., "result": {...}}, to the file given as the argument;
prints guessit's version and speed to standard error. Values guessit keeps
as objects (languages, countries, dates) are written as strings.
"""

import json
import sys
import time

import guessit


def main() -> None:
    names = [line.rstrip("\n") for line in sys.stdin if line.strip()]
    results = []
    start = time.perf_counter()
    for name in names:
        try:
            result = dict(guessit.guessit(name))
        except Exception as error:  # a name guessit cannot read scores as a miss
            result = {"error": str(error)}
        results.append({"name": name, "result": result})
    seconds = time.perf_counter() - start
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        for row in results:
            out.write(json.dumps(row, default=str, ensure_ascii=False) + "\n")
    rate = len(names) / seconds if seconds > 0 else 0.0
    print(
        f"guessit {guessit.__version__}: {len(names)} names in {seconds:.2f} s "
        f"({rate:,.0f} names/s, {seconds / max(len(names), 1) * 1e6:,.0f} us/name)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
