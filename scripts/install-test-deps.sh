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

# The OpenID provider the SSO tests start on loopback (npm package oidc-provider, locked).
if [ ! -d tests/oidc/node_modules/oidc-provider ]; then
  command -v npm >/dev/null 2>&1 || {
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  }
  echo "installing tests/oidc (oidc-provider) with npm ci"
  npm ci --prefix tests/oidc --no-audit --no-fund --loglevel=error >/dev/null
fi
