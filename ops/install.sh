#!/usr/bin/env bash
# Installs everything memwarden needs on a fresh Debian machine: system prerequisites (Java 17,
# Maven, PostgreSQL server, curl, jq and Chromium) when missing, then a virtual environment with the
# project and its dev tools. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v curl >/dev/null 2>&1 || need+=(curl)   # the README's REST session and its test
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v chromium >/dev/null 2>&1 || need+=(chromium)   # the inspector page's test (headless, via Playwright)
if ! command -v pg_ctl >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  need+=(postgresql)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing system packages: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing system packages: ${need[*]} (install them with your package manager)" >&2
    exit 1
  fi
fi

stamp="$VENV/.installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -e ".[dev]"
  touch "$stamp"
fi
echo "memwarden installed in $VENV"
