#!/usr/bin/env bash
# `make test`: lint, the rig's build and the unit tests first, side by side (minutes; a failure stops here), then
# the rig-backed tests: in the lanes of tests/rig/lanes.py side by side, each against a rig of its own that
# scripts/with-rig.sh brings up and always tears down (KP_TEST_LANES=serial: in one pytest against one rig instead). Each
# lane's output is printed whole when all have ended; the exit status is 0 only if every step passed.
# $PYTEST_ARGS is passed to every pytest run.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
read -r -a extra <<<"${PYTEST_ARGS:-}"
# every pytest's temp dirs (tmp_path) and the lanes' logs live in one dir of this run, removed when it ends:
# pytest's default, /tmp/pytest-of-$USER with its last three runs kept, outlived `make test` (30 MB a run)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kp-test.XXXXXX")
lint= build=
# the bytecode of the project's own modules (the venv holds the packages'), so that the hundreds of processes
# the tests start (operators, CLIs, pytest) load it instead of compiling on import: nothing else writes it
# where PYTHONDONTWRITEBYTECODE is set (0.3-0.4 s of CPU per process importing the operator)
$PY -m compileall -qq -j 0 -x /testdata/ operator tests || true
trap '[[ -n $lint ]] && kill "$lint" 2>/dev/null; [[ -n $build ]] && kill "$build" 2>/dev/null; rm -rf "$tmp"' EXIT

# lint and the rig's build (a check of its caches when warm) beside the unit tests: mypy, the import
# contracts and the build use one core at a time, which the unit tests' workers share; their output is
# printed after the unit tests'
make --no-print-directory lint >"$tmp/lint.log" 2>&1 &
lint=$!
make --no-print-directory rig-build >"$tmp/rig-build.log" 2>&1 &
build=$!
$PY -m pytest tests/unit -q -n auto -p no:cacheprovider --basetemp="$tmp/unit" --durations=10 "${extra[@]}"
unit=$?
wait "$lint"
linted=$?
lint=
cat "$tmp/lint.log"
wait "$build"
built=$?
build=
cat "$tmp/rig-build.log"
((linted == 0)) || { echo "test: lint failed; the rig-backed tests were not run" >&2; exit 1; }
((unit == 0)) || { echo "test: unit tests failed; the rig-backed tests were not run" >&2; exit 1; }
((built == 0)) || { echo "test: building the rig failed" >&2; exit 1; }

# KP_TEST_LANES=serial runs the rig-backed tests in one pytest against one rig (about twice the wall time of
# the lanes side by side; docs/development.md).
if [[ ${KP_TEST_LANES:-parallel} == serial ]]; then
  bash scripts/with-rig.sh $PY -m pytest tests/e2e tests/integration -q -p no:cacheprovider \
    --basetemp="$tmp/serial" --durations=25 "${extra[@]}"
  exit $?
fi

# KP_TEST_STRESS=1: one busy loop per core beside the lanes for their whole run (a machine about twice as
# slow, as a cold or shared one is: races a warm machine hides lose there); stopped with the lanes, and
# bounded by `timeout` should this script itself be killed
hogs=()
if [[ ${KP_TEST_STRESS:-0} == 1 ]]; then
  for _ in $(seq "$(nproc)"); do
    timeout 10800 $PY -c 'while True: pass' &
    hogs+=($!)
  done
  echo "test: KP_TEST_STRESS=1: ${#hogs[@]} busy loop(s) run beside the lanes"
fi
# (never a bare `wait`: with no hog it would reap the lanes too, and their exit codes with them)
stop_hogs() {
  if ((${#hogs[@]})); then
    kill "${hogs[@]}" 2>/dev/null
    wait "${hogs[@]}" 2>/dev/null
  fi
  hogs=()
}

logs=$tmp/logs
mkdir "$logs"
mapfile -t lanes < <($PY tests/rig/lanes.py names)
pids=()
for lane in "${lanes[@]}"; do
  mapfile -t paths < <($PY tests/rig/lanes.py paths "$lane")
  (
    eval "export $($PY tests/rig/lanes.py env "$lane")"
    exec bash scripts/with-rig.sh $PY -m pytest "${paths[@]}" -q -p no:cacheprovider --basetemp="$tmp/$lane" \
      --durations=15 "${extra[@]}"
  ) >"$logs/$lane.log" 2>&1 &
  pids+=($!)
done
# a stopped `make test` stops its lanes, which stop their pytest and tear their rigs down
trap 'kill -TERM "${pids[@]}" 2>/dev/null; stop_hogs; wait; exit 143' TERM
trap 'kill -TERM "${pids[@]}" 2>/dev/null; stop_hogs; wait; exit 130' INT

# a line per lane every two minutes (its latest pytest output), so a long run shows it is alive
alive() { for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && return 0; done; return 1; }
ticks=0
while alive; do
  sleep 5
  ticks=$((ticks + 5))
  if ((ticks % 120 == 0)); then
    for lane in "${lanes[@]}"; do echo "test: lane $lane: $(tail -n 1 "$logs/$lane.log" | cut -c1-100)"; done
  fi
done

stop_hogs
status=0
for i in "${!lanes[@]}"; do
  wait "${pids[$i]}"
  rc=$?
  echo "==================== lane ${lanes[$i]} (exit $rc) ===================="
  cat "$logs/${lanes[$i]}.log"
  [[ $rc == 0 ]] || status=1
done
[[ $status == 0 ]] && echo "test: lint, unit tests and every lane passed" || echo "test: a lane failed (above)" >&2
exit $status
