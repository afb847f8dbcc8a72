#!/usr/bin/env bash
# Runs every test suite: unit tests, the release-name conformance test and
# the end-to-end suites (which build the guest components themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-fail-fast "$@"
else
    cargo test --workspace --no-fail-fast "$@"
fi
