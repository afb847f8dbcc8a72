#!/usr/bin/env bash
# Runs every test suite: unit tests, the release-name conformance test and
# the end-to-end suites (which build the guest components themselves). The
# storage suites run against SQLite and against a throwaway PostgreSQL that
# this script starts on a free loopback port and stops afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
source scripts/postgres.sh
start_throwaway_postgres
trap stop_throwaway_postgres EXIT

# The CLI suites run the real `capstan` binary, which test builds alone
# do not produce. Built for the whole workspace, as the suites are: a
# build of one package resolves other features and would compile much of
# the tree a second time.
cargo build --workspace

if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-fail-fast "$@"
else
    cargo test --workspace --no-fail-fast "$@"
fi
