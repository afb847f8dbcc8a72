#!/usr/bin/env bash
# Builds examples/js-word-count into a component:
#   examples/js-word-count/build.sh [OUTPUT.wasm]
# Needs componentize-js 0.23 (`npm install @bytecodealliance/componentize-js`);
# the test set-up (scripts/setup.sh --tests) installs it into
# target/test-tools/componentize-js, which is used when present.
# CAPSTAN_WORLD picks another world of wit/capability (default
# read-capability); the suites build one against execute-capability to show
# that the host refuses a component whose imports exceed its label.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$here/word-count-js.wasm}"
tool="$root/target/test-tools/componentize-js/node_modules/.bin/componentize-js"
[ -x "$tool" ] || tool="$(command -v componentize-js)" || {
    echo "componentize-js not found: npm install @bytecodealliance/componentize-js@0.23" >&2
    exit 1
}
# componentize-js reads one WIT folder: the capability package with the host
# package beside it in deps/.
wit="$(mktemp -d)"
trap 'rm -rf "$wit"' EXIT
cp "$root"/wit/capability/*.wit "$wit/"
mkdir -p "$wit/deps/host" && cp "$root"/wit/host/*.wit "$wit/deps/host/"
# The read-capability world names only read-class host interfaces, so the
# component, which keeps every import of its world, is honestly `read`.
# Outbound HTTP goes through capstan:host, never wasi:http: the host refuses
# a component that imports it.
"$tool" "$here/app.js" --wit "$wit" --world-name "capstan:capability/${CAPSTAN_WORLD:-read-capability}" \
    --disable http fetch-event -o "$out"
