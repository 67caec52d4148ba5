#!/usr/bin/env bash
# Download the Apache Kafka jars the test rig (and the benchmarks) run, from Maven Central, with Maven.
#   fetch.sh            the plain jars (every cluster but `tiered`): any release on Maven Central, 3.7.x on
#   fetch.sh --tiered   also Kafka's own test remote storage manager (LocalTieredStorage, KIP-405), from the
#                       kafka-storage test jar (classifier `test`), for the rig's `tiered` cluster only; not
#                       every release has one on Maven Central (4.4.0 has none): that version then fails here,
#                       and the tiered cluster runs on a version that has it (4.3.1: `make rig-build` fetches it)
#   KAFKA_VERSION (default 4.4.0, the rig's) picks the release; KP_CACHE (default ~/.cache/kafka-placement)
#   the cache. A release before 2.4 (no Scala 2.13 build; ZooKeeper mode only: the rig runs it with
#   --zookeeper) comes from pom-zookeeper-era.xml: the Scala 2.12 broker, log4j 1, and the ZooKeeper 3.4
#   server of its own dependencies kept apart in <version>/zookeeper; its brokers get the ZooKeeper 3.5
#   client instead (3.4.13+'s cannot resolve any server address on Java 14+: ZOOKEEPER-3779).
# Jars land in $KP_CACHE/kafka/<version>/libs (Maven's local repo is $KP_CACHE/m2), outside the repo; the test
# jar lands apart in $KP_CACHE/kafka/<version>/tiered: only the `tiered` cluster puts it on its classpath.
# A version Maven Central does not serve fails with one clear line (exit 1).
# Idempotent: a complete cache (marked by libs/.complete) is reused; concurrent callers are serialised
# with a lock. The last line on stdout is the libs directory.
set -euo pipefail

tiered=0
for arg in "$@"; do
  case $arg in
    --tiered) tiered=1 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kafka fetch: unknown argument '$arg' (usage: fetch.sh [--tiered])" >&2; exit 2 ;;
  esac
done

KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
KP_CACHE="${KP_CACHE:-$HOME/.cache/kafka-placement}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="$KP_CACHE/kafka/$KAFKA_VERSION"
LIBS="$DEST/libs"
TIERED="$DEST/tiered"
TEST_JAR="kafka-storage-$KAFKA_VERSION-test.jar"
# before 2.4: no kafka_2.13, kafka-tools or kafka-storage jar; ZooKeeper mode only (pom-zookeeper-era.xml)
POM="$HERE/pom.xml"
SCALA=2.13
ZK_ERA=0
IFS=. read -r major minor _ <<<"$KAFKA_VERSION"
if (( major < 2 || (major == 2 && minor < 4) )); then
  POM="$HERE/pom-zookeeper-era.xml"; SCALA=2.12; ZK_ERA=1
fi
ZK_CLIENT_VERSION=3.5.9  # the brokers' ZooKeeper client of a release before 2.4 (ZOOKEEPER-3779 fixed)
# MAVEN_OPTS: keep Maven's own JVM small on a shared machine.
export MAVEN_OPTS="${MAVEN_OPTS:--Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"

die() { echo "kafka fetch: $*" >&2; exit 1; }

[[ "$KAFKA_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+([.-][A-Za-z0-9.-]+)?$ ]] \
  || die "KAFKA_VERSION '$KAFKA_VERSION' is not a release version like 4.3.1"

# why Maven failed, in one line: an artifact Maven Central does not serve, or the log's first error
maven_failure() {
  local clean
  clean=$(sed 's/\x1b\[[0-9;]*m//g' "$1")
  if grep -Eq "Could not find artifact|could not be resolved|was not found in" <<<"$clean"; then
    echo "not served by Maven Central"
  else
    grep -E '^\[(ERROR|FATAL)\] [A-Z]' <<<"$clean" | head -n 1 | cut -c1-300 || echo "see the log"
  fi
}

# the kafka-storage test jar (LocalTieredStorage) in $TIERED, once; needs the lock held
fetch_tiered() {
  local tlog="$KP_CACHE/logs/kafka-fetch-tiered-$KAFKA_VERSION.log"
  [ -f "$TIERED/$TEST_JAR" ] && return 0
  echo "kafka fetch: downloading $TEST_JAR (LocalTieredStorage) from Maven Central (log: $tlog)" >&2
  rm -rf "$TIERED.tmp"
  if ! mvn -B -q -Dstyle.color=never \
      -f "$HERE/pom.xml" \
      -Dmaven.repo.local="$KP_CACHE/m2" \
      dependency:copy \
      -Dartifact="org.apache.kafka:kafka-storage:$KAFKA_VERSION:jar:test" \
      -DoutputDirectory="$TIERED.tmp" >"$tlog" 2>&1 || [ ! -f "$TIERED.tmp/$TEST_JAR" ]; then
    rm -rf "$TIERED.tmp"
    die "Kafka $KAFKA_VERSION's tiered storage test jar ($TEST_JAR, org.apache.kafka:kafka-storage:$KAFKA_VERSION:jar:test): $(maven_failure "$tlog"); the tiered cluster needs a version that has one (4.3.1 does); full log: $tlog"
  fi
  rm -rf "$TIERED"
  mv "$TIERED.tmp" "$TIERED"
}

if [ -f "$LIBS/.complete" ] && { [ $tiered = 0 ] || [ -f "$TIERED/$TEST_JAR" ]; }; then
  echo "kafka fetch: cached Kafka $KAFKA_VERSION jars" >&2
  echo "$LIBS"
  exit 0
fi

command -v java >/dev/null 2>&1 || die "java not found on PATH (Kafka $KAFKA_VERSION needs Java 17+; Debian: apt-get install openjdk-17-jre-headless)"
java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])' \
  || die "Java 17+ required, found: $(java -version 2>&1 | head -1)"
command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (Debian: apt-get install maven)"

mkdir -p "$DEST" "$KP_CACHE/logs"
exec 9>"$DEST/.fetch.lock"
flock 9   # another caller may be downloading the same version: wait for it, then reuse its result
if [ -f "$LIBS/.complete" ]; then
  [ $tiered = 0 ] || fetch_tiered
  echo "$LIBS"
  exit 0
fi

log="$KP_CACHE/logs/kafka-fetch-$KAFKA_VERSION.log"
tmp="$DEST/libs.tmp.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "kafka fetch: downloading Kafka $KAFKA_VERSION jars from Maven Central (log: $log)" >&2
start=$(date +%s)
if ! mvn -B -q -U -Dstyle.color=never \
    -f "$POM" \
    -Dmaven.repo.local="$KP_CACHE/m2" \
    -Dkafka.version="$KAFKA_VERSION" \
    dependency:copy-dependencies \
    -DincludeScope=runtime \
    -DoutputDirectory="$tmp" >"$log" 2>&1; then
  why=$(maven_failure "$log")
  rm -f "$DEST/.fetch.lock"; rmdir "$DEST" 2>/dev/null || true
  if [[ $why == "not served by Maven Central" ]]; then
    die "Kafka $KAFKA_VERSION is not served by Maven Central (org.apache.kafka:kafka_$SCALA:$KAFKA_VERSION and its jars); pick a released version, e.g. 4.3.1; full log: $log"
  fi
  die "Maven could not download Kafka $KAFKA_VERSION ($why; is the network up?); full log: $log"
fi
if [ $ZK_ERA = 1 ]; then
  jars=("kafka_2.12-$KAFKA_VERSION.jar" "kafka-clients-$KAFKA_VERSION.jar")
  logging="log4j-1.2.*.jar"
else
  jars=("kafka_2.13-$KAFKA_VERSION.jar" "kafka-clients-$KAFKA_VERSION.jar" "kafka-tools-$KAFKA_VERSION.jar"
        "kafka-storage-$KAFKA_VERSION.jar" "kafka-server-$KAFKA_VERSION.jar")
  logging="log4j-core-*.jar"
fi
for jar in "${jars[@]}"; do
  [ -f "$tmp/$jar" ] || die "download incomplete: $jar missing (log: $log)"
done
compgen -G "$tmp/$logging" >/dev/null || die "download incomplete: no $logging (log: $log)"
if [ $ZK_ERA = 1 ]; then
  # the ZooKeeper server runs the jars as resolved (ZooKeeper 3.4 of the release's pom); the brokers the
  # ZooKeeper 3.5 client, which resolves addresses on Java 14+ (ZOOKEEPER-3779)
  compgen -G "$tmp/zookeeper-3.*.jar" >/dev/null || die "download incomplete: no zookeeper jar (log: $log)"
  rm -rf "$DEST/zookeeper"
  cp -r "$tmp" "$DEST/zookeeper"
  rm -f "$tmp"/zookeeper-3.*.jar
  for artifact in zookeeper zookeeper-jute; do
    mvn -B -q -Dstyle.color=never -f "$POM" -Dmaven.repo.local="$KP_CACHE/m2" dependency:copy \
      -Dartifact="org.apache.zookeeper:$artifact:$ZK_CLIENT_VERSION" -DoutputDirectory="$tmp" >>"$log" 2>&1 \
      || die "Maven could not download the ZooKeeper $ZK_CLIENT_VERSION client ($(maven_failure "$log")); full log: $log"
  done
fi
touch "$tmp/.complete"
rm -rf "$LIBS"
mv "$tmp" "$LIBS"
trap - EXIT
[ $tiered = 0 ] || fetch_tiered
echo "kafka fetch: $(ls "$LIBS" | wc -l) jars in $(( $(date +%s) - start ))s" >&2
echo "$LIBS"
