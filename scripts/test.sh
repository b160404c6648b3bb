#!/usr/bin/env bash
# Runs every hutch test, the real-ZooKeeper side included: installs Debian's
# ZooKeeper, Curator, kazoo, pytest, JUnit and Chromium (for the live view's
# browser test) when they are missing, then go vet and go test (fuzz targets
# run their seed corpora), then the race detector over every package but
# conformance. With CI=true a test that would skip for want of
# real ZooKeeper or Chromium fails instead.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(zookeeper zookeeper-bin libcurator-recipes-java libcurator-framework-java python3-kazoo python3-pytest junit4 chromium)
if ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
  fi
  echo "== installing ${packages[*]}"
  "${sudo[@]}" apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${packages[@]}"
fi

echo "== go vet ./..."
go vet ./...

# The race detector's pass: every package but conformance (which drives
# servers from outside, through clients, for ten minutes; it passed under
# the detector when run by hand, CI=true go test -race ./conformance). The nemesis,
# the peer-port flood and the sync storm run in the first pass only: under
# the detector's 5-10x slowdown their timing bounds measure the detector,
# not hutch (the disk nemesis too: its freshness bound and its writes
# that must fill a disk within a deadline; and TestResyncInterruptedByFullDisk,
# 11,000 writes and a resync, 66 s under the detector against 18 s without
# it); the crash-consistency suite's
# concurrency is between processes, where the detector sees nothing.
# Three more assert timing rather than sharing, and failed only under the
# detector on a loaded machine: TestQuietTiming (no election while the
# timing stretches), TestPipesAreSharedAndBounded (400 calls at once on one
# follower: the leader's heartbeats starve) and TestBrowserLiveView (a
# browser against a 1,000-contender queue; 250 s under the detector, whose
# one report there was go-zookeeper v1.0.4's own, recvLoop against
# sendSetWatches on a reconnect). Their code paths run under the detector
# in the other tests of their packages.
mapfile -t race_packages < <(go list ./... | grep -v -E '/conformance$')
race_skip='^(TestClusterNemesis|TestClusterNemesisDisk|TestResyncInterruptedByFullDisk|TestEnsembleNemesis|TestEnsembleNemesisDisk|TestPeerPortSurvivesFlood|TestSyncStormOnFollower|TestCrashConsistency|TestQuietTiming|TestPipesAreSharedAndBounded|TestBrowserLiveView)$'

# The first pass runs everything, the disk nemesis (TestClusterNemesisDisk,
# TestEnsembleNemesisDisk) included: as root (CI is) it mounts its disks,
# and under CI=true a machine that cannot fails it rather than skipping.
# It ran by hand until 2026-11-27: the failures seen then were the
# nemesis's own (a damage fault on a node holding no log yet, left down;
# a check that took the answer "your session expired" for contact), and
# after their fixes 30 in-process and 15 process runs in a row passed
# (docs/ensemble.md, Disk faults, also for the one failure not explained).

log="$(mktemp)"
racelog="$(mktemp)"
trap 'rm -f "$log" "$racelog"' EXIT
start=$SECONDS
set +e
echo "== go test ./..."
go test -count=1 -timeout 25m -v ./... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo "== go test -race: ${#race_packages[@]} packages, all but conformance (-skip '$race_skip')"
go test -race -count=1 -timeout 25m -v -skip "$race_skip" "${race_packages[@]}" 2>&1 | tee "$racelog"
race_status=${PIPESTATUS[0]}
set -e

# -v prints one --- line per test and subtest, indented by depth.
count() { grep -cE "^ *--- $1: " "$2" || true; }
summarize() { # summarize LOG: counts, skips and packages of one pass
  local log=$1
  echo "tests: $(count PASS "$log") passed, $(count FAIL "$log") failed, $(count SKIP "$log") skipped"
  if grep -q '^WARNING: DATA RACE' "$log"; then
    echo "data races: $(grep -c '^WARNING: DATA RACE' "$log")"
  fi
  if [ "$(count SKIP "$log")" -gt 0 ]; then
    echo "skipped:"
    grep -E '^ *--- SKIP: ' "$log" | sed -E 's/^ *--- SKIP: /  /'
  fi
  echo "packages:"
  grep -E '^(ok|FAIL|\?)[[:space:]]+[[:alnum:]._/-]+([[:space:]]|$)' "$log" | sed -E 's/^/  /' || true
}
failures() { # failures NAME LOG: what failed in one pass, and why
  local name=$1 log=$2
  if [ "$(count FAIL "$log")" -eq 0 ] && ! grep -qE '^FAIL[[:space:]]' "$log"; then
    return
  fi
  echo "== what failed in the $name"
  grep -E '^FAIL[[:space:]]+[[:alnum:]._/-]+' "$log" | sed -E 's/^FAIL[[:space:]]+/  package /' || true
  grep -E '^ *--- FAIL: ' "$log" | sed -E 's/^ *--- FAIL: /  /' || true
  # -v streams a test's messages before its --- FAIL line, where a long
  # package's output buries them: repeat the last lines each failed test
  # wrote from a _test.go file (its t.Fatal or t.Error among them).
  echo "failure messages (the last test-file lines before each --- FAIL):"
  awk '
    /^=== RUN / { name = $3; n[name] = 0; more = -1; next }
    /^=== (CONT|NAME|PAUSE) / { name = $3; more = -1; next }
    /^ +[[:alnum:]_]+_test\.go:[0-9]+: / {
      line = $0; sub(/^ +/, "", line); at = n[name] % 12
      buf[name, at] = line; n[name]++; more = 6; next
    }
    # A multi-line message continues, indented deeper, on the next lines.
    /^         *[^ -]/ && more > 0 { line = $0; sub(/^ +/, "", line); buf[name, at] = buf[name, at] "\n      " line; more--; next }
    { more = -1 }
    /^ *--- FAIL: / {
      t = $3; print "  " t ":"
      k = n[t]; from = (k > 12) ? k - 12 : 0
      for (i = from; i < k; i++) print "    " substr(buf[t, i % 12], 1, 2000)
    }' "$log"
  # A panic or a timeout ends a package with no --- FAIL line for the test.
  grep -E -A3 '^(panic: |fatal error: )' "$log" | head -40 | sed -E 's/^/  /' || true
}
echo
echo "== summary ($((SECONDS - start))s, CI=${CI:-unset})"
summarize "$log"
echo
echo "== summary of the race detector's pass"
summarize "$racelog"
# Failures come last: CI keeps the tail of this output.
echo
failures "first pass" "$log"
failures "race detector's pass" "$racelog"
if [ "$status" -ne 0 ] || [ "$race_status" -ne 0 ]; then
  echo "RESULT: FAIL (go test exit status $status, under the race detector $race_status)"
  exit 1
fi
echo "RESULT: PASS"
