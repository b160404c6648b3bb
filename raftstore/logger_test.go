package raftstore

import (
	"bytes"
	"log/slog"

	"github.com/hashicorp/go-hclog"
	"strings"
	"testing"
	"time"
)

func TestRepeatsAllow(t *testing.T) {
	r := &repeats{last: make(map[string]*repeat)}
	t0 := time.Unix(0, 0)
	steps := []struct {
		msg         string
		at          time.Duration
		wantOK      bool
		wantDropped int
	}{
		{"a", 0, true, 0},
		{"a", time.Second, false, 0},
		{"b", time.Second, true, 0}, // another message is not held back
		{"a", 2 * time.Second, false, 0},
		{"a", repeatWindow + time.Second, true, 2},
		{"a", repeatWindow + 2*time.Second, false, 0},
	}
	for i, s := range steps {
		ok, dropped := r.allow(s.msg, t0.Add(s.at))
		if ok != s.wantOK || dropped != s.wantDropped {
			t.Fatalf("step %d (%s at %v): allow = %v, %d; want %v, %d", i, s.msg, s.at, ok, dropped, s.wantOK, s.wantDropped)
		}
	}
}

func TestHCLoggerDropsRepeatedErrors(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLogger(slog.New(slog.NewTextHandler(&buf, nil)), "raft")
	for range 50 {
		l.Error("failed to heartbeat to", "peer", "x")
		l.Named("sub").Info("entering follower state")
	}
	if n := strings.Count(buf.String(), "failed to heartbeat"); n != 1 {
		t.Fatalf("repeated error logged %d times, want 1:\n%s", n, buf.String())
	}
	if n := strings.Count(buf.String(), "entering follower state"); n != 50 {
		t.Fatalf("info lines logged %d times, want all 50", n)
	}
}

// TestHCLoggerFormats: values hclog formats itself come out formatted,
// as Raft's "initial configuration" line logs its servers with
// hclog.Fmt("%+v", ...); before, slog printed the format string.
func TestHCLoggerFormats(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLogger(slog.New(slog.NewTextHandler(&buf, nil)), "raft")
	type server struct{ ID, Address string }
	l.Info("initial configuration", "index", 1, "servers", hclog.Fmt("%+v", []server{{"1", "127.0.0.1:7001"}}), "mask", hclog.Hex(255))
	out := buf.String()
	if !strings.Contains(out, `servers="[{ID:1 Address:127.0.0.1:7001}]"`) || !strings.Contains(out, "mask=0xff") || strings.Contains(out, "%+v") {
		t.Fatalf("formatted values not rendered:\n%s", out)
	}
}

// TestHCLoggerFirstElection: a node that never knew a leader starting
// its first election (every node starting, a single one from zoo.cfg
// included) is not a warning; losing a known leader still is.
func TestHCLoggerFirstElection(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLogger(slog.New(slog.NewTextHandler(&buf, nil)), "raft")
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
	if out := buf.String(); !strings.Contains(out, "level=INFO") {
		t.Fatalf("the first election logged as:\n%s", out)
	}
	buf.Reset()
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "127.0.0.1:7001", "last-leader-id", "1")
	if out := buf.String(); !strings.Contains(out, "level=WARN") {
		t.Fatalf("losing a leader logged as:\n%s", out)
	}
}
