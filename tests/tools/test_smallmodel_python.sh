#!/usr/bin/env bash
# Unit tests of tools/smallmodel (corpus reader, splits, evaluation sets, keepset, tokenizer
# layout); plain Python, see test_smallmodel_units.py.
set -euo pipefail
: "${ROOT:?}" "${TESTS_DIR:?}"
command -v python3 >/dev/null || { echo "FAIL: python3 not found (scripts/setup.sh installs it)"; exit 1; }
ROOT="$ROOT" python3 -B "$TESTS_DIR/test_smallmodel_units.py" -v 2>&1 | sed 's/^/  /'
