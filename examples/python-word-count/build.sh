#!/usr/bin/env bash
# Builds examples/python-word-count into a component:
#   examples/python-word-count/build.sh [OUTPUT.wasm]
# Needs componentize-py 0.25 (`pip install componentize-py==0.25.0`); the
# test set-up (scripts/setup.sh --tests) installs it into
# target/test-tools/componentize-py, which is used when present.
# CAPSTAN_WORLD picks another world of wit/capability (default
# read-capability); the suites build one against execute-capability to show
# that the host refuses a component whose imports exceed its label.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$here/word-count-py.wasm}"
tool="$root/target/test-tools/componentize-py/bin/componentize-py"
[ -x "$tool" ] || tool="$(command -v componentize-py)" || {
    echo "componentize-py not found: pip install componentize-py==0.25.0" >&2
    exit 1
}
# The read-capability world names only read-class host interfaces, so the
# component, which keeps every import of its world, is honestly `read`.
cd "$here"
"$tool" -d "$root/wit/host" -d "$root/wit/capability" -w "capstan:capability/${CAPSTAN_WORLD:-read-capability}" \
    componentize app -o "$out"
