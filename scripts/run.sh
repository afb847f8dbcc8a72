#!/usr/bin/env bash
# Runs Capstan with its built-in capabilities, data in ./data, the API on
# 127.0.0.1:4380. Extra arguments go to `capstan serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec cargo run --release -p capstan -- --data-dir "${CAPSTAN_DATA_DIR:-data}" serve "$@"
