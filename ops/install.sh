#!/usr/bin/env bash
# Installs everything memwarden needs on a fresh Debian machine: system prerequisites (Java 17,
# Maven, PostgreSQL server, curl, jq and Chromium) when missing, then a virtual environment with the
# project and its dev tools (installed by uv; MEMWARDEN_INSTALLER=pip for pip). Idempotent: a second run only checks.
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

# The project's requirements are installed by uv (from PyPI, like pip), which downloads and unpacks
# wheels in parallel: the whole install (torch and its CUDA libraries among them, about 6 GB) took
# about a minute on this 2-core machine against about 10 minutes with pip. MEMWARDEN_INSTALLER=pip uses pip
# alone. uv reads its own settings, not pip's: the system's certificates (UV_NATIVE_TLS) and pip's
# index and find-links variables, when set, are handed over.
stamp="$VENV/.installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  if [ "${MEMWARDEN_INSTALLER:-uv}" = uv ]; then
    "$VENV/bin/python" -m pip install -q uv
    export UV_NATIVE_TLS="${UV_NATIVE_TLS:-1}"
    [ -z "${PIP_INDEX_URL:-}" ] || export UV_INDEX_URL="${UV_INDEX_URL:-$PIP_INDEX_URL}"
    [ -z "${PIP_EXTRA_INDEX_URL:-}" ] || export UV_EXTRA_INDEX_URL="${UV_EXTRA_INDEX_URL:-$PIP_EXTRA_INDEX_URL}"
    [ -z "${PIP_FIND_LINKS:-}" ] || export UV_FIND_LINKS="${UV_FIND_LINKS:-$PIP_FIND_LINKS}"
    # --compile-bytecode: pip writes every module's .pyc at install, uv only when asked; without them each
    # process (every worker a test starts) compiles torch and the rest from source again wherever
    # PYTHONDONTWRITEBYTECODE is set, as it is on this machine (the suite took half as long again)
    "$VENV/bin/uv" pip install -q --compile-bytecode --python "$VENV/bin/python" -e ".[dev]"
  else
    "$VENV/bin/python" -m pip install -q -e ".[dev]"
  fi
  touch "$stamp"
fi
echo "memwarden installed in $VENV"
