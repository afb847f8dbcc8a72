#!/usr/bin/env bash
# Runs Capstan with its built-in capabilities, data in ./data, the API on
# 127.0.0.1:4380. Extra arguments go to `capstan serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ ! -x "${CARGO_TARGET_DIR:-target}/release/capstan" ]; then
    echo "run: building Capstan in release mode for the first time: about 15 minutes on two cores," \
        "most of it the WebAssembly engine; cargo shows its progress below, and later starts take seconds"
fi
exec cargo run --release -p capstan -- --data-dir "${CAPSTAN_DATA_DIR:-data}" serve "$@"
