package session

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestNegotiateTimeout(t *testing.T) {
	const tick = 2 * time.Second
	tests := []struct {
		name                string
		requested, min, max time.Duration
		want                time.Duration
	}{
		{"within", 10 * time.Second, 2 * tick, 20 * tick, 10 * time.Second},
		{"below min", time.Second, 2 * tick, 20 * tick, 2 * tick},
		{"zero", 0, 2 * tick, 20 * tick, 2 * tick},
		{"negative", -time.Second, 2 * tick, 20 * tick, 2 * tick},
		{"above max", time.Hour, 2 * tick, 20 * tick, 20 * tick},
		{"at min", 2 * tick, 2 * tick, 20 * tick, 2 * tick},
		{"at max", 20 * tick, 2 * tick, 20 * tick, 20 * tick},
		{"min above max: max wins", time.Second, 30 * time.Second, 10 * time.Second, 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NegotiateTimeout(tc.requested, tc.min, tc.max); got != tc.want {
				t.Errorf("NegotiateTimeout(%v, %v, %v) = %v, want %v", tc.requested, tc.min, tc.max, got, tc.want)
			}
		})
	}
}

func TestNewPassword(t *testing.T) {
	src := bytes.NewReader(bytes.Repeat([]byte{7}, 40))
	pw, err := NewPassword(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(pw) != 16 || !bytes.Equal(pw, bytes.Repeat([]byte{7}, 16)) {
		t.Fatalf("password = %x", pw)
	}
	if _, err := NewPassword(strings.NewReader("short")); err == nil {
		t.Fatal("short source: want error")
	}
	boom := errors.New("boom")
	if _, err := NewPassword(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapping boom", err)
	}
}

func TestIDGeneratorLayout(t *testing.T) {
	now := time.UnixMilli(0x12_3456_789A)
	tests := []struct {
		name     string
		serverID int64
		now      time.Time
		want     int64
	}{
		{"server 1", 1, now, 0x01_12_3456_789A_0000},
		{"server 0", 0, now, 0x00_12_3456_789A_0000},
		{"server 0x7f", 0x7f, now, 0x7f_12_3456_789A_0000},
		{"server 0xfe is negative", 0xfe, now, u64(0xfe_12_3456_789A_0000)},
		{"only low byte of server id", 0x101, now, 0x01_12_3456_789A_0000},
		// Only the low 40 bits of the millisecond clock survive the shift.
		{"clock high bits dropped", 3, time.UnixMilli(0xAB_12_3456_789A), 0x03_12_3456_789A_0000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewIDGenerator(tc.serverID, tc.now)
			if got := g.Next(); got != tc.want {
				t.Fatalf("first id = %#x, want %#x", uint64(got), uint64(tc.want))
			}
			if got := g.Next(); got != tc.want+1 {
				t.Fatalf("second id = %#x, want %#x", uint64(got), uint64(tc.want+1))
			}
		})
	}
}

func u64(x uint64) int64 { return int64(x) }

func TestIDGeneratorSkipsReserved(t *testing.T) {
	// Server 0 at the epoch would start at 0, which means "no session".
	g := NewIDGenerator(0, time.UnixMilli(0))
	if got := g.Next(); got != 1 {
		t.Fatalf("first id = %d, want 1", got)
	}
	// Server 0x80 with a clock whose low 40 bits are zero would start at the
	// container ephemeral owner.
	g = NewIDGenerator(0x80, time.UnixMilli(1<<40))
	if got := g.Next(); got == math.MinInt64 {
		t.Fatal("issued math.MinInt64")
	} else if got != math.MinInt64+1 {
		t.Fatalf("first id = %#x", uint64(got))
	}
}

// TestIDGeneratorSkipPast: a taken id moves the sequence past it, but only
// forward and only within the generator's own server byte.
func TestIDGeneratorSkipPast(t *testing.T) {
	start := time.UnixMilli(0x12_3456_789A)
	const first = 0x01_12_3456_789A_0000
	tests := []struct {
		name string
		skip int64
		want int64 // the next id after the skip
	}{
		{"ahead", first + 41, first + 42},
		{"the next id itself", first, first + 1},
		{"behind is ignored", first - 5, first},
		{"another server's id is ignored", 0x02_12_3456_789A_0100, first},
		{"an id whose successor is the next server's is ignored", 0x01_ff_ffff_ffff_ffff, first},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewIDGenerator(1, start)
			g.SkipPast(tc.skip)
			if got := g.Next(); got != tc.want {
				t.Fatalf("next id = %#x, want %#x", uint64(got), uint64(tc.want))
			}
		})
	}
	// Server 0xfe's ids are negative; the order within the byte holds.
	g := NewIDGenerator(0xfe, start)
	base := g.Next()
	g.SkipPast(base + 9)
	if got := g.Next(); got != base+10 {
		t.Fatalf("server 0xfe: next id = %#x, want %#x", uint64(got), uint64(base+10))
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestTrackerBuckets(t *testing.T) {
	const tick = 100 * time.Millisecond
	const none = math.MinInt // no NextDeadline
	type step struct {
		op      string // add, touch, remove, expire, reset
		id      int64
		timeout time.Duration
		ms      int
		want    []int64 // expire: ids; touch: non-empty means true
		next    int     // expected NextDeadline in ms after the step
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"rounds up strictly past the deadline", []step{
			// base is t0; 0+1000 → bucket 1100 (strictly after 1000).
			{op: "add", id: 1, timeout: time.Second, ms: 0, next: 1100},
			{op: "expire", ms: 1099, want: nil, next: 1100},
			{op: "expire", ms: 1100, want: []int64{1}, next: none},
		}},
		{"touch within the tick keeps the bucket", []step{
			{op: "add", id: 1, timeout: time.Second, ms: 0, next: 1100},
			{op: "touch", id: 1, ms: 99, want: []int64{1}, next: 1100},
			{op: "touch", id: 1, ms: 100, want: []int64{1}, next: 1200},
			{op: "touch", id: 1, ms: 250, want: []int64{1}, next: 1300},
		}},
		{"touch unknown", []step{
			{op: "touch", id: 9, ms: 0, want: nil, next: none},
		}},
		{"expired sessions are gone", []step{
			{op: "add", id: 1, timeout: 500 * time.Millisecond, ms: 0, next: 600},
			{op: "expire", ms: 700, want: []int64{1}, next: none},
			{op: "touch", id: 1, ms: 700, want: nil, next: none},
		}},
		{"several buckets expire in order", []step{
			{op: "add", id: 3, timeout: 300 * time.Millisecond, ms: 0, next: 400},
			{op: "add", id: 1, timeout: 100 * time.Millisecond, ms: 0, next: 200},
			{op: "add", id: 2, timeout: 200 * time.Millisecond, ms: 0, next: 200},
			{op: "add", id: 4, timeout: 100 * time.Millisecond, ms: 50, next: 200},
			{op: "expire", ms: 10_000, want: []int64{1, 4, 2, 3}, next: none},
		}},
		{"remove", []step{
			{op: "add", id: 1, timeout: time.Second, ms: 0, next: 1100},
			{op: "add", id: 2, timeout: 2 * time.Second, ms: 0, next: 1100},
			{op: "remove", id: 1, next: 2100},
			{op: "remove", id: 1, next: 2100},
			{op: "expire", ms: 5000, want: []int64{2}, next: none},
		}},
		{"re-add changes the timeout", []step{
			{op: "add", id: 1, timeout: time.Second, ms: 0, next: 1100},
			{op: "add", id: 1, timeout: 300 * time.Millisecond, ms: 10, next: 400},
			{op: "touch", id: 1, ms: 200, want: []int64{1}, next: 600},
		}},
		{"reset all", []step{
			{op: "add", id: 1, timeout: time.Second, ms: 0, next: 1100},
			{op: "add", id: 2, timeout: 2 * time.Second, ms: 0, next: 1100},
			{op: "reset", ms: 5000, next: 6100},
			{op: "expire", ms: 6100, want: []int64{1}, next: 7100},
			{op: "expire", ms: 7100, want: []int64{2}, next: none},
		}},
		{"shift delays every deadline", []step{
			{op: "add", id: 1, timeout: time.Second, ms: 0, next: 1100},
			{op: "add", id: 2, timeout: 2 * time.Second, ms: 0, next: 1100},
			{op: "shift", ms: 500, next: 1600},
			{op: "expire", ms: 1599, want: nil, next: 1600},
			{op: "expire", ms: 1600, want: []int64{1}, next: 2600},
			{op: "touch", id: 2, ms: 1600, want: []int64{2}, next: 3700},
		}},
		{"times before the base", []step{
			{op: "add", id: 1, timeout: time.Second, ms: 0, next: 1100},
			{op: "touch", id: 1, ms: -5000, want: []int64{1}, next: -3900},
			{op: "expire", ms: -3901, want: nil, next: -3900},
			{op: "expire", ms: -3900, want: []int64{1}, next: none},
		}},
		{"zero timeout still lands in the future", []step{
			{op: "add", id: 1, timeout: 0, ms: 0, next: 100},
			{op: "expire", ms: 0, want: nil, next: 100},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(tick)
			for i, s := range tc.steps {
				switch s.op {
				case "add":
					tr.Add(s.id, s.timeout, at(s.ms))
				case "touch":
					if got, want := tr.Touch(s.id, at(s.ms)), len(s.want) > 0; got != want {
						t.Fatalf("step %d: Touch = %v, want %v", i, got, want)
					}
				case "remove":
					tr.Remove(s.id)
				case "expire":
					if got := tr.Expired(at(s.ms)); !slices.Equal(got, s.want) {
						t.Fatalf("step %d: Expired = %v, want %v", i, got, s.want)
					}
				case "reset":
					tr.ResetAll(at(s.ms))
				case "shift":
					tr.Shift(time.Duration(s.ms) * time.Millisecond)
				}
				next, ok := tr.NextDeadline()
				switch {
				case s.next == none && ok:
					t.Fatalf("step %d: NextDeadline = %v, want none", i, next.Sub(t0))
				case s.next != none && !ok:
					t.Fatalf("step %d: NextDeadline none, want %dms", i, s.next)
				case ok && !next.Equal(at(s.next)):
					t.Fatalf("step %d: NextDeadline = %v, want %dms", i, next.Sub(t0), s.next)
				}
			}
		})
	}
}

func TestTrackerTimeoutAndLen(t *testing.T) {
	tr := NewTracker(time.Second)
	if _, ok := tr.Timeout(1); ok {
		t.Fatal("Timeout of unknown session reported ok")
	}
	tr.Add(1, 4*time.Second, t0)
	tr.Add(2, -time.Second, t0)
	if d, ok := tr.Timeout(1); !ok || d != 4*time.Second {
		t.Fatalf("Timeout(1) = %v, %v", d, ok)
	}
	if d, _ := tr.Timeout(2); d != 0 {
		t.Fatalf("negative timeout kept as %v", d)
	}
	if tr.Len() != 2 {
		t.Fatalf("Len = %d", tr.Len())
	}
	tr.Remove(2)
	if tr.Len() != 1 {
		t.Fatalf("Len after Remove = %d", tr.Len())
	}
}

func TestNewTrackerRejectsBadTick(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewTracker(0) did not panic")
		}
	}()
	NewTracker(0)
}

// TestTrackerExpiryBound drives many sessions with random touches on a fake
// clock and checks the promise the server relies on: a session is handed out
// by Expired no earlier than timeout and no later than timeout+tick after its
// last touch, provided Expired is called whenever NextDeadline comes round.
func TestTrackerExpiryBound(t *testing.T) {
	for _, tick := range []time.Duration{time.Millisecond, 7 * time.Millisecond, 2 * time.Second, 3*time.Second + 1} {
		t.Run(tick.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tick), 42))
			tr := NewTracker(tick)
			const sessions = 200
			lastTouch := map[int64]time.Time{}
			timeouts := map[int64]time.Duration{}
			now := t0.Add(time.Duration(rng.Int64N(int64(time.Hour))))
			for id := int64(1); id <= sessions; id++ {
				to := tick*2 + time.Duration(rng.Int64N(int64(18*tick)))
				tr.Add(id, to, now)
				lastTouch[id], timeouts[id] = now, to
			}
			check := func(at time.Time) {
				for _, id := range tr.Expired(at) {
					silent := at.Sub(lastTouch[id])
					if silent < timeouts[id] || silent > timeouts[id]+tick {
						t.Fatalf("session %d expired after %v of silence; timeout %v tick %v", id, silent, timeouts[id], tick)
					}
					delete(lastTouch, id)
				}
				// Anyone still tracked must not be overdue.
				for id, last := range lastTouch {
					if at.Sub(last) > timeouts[id]+tick {
						t.Fatalf("session %d overdue: silent %v, timeout %v", id, at.Sub(last), timeouts[id])
					}
				}
			}
			for step := 0; step < 3000 && len(lastTouch) > 0; step++ {
				// Advance to a random instant, but never past the next
				// deadline: the server's expiry loop wakes up then.
				adv := time.Duration(rng.Int64N(int64(tick)*3 + 1))
				if next, ok := tr.NextDeadline(); ok && now.Add(adv).After(next) {
					now = next
					check(now)
					continue
				}
				now = now.Add(adv)
				check(now)
				// Touch a few random live sessions; most keep talking, some
				// fall silent for good.
				for range rng.IntN(20) {
					id := int64(rng.IntN(sessions) + 1)
					if id%5 == 0 {
						continue
					}
					if tr.Touch(id, now) {
						lastTouch[id] = now
					} else if _, live := lastTouch[id]; live {
						t.Fatalf("Touch(%d) = false for a live session", id)
					}
				}
			}
			if tr.Len() != len(lastTouch) {
				t.Fatalf("Len = %d, model has %d", tr.Len(), len(lastTouch))
			}
		})
	}
}

func BenchmarkTouch(b *testing.B) {
	const n = 1000
	const tick = 2 * time.Second
	tr := NewTracker(tick)
	now := t0
	for id := int64(1); id <= n; id++ {
		tr.Add(id, 10*time.Second, now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// 10µs between touches: every ~200k touches the clock crosses a tick
		// and sessions move to a new bucket, as pings do on a busy server.
		now = now.Add(10 * time.Microsecond)
		tr.Touch(int64(i%n)+1, now)
		if i%1024 == 0 {
			tr.NextDeadline()
			tr.Expired(now)
		}
	}
}

// BenchmarkTouchNewBucket makes every touch move its session to another
// bucket, the worst case for Touch.
func BenchmarkTouchNewBucket(b *testing.B) {
	const n = 1000
	const tick = time.Millisecond
	tr := NewTracker(tick)
	now := t0
	for id := int64(1); id <= n; id++ {
		tr.Add(id, time.Second, now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now = now.Add(tick / 4)
		tr.Touch(int64(i%n)+1, now)
		if i%64 == 0 {
			tr.Expired(now)
		}
	}
}

func TestTrackerBucketList(t *testing.T) {
	tick := 100 * time.Millisecond
	tr := NewTracker(tick)
	now := time.Unix(1000, 0)
	tr.Add(1, time.Second, now)
	tr.Add(2, time.Second, now)
	tr.Add(3, 3*time.Second, now)
	b := tr.Buckets()
	if len(b) != 2 || len(b[0].Sessions) != 2 || len(b[1].Sessions) != 1 || b[1].Sessions[0] != 3 || !b[0].Expires.Before(b[1].Expires) {
		t.Fatalf("buckets = %+v", b)
	}
	tr.Remove(3)
	if b := tr.Buckets(); len(b) != 1 {
		t.Fatalf("after remove: %+v", b)
	}
}

// TestTouched: the tracker remembers each session's last touch, even one
// that leaves its deadline in the same bucket, and forgets an expired
// session.
func TestTouched(t *testing.T) {
	tr := NewTracker(time.Second)
	base := time.Unix(1000, 0)
	tr.Add(1, 5*time.Second, base)
	if at, ok := tr.Touched(1); !ok || !at.Equal(base) {
		t.Fatalf("after Add: %v %v", at, ok)
	}
	later := base.Add(300 * time.Millisecond) // same bucket
	tr.Touch(1, later)
	if at, ok := tr.Touched(1); !ok || !at.Equal(later) {
		t.Fatalf("after a touch in the same bucket: %v %v", at, ok)
	}
	if _, ok := tr.Touched(2); ok {
		t.Fatal("an unknown session has a touch")
	}
	tr.Expired(base.Add(time.Hour))
	if _, ok := tr.Touched(1); ok {
		t.Fatal("an expired session has a touch")
	}
}
