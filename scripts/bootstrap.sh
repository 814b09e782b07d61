#!/usr/bin/env bash
# Creates .venv with the locked dependencies (and uv itself if missing). Never downloads
# a Python interpreter: it uses the system's python3 (>= 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."
export UV_PYTHON_DOWNLOADS=never
if ! command -v uv >/dev/null 2>&1; then
  if ! python3 -m uv --version >/dev/null 2>&1; then
    echo "installing uv (from PyPI) for $(python3 --version)"
    python3 -m pip install --quiet --disable-pip-version-check uv
  fi
  uv() { python3 -m uv "$@"; }
fi
uv sync --frozen --extra dev --quiet
