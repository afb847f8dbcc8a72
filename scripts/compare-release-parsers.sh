#!/usr/bin/env bash
# Compares release.inspect's parser with hunch and guessit on the same names
# in the same run: guessit's own test cases and every set of Capstan's corpus
# (capabilities/release-inspect/corpus/), per field and whole case, per set,
# then speed. Installs guessit into target/test-tools/guessit (a Python
# virtual environment) the first time. Add a field name as argument to list
# each parser's misses on it. Figures go in docs/release-parsing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

GUESSIT_VERSION=4.4.0
venv=target/test-tools/guessit
if ! "$venv/bin/pip" show guessit 2>/dev/null | grep -x "Version: $GUESSIT_VERSION" >/dev/null; then
    echo "compare: installing guessit $GUESSIT_VERSION into $venv" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "guessit==$GUESSIT_VERSION"
fi

run() {
    cargo run -q --release -p cap-release-inspect --example compare_parsers --features compare -- "$@"
}
results=target/guessit-results.jsonl
run --names | "$venv/bin/python" capabilities/release-inspect/examples/guessit_names.py "$results"
run --guessit "$results" "$@"
