#!/usr/bin/env bash
# Installs the system packages the test suite needs (Debian). Idempotent and quiet when
# everything is present, so `make test` can call it every time.
set -euo pipefail
# prometheus: its promtool checks /metrics and the server scrapes it (tests/web/test_metrics*.py)
pkgs=(pgbouncer postgresql chromium prometheus-alertmanager poppler-utils prometheus)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
