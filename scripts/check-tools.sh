#!/usr/bin/env bash
# Fail fast, with the fix, when a tool the set-up needs is missing: check-tools.sh python java mvn go
set -u
missing=0
for tool in "$@"; do
  case "$tool" in
    python)
      if ! command -v "${PYTHON:-python3}" >/dev/null 2>&1 || ! "${PYTHON:-python3}" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "missing: Python >= 3.11 as '${PYTHON:-python3}' (set PYTHON=... to choose another)" >&2; missing=1
      elif ! "${PYTHON:-python3}" -c 'import venv, ensurepip' >/dev/null 2>&1; then
        echo "missing: Python's venv/ensurepip modules (Debian: apt-get install python3-venv)" >&2; missing=1
      fi ;;
    java)
      if ! command -v java >/dev/null 2>&1; then
        echo "missing: Java 17+ (Debian: apt-get install openjdk-17-jre-headless)" >&2; missing=1
      elif ! java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'; then
        echo "Java 17+ required, found: $(java -version 2>&1 | head -1)" >&2; missing=1
      fi ;;
    mvn) command -v mvn >/dev/null 2>&1 || { echo "missing: Maven (Debian: apt-get install maven)" >&2; missing=1; } ;;
    go)
      if ! command -v go >/dev/null 2>&1; then
        echo "missing: Go >= 1.26 (needed to build kube-apiserver/kubectl/etcd/helm)" >&2; missing=1
      fi ;;
    *) command -v "$tool" >/dev/null 2>&1 || { echo "missing: $tool" >&2; missing=1; } ;;
  esac
done
exit $missing
