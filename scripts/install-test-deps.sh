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

# The OpenID provider the SSO tests start on loopback (npm package oidc-provider, locked in
# tests/oidc/package-lock.json). node_modules is never committed: `npm ci` installs exactly the
# lock, and a stamp of the lock's hash makes a re-run a no-op until the lock changes.
oidc_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/oidc"
stamp="$oidc_dir/node_modules/.connwatch-lock.sha256"
lock_sum="$(sha256sum "$oidc_dir/package-lock.json" | cut -d' ' -f1)"
if [ ! -d "$oidc_dir/node_modules/oidc-provider" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  command -v npm >/dev/null 2>&1 || {
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  }
  echo "installing tests/oidc (oidc-provider) with npm ci"
  npm ci --prefix "$oidc_dir" --no-audit --no-fund --loglevel=error >/dev/null
  echo "$lock_sum" >"$stamp"
fi
