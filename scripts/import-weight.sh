#!/usr/bin/env bash
# What importing hutchtest costs a user: a module of its own outside this
# repository, whose one test imports only hutchtest (the replace directive
# points at a checkout of REV, HEAD by default), built and run by a cold
# `go test` (an empty build cache; the module cache as it is). Prints the
# packages and modules its test binary links and the time and CPU the
# cold build and run took. Usage: scripts/import-weight.sh [REV ...]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'git -C "$repo" worktree remove --force "$work/src" 2>/dev/null || true; rm -rf "$work"' EXIT

for rev in "${@:-HEAD}"; do
  git -C "$repo" worktree remove --force "$work/src" 2>/dev/null || true
  git -C "$repo" worktree add -q --detach "$work/src" "$rev"
  mod="$work/mod"
  rm -rf "$mod" && mkdir -p "$mod"
  cat >"$mod/go.mod" <<EOF
module example.com/importweight

go 1.26.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/hutchzk/hutch v0.0.0
)

replace github.com/hutchzk/hutch => $work/src
EOF
  cp "$work/src/go.sum" "$mod/go.sum"
  cat >"$mod/weight_test.go" <<'EOF'
package importweight

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/hutchtest"
)

func TestServe(t *testing.T) {
	srv := hutchtest.Start(t)
	c, _ := srv.Connect(10 * time.Second)
	if _, err := c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}
EOF
  cd "$mod"
  export GOFLAGS=-mod=mod GOWORK=off
  pkgs=$(go list -deps -test -f '{{if not .Standard}}{{.ImportPath}}{{end}}' . | grep -v '^example.com/' | grep -v '^$' | sort -u)
  others=$(printf '%s\n' "$pkgs" | grep -vc '^github.com/hutchzk/' || true)
  modules=$(go list -deps -test -f '{{with .Module}}{{.Path}}{{end}}' . | grep -v '^example.com/\|^github.com/hutchzk/hutch$\|^$' | sort -u)
  echo "== $rev ($(git -C "$work/src" rev-parse --short HEAD))"
  echo "packages linked besides the standard library: $(printf '%s\n' "$pkgs" | wc -l) ($others outside hutch), from $(printf '%s\n' "$modules" | wc -l) modules besides hutch:"
  printf '%s\n' "$modules" | paste -sd' '
  cache="$(mktemp -d)"
  /usr/bin/time -f "cold go test: %e s wall, %U s user, %S s system CPU" env GOCACHE="$cache" go test -count=1 . >/dev/null
  rm -rf "$cache"
  cd "$repo"
done
