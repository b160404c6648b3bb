package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/wire"
)

func TestLatencyStats(t *testing.T) {
	tests := []struct {
		samples []int64
		lo, hi  int64
		avg     float64
	}{
		{nil, 0, 0, 0},
		{[]int64{4}, 4, 4, 4},
		{[]int64{1, 2}, 1, 2, 1.5},
		{[]int64{0, 0, 1}, 0, 1, 0.3333},
		{[]int64{10, 0, 5, 7}, 0, 10, 5.5},
	}
	for _, tc := range tests {
		l := newLatencyStats()
		for _, s := range tc.samples {
			l.add(s)
		}
		lo, avg, hi := l.read()
		if lo != tc.lo || hi != tc.hi || avg != tc.avg {
			t.Errorf("%v: got %d/%v/%d, want %d/%v/%d", tc.samples, lo, avg, hi, tc.lo, tc.avg, tc.hi)
		}
		l.reset()
		if lo, avg, hi := l.read(); lo != 0 || avg != 0 || hi != 0 {
			t.Errorf("%v: after reset %d/%v/%d", tc.samples, lo, avg, hi)
		}
	}
}

// TestConnectionStatistics follows one raw session through cons, crst,
// srst and mntr: its counts, last operation, xid and zxid, and the
// outstanding count returning to zero after a pipelined burst and an
// abandoned connection.
func TestConnectionStatistics(t *testing.T) {
	s := startServer(t, Config{})
	addr := s.Addr().String()
	word := func(w string) string {
		t.Helper()
		out, err := realzk.FourLetterWord(addr, w, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	r := dialRaw(t, addr)
	resp := r.handshake(30000, 0, nil)
	r.send(1, wire.OpCreate, &wire.CreateRequest{Path: "/s", Data: []byte("v"), ACL: []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
	if h, _ := r.reply(); h.Err != wire.CodeOK {
		t.Fatalf("create: %+v", h)
	}
	const reads = 5
	for i := range reads {
		r.send(int32(2+i), wire.OpGetData, &wire.PathWatchRequest{Path: "/s"})
		if h, _ := r.reply(); h.Err != wire.CodeOK {
			t.Fatalf("getData: %+v", h)
		}
	}
	line := sessionLine(t, word("cons"), resp.SessionID)
	// connect + create + reads, each answered once.
	for _, want := range []string{
		"queued=0,", "recved=" + strconv.Itoa(2+reads) + ",", "sent=" + strconv.Itoa(2+reads) + ",",
		",lop=GETD,", ",to=30000,", ",lcxid=0x" + strconv.FormatInt(1+reads, 16) + ",", ",lzxid=0x",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("cons line %q lacks %q", line, want)
		}
	}
	if got := word("crst"); got != "Connection stats reset.\n" {
		t.Fatalf("crst = %q", got)
	}
	line = sessionLine(t, word("cons"), resp.SessionID)
	if !strings.Contains(line, "recved=0,sent=0,") || !strings.Contains(line, "lop=NA") {
		t.Errorf("after crst: %q", line)
	}
	if got := word("srst"); got != "Server stats reset.\n" {
		t.Fatalf("srst = %q", got)
	}
	// After srst only the srvr itself was received, and srst's answer sent.
	srvr := word("srvr")
	if !strings.Contains(srvr, "Received: 1\nSent: 1\n") || !strings.Contains(srvr, "Latency min/avg/max: 0/0.0/0\n") {
		t.Errorf("srvr after srst:\n%s", srvr)
	}

	// A pipelined burst, half of it left unread by a connection that then
	// goes away, leaves nothing outstanding; nor does an auth packet that
	// does not decode, which closes its connection unanswered.
	burst := dialRaw(t, addr)
	burst.handshake(30000, 0, nil)
	for i := range 500 {
		burst.send(int32(i+1), wire.OpExists, &wire.PathWatchRequest{Path: "/s"})
	}
	for range 250 {
		burst.reply()
	}
	_ = burst.nc.Close()
	bad := dialRaw(t, addr)
	bad.handshake(30000, 0, nil)
	bad.writeRaw(frame(func(e *wire.Encoder) {
		(&wire.RequestHeader{Xid: 1, Type: wire.OpAuth}).Encode(e)
		e.Int32(0)
		e.Int32(50) // scheme length past the end
	}))
	bad.expectClosed()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := regexp.MustCompile(`zk_outstanding_requests\t(-?\d+)`).FindStringSubmatch(word("mntr"))
		if m != nil && m[1] == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outstanding requests stay at %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sessionLine finds the cons line of a session.
func sessionLine(t *testing.T, cons string, session int64) string {
	t.Helper()
	for _, ln := range strings.Split(cons, "\n") {
		if strings.Contains(ln, ",sid=0x"+strconv.FormatInt(session, 16)+",") {
			return ln
		}
	}
	t.Fatalf("no cons line for session 0x%x in:\n%s", session, cons)
	return ""
}
