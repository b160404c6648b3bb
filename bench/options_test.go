package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseArgsRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in the error
	}{
		{[]string{"--target", "192.0.2.1:2181"}, "not a loopback address"},
		{[]string{"--target", "10.1.2.3"}, "not a loopback address"},
		{[]string{"--target", "127.0.0.1:2181,192.0.2.7:2181"}, "192.0.2.7"},
		{[]string{"--against", "[2001:db8::1]:2181"}, "not a loopback address"},
		{[]string{"--target", "127.0.0.1:2181/chroot"}, "chroot"},
		{[]string{"--target", "127.0.0.1:99999"}, "no valid port"},
		{[]string{"--target", "127.0.0.1:zk"}, "no valid port"},
		{[]string{"--target", ":2181"}, "no host"},
		{[]string{"--target", ","}, "no server"},
		{[]string{"--target", "no-such-host.invalid:2181"}, "resolve"},
		{[]string{"nosuch"}, `unknown workload "nosuch"`},
		{[]string{"lock", "lock"}, "named twice"},
		{[]string{"--rounds", "0"}, "--rounds 0"},
		{[]string{"--rounds", "101"}, "--rounds 101"},
		{[]string{"--sessions", "-1"}, "--sessions -1"},
		{[]string{"--sessions", "10001"}, "--sessions 10001"},
		{[]string{"--acquisitions", "-5"}, "--acquisitions"},
		{[]string{"--ops", "100000001"}, "--ops"},
		{[]string{"--window", "10001"}, "--window"},
		{[]string{"--size", "2000000"}, "--size"},
		{[]string{"--expire", "-2"}, "--expire"},
		{[]string{"--znodes", "-1"}, "--znodes"},
		{[]string{"--max-time", "0s"}, "--max-time"},
		{[]string{"--max-time", "-1s"}, "--max-time"},
		{[]string{"--max-time", "25h"}, "--max-time"},
		{[]string{"--connect-timeout", "0s"}, "--connect-timeout"},
		{[]string{"--expire-timeout", "-1s"}, "--expire-timeout"},
		{[]string{"--against-pid", strconv.Itoa(os.Getpid())}, "--against-pid needs --against"},
		{[]string{"--pid", "-3"}, "not a process id"},
		{[]string{"--pid", strconv.Itoa(os.Getpid()) + ",0"}, "not a process id"},
		{[]string{"--pid", "999999999"}, "--pid"},
		{[]string{"--no-such-flag"}, "unknown flag"},
	} {
		_, err := parseArgs(context.Background(), c.args, io.Discard)
		if err == nil {
			t.Errorf("parseArgs(%q) accepted it, want an error with %q", c.args, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseArgs(%q) = %v, want an error with %q", c.args, err, c.want)
		}
	}
}

func TestParseArgsAccepts(t *testing.T) {
	ctx := context.Background()
	o, err := parseArgs(ctx, nil, io.Discard)
	if err != nil {
		t.Fatalf("no arguments: %v", err)
	}
	if got := strings.Join(o.Target.Servers, ","); got != "127.0.0.1:2181" {
		t.Errorf("default target %q, want 127.0.0.1:2181", got)
	}
	if len(o.Workloads) != len(workloads) || o.Rounds != 3 || !o.WarmUp || o.againstSet {
		t.Errorf("defaults: %d workloads, %d rounds, warm-up %v, against %v; want all, 3, true, false",
			len(o.Workloads), o.Rounds, o.WarmUp, o.againstSet)
	}

	o, err = parseArgs(ctx, []string{"--target", "localhost,[::1]:2182", "--against", "127.0.0.2:3000",
		"--pid", strconv.Itoa(os.Getpid()), "--against-pid", fmt.Sprintf("%d,%d", os.Getpid(), os.Getppid()),
		"--rounds", "5", "--warmup=false", "--max-time", "2s", "--expire", "-1", "stock", "lock"}, io.Discard)
	if err != nil {
		t.Fatalf("valid arguments refused: %v", err)
	}
	if got := strings.Join(o.Target.Servers, ","); got != "localhost:2181,[::1]:2182" {
		t.Errorf("target servers %q, want localhost:2181,[::1]:2182", got)
	}
	if got := strings.Join(o.Against.Servers, ","); got != "127.0.0.2:3000" || !o.againstSet {
		t.Errorf("against servers %q (set %v)", got, o.againstSet)
	}
	if len(o.Workloads) != 2 || o.Workloads[0] != stockWorkload || o.Workloads[1] != lockWorkload {
		t.Errorf("workloads not stock, lock in that order")
	}
	if o.Rounds != 5 || o.WarmUp || o.MaxTime != 2*time.Second || !slices.Equal(o.Target.PIDs, []int{os.Getpid()}) ||
		!slices.Equal(o.Against.PIDs, []int{os.Getpid(), os.Getppid()}) {
		t.Errorf("options %+v", o)
	}
	if _, _, expire, _ := sessionsSize(o.Size); expire != 0 {
		t.Errorf("--expire -1 leaves %d sessions to expire, want none", expire)
	}

	// --allow-remote lets a non-loopback address through (nothing is
	// dialled while parsing).
	if _, err := parseArgs(ctx, []string{"--allow-remote", "--target", "192.0.2.1:2181"}, io.Discard); err != nil {
		t.Errorf("--allow-remote still refuses: %v", err)
	}
	if _, err := parseArgs(ctx, []string{"--help"}, io.Discard); err != errHelp {
		t.Errorf("--help = %v, want errHelp", err)
	}
	if o, err := parseArgs(ctx, []string{"all"}, io.Discard); err != nil || len(o.Workloads) != len(workloads) {
		t.Errorf("all: %v", err)
	}
}

// TestSizeDefaults: a flag left out takes each workload's default; given,
// it applies to every workload using it.
func TestSizeDefaults(t *testing.T) {
	if n, a := lockSize(Size{}); n != 100 || a != 50 {
		t.Errorf("lock defaults %d × %d, want 100 × 50", n, a)
	}
	if n, s := stockSize(Size{}); n != 100 || s != 5000 {
		t.Errorf("stock defaults %d sessions, stock %d; want 100, 5000", n, s)
	}
	for w, want := range map[*workload]string{
		readSyncWorkload:       "50000 getData of 100 bytes from 16 sessions, 1 outstanding per session",
		writePipelinedWorkload: "100000 setData of 100 bytes from 4 sessions, 64 outstanding per session",
		fanoutWorkload:         "200 sessions watch one znode; 20 setData rounds",
	} {
		if got := w.describe(Size{}); got != want {
			t.Errorf("%s defaults: %q, want %q", w.name, got, want)
		}
	}
	if n, w, _, _ := opsSize(Size{Window: 8, Sessions: 2}, opsKind{pipelined: true}); n != 2 || w != 8 {
		t.Errorf("pipelined with --sessions 2 --window 8: %d sessions, window %d", n, w)
	}
	if _, w, _, _ := opsSize(Size{Window: 8}, opsKind{}); w != 1 {
		t.Errorf("a sync workload took --window: %d outstanding", w)
	}
	if z, b, _, _ := memorySize(Size{}); z != 1_000_000 || b != 100 {
		t.Errorf("memory defaults %d × %d bytes, want 1000000 × 100", z, b)
	}
	if churn, par, expire, to := sessionsSize(Size{}); churn != 1000 || par != 8 || expire != 4 || to != 4*time.Second {
		t.Errorf("sessions defaults %d %d %d %v", churn, par, expire, to)
	}
}

func TestReadRSS(t *testing.T) {
	rss, err := readRSS(os.Getpid())
	if err != nil {
		t.Fatalf("readRSS(self): %v", err)
	}
	// A running Go test binary holds at least a megabyte and, on any
	// machine this runs on, less than its total memory.
	if rss < 1<<20 || rss > 1<<40 {
		t.Errorf("readRSS(self) = %d bytes", rss)
	}
	// An ensemble's figure is its members' sum.
	parent, err := readRSS(os.Getppid())
	if err != nil {
		t.Fatalf("readRSS(parent): %v", err)
	}
	both, err := readRSS(os.Getpid(), os.Getppid())
	if err != nil {
		t.Fatalf("readRSS(self, parent): %v", err)
	}
	// Each was read at its own moment: allow for the heap moving between.
	if diff := both - rss - parent; diff < -4<<20 || diff > 4<<20 {
		t.Errorf("readRSS(self, parent) = %d, want about %d + %d", both, rss, parent)
	}
}
