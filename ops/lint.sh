#!/usr/bin/env bash
# `make lint`: ruff (style, imports, complexity C901 <= 15), the import contracts of pyproject.toml
# (layers of DESIGN.md, a pure domain) and mypy over the whole package (the project's [tool.mypy]
# settings), strict on the domain and the schemas. The contracts and mypy run over .lint/tree, the
# package laid out as it installs (ops/lint_tree.py).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${BIN:-.venv/bin}"
ROOT="$(pwd)"
"$BIN/ruff" check .
"$BIN/python" ops/lint_tree.py .lint/tree >/dev/null
# from inside .lint, so that the source folder memwarden/ does not shadow the tree
cd .lint
PYTHONPATH=tree "$ROOT/$BIN/lint-imports" --no-cache "$ROOT/pyproject.toml"
MYPYPATH=tree "$ROOT/$BIN/mypy" --config-file "$ROOT/pyproject.toml" --strict \
  -p memwarden.commands -p memwarden.schemas
# its own cache: the strict and the non-strict run would otherwise re-check what the other cached
MYPYPATH=tree "$ROOT/$BIN/mypy" --config-file "$ROOT/pyproject.toml" --cache-dir .mypy_cache_package -p memwarden
