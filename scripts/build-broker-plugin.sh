#!/usr/bin/env bash
# Build the broker plugin (broker-plugin/: the multi-level rack-aware replica selector) with Maven; its
# JUnit tests run in the build (Surefire), so a failing test fails it. `make rig-build` calls this.
#   build-broker-plugin.sh          build unless cached; the last line on stdout is the jar's path
#   build-broker-plugin.sh --path   print where the jar of the current sources is (built or not)
# The jar is cached outside the repo in $KP_CACHE/broker-plugin/<key>/ (KP_CACHE default
# ~/.cache/kafka-placement; Maven's local repo is $KP_CACHE/m2, shared with tests/rig/kafka/fetch.sh),
# keyed by a hash of broker-plugin/'s pom.xml and src/: unchanged sources are not built again. Maven
# builds a copy of the sources, so nothing is written into the checkout. Concurrent callers are
# serialised with a lock.
set -euo pipefail

KP_CACHE="${KP_CACHE:-$HOME/.cache/kafka-placement}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/broker-plugin"
JAR_NAME=kafka-placement-broker-plugin.jar

die() { echo "broker plugin: $*" >&2; exit 1; }

[ -f "$SRC/pom.xml" ] && [ -d "$SRC/src" ] || die "no Maven project in $SRC"
# the key: every source file's path and content (sorted by path, so the order of `find` does not matter)
key=$(cd "$SRC" && find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
DEST="$KP_CACHE/broker-plugin/$key"
JAR="$DEST/$JAR_NAME"

if [ "${1:-}" = --path ]; then
  echo "$JAR"
  exit 0
fi
[ $# = 0 ] || die "usage: build-broker-plugin.sh [--path]"

if [ -f "$DEST/.complete" ]; then
  echo "broker plugin: cached ($JAR)" >&2
  echo "$JAR"
  exit 0
fi

command -v java >/dev/null 2>&1 || die "java not found on PATH (Java 17+; Debian: apt-get install openjdk-17-jdk-headless)"
command -v javac >/dev/null 2>&1 || die "javac not found on PATH: a JDK 17+ is needed, not only a JRE (Debian: apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (Debian: apt-get install maven)"

mkdir -p "$KP_CACHE/broker-plugin" "$KP_CACHE/logs"
exec 9>"$KP_CACHE/broker-plugin/.build.lock"
flock 9   # another caller may be building: wait for it, then reuse its jar
if [ -f "$DEST/.complete" ]; then
  echo "$JAR"
  exit 0
fi

log="$KP_CACHE/logs/broker-plugin-build.log"
work="$KP_CACHE/broker-plugin/build"   # kept after a failure: Surefire's reports are in target/
rm -rf "$work"
mkdir -p "$work"
cp -R "$SRC/pom.xml" "$SRC/src" "$work/"
echo "broker plugin: building $key with Maven, JUnit tests included (log: $log)" >&2
start=$(date +%s)
# MAVEN_OPTS: keep Maven's own JVM small on a shared machine.
if ! MAVEN_OPTS="${MAVEN_OPTS:--Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}" mvn -B -q -Dstyle.color=never \
    -f "$work/pom.xml" \
    -Dmaven.repo.local="$KP_CACHE/m2" \
    package >"$log" 2>&1; then
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^\[(ERROR|FATAL)\] ' \
    | grep -vE 'Help 1|-e switch|-X switch|For more information|dump files|^\[ERROR\] *$' | head -n 20 >&2 \
    || tail -n 25 "$log" >&2
  die "the Maven build failed (compile errors or failing JUnit tests above); full log: $log, test reports: $work/target/surefire-reports"
fi
[ -f "$work/target/$JAR_NAME" ] || die "Maven succeeded but made no $JAR_NAME (log: $log)"
tests=$(cat "$work"/target/surefire-reports/TEST-*.xml 2>/dev/null \
  | awk 'match($0, /<testsuite [^>]*tests="[0-9]+"/) { s = substr($0, RSTART, RLENGTH); sub(/.*tests="/, "", s); n += s + 0 } END { print n + 0 }')
tmp="$DEST.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
cp "$work/target/$JAR_NAME" "$tmp/"
touch "$tmp/.complete"
rm -rf "$DEST"
mv "$tmp" "$DEST"
rm -rf "$work"
echo "broker plugin: built in $(( $(date +%s) - start ))s, $tests JUnit tests passed" >&2
echo "$JAR"
