package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// TestEphemeralExpiryWindow measures when the ephemeral of a session whose TCP
// connection was cut disappears: within [timeout, timeout+tickTime] of the
// session's last packet, as with ZooKeeper's bucketed expiry.
func TestEphemeralExpiryWindow(t *testing.T) {
	const tick = 200 * time.Millisecond
	// Scheduling and 5 ms polling on a loaded machine, beyond the bound itself.
	const slack = 150 * time.Millisecond
	s := startServer(t, Config{TickTime: tick})
	addr := s.Addr().String()
	observer, _ := dial(t, addr, 10*time.Second)

	timeouts := []time.Duration{400 * time.Millisecond, 1000 * time.Millisecond, 2000 * time.Millisecond}
	for i, timeout := range timeouts {
		t.Run(timeout.String(), func(t *testing.T) {
			t.Parallel()
			path := fmt.Sprintf("/eph-%d", i)
			r := dialRaw(t, addr)
			resp := r.handshake(int32(timeout/time.Millisecond), 0, nil)
			if time.Duration(resp.Timeout)*time.Millisecond != timeout {
				t.Fatalf("negotiated %dms, want %v", resp.Timeout, timeout)
			}
			before := time.Now()
			r.send(1, wire.OpCreate, &wire.CreateRequest{Path: path, Flags: wire.ModeEphemeral,
				ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
			h, _ := r.reply()
			after := time.Now()
			if h.Err != wire.CodeOK {
				t.Fatalf("create %s: %v", path, h.Err)
			}
			_ = r.nc.Close() // cut the connection: no closeSession, no more pings
			var gone time.Time
			for deadline := after.Add(timeout + tick + 10*time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				ok, _, err := observer.Exists(path)
				if err != nil {
					t.Fatalf("exists: %v", err)
				}
				if !ok {
					gone = time.Now()
					break
				}
			}
			if gone.IsZero() {
				t.Fatalf("%s still there 10s past its timeout", path)
			}
			low, high := gone.Sub(before), gone.Sub(after)
			t.Logf("timeout %v tick %v: ephemeral gone %v–%v after the last packet", timeout, tick, high.Round(time.Millisecond), low.Round(time.Millisecond))
			if low < timeout {
				t.Errorf("timeout %v: gone after at most %v, before the timeout", timeout, low)
			}
			if high > timeout+tick+slack {
				t.Errorf("timeout %v: gone only after %v, past timeout+tick (%v) + %v slack", timeout, high, timeout+tick, slack)
			}
		})
	}
}

// TestTimeoutNegotiation checks the clamp into [2×tick, 20×tick].
func TestTimeoutNegotiation(t *testing.T) {
	s := startServer(t, Config{TickTime: 100 * time.Millisecond})
	for _, tt := range []struct{ ask, want int32 }{
		{1, 200}, {200, 200}, {1500, 1500}, {2000, 2000}, {60000, 2000},
	} {
		r := dialRaw(t, s.Addr().String())
		if got := r.handshake(tt.ask, 0, nil).Timeout; got != tt.want {
			t.Errorf("asked %dms: negotiated %dms, want %dms", tt.ask, got, tt.want)
		}
	}
}
