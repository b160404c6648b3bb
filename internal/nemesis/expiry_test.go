package nemesis

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestExpiredAnswerIsNoContact replays what TestEnsembleNemesisDisk saw
// with seed 1795789472584273453 (14:30 UTC): live session 9's client last
// heard from a server at 14:30:49.282, node 1 expired the session at
// 14:30:53.622, and the client, reconnecting, was told so at 14:30:53.750.
// The check counted that answer as the session's last ("its client was
// last answered at 14:30:53.750 (-128ms before)"): the session is not
// one expired while it was answered.
func TestExpiredAnswerIsNoContact(t *testing.T) {
	day := time.Date(2026, 11, 27, 14, 30, 0, 0, time.UTC)
	lastAnswer := day.Add(49282 * time.Millisecond)
	expiredAt := day.Add(53622 * time.Millisecond)
	toldAt := day.Add(53750 * time.Millisecond)
	const id = 0x3a21d69f3c90003

	s := &zkSession{workload: "live", has: make(chan struct{}, 1), firstID: id, lastID: id}
	s.heardNow.Store(lastAnswer.UnixNano()) // the last reply on the old connection
	if _, err := s.dial("tcp", "127.0.0.1:1", time.Millisecond); err == nil {
		t.Fatal("dialled a closed port")
	}
	s.heardNow.Store(toldAt.UnixNano()) // the handshake answer: expired
	s.event(zk.Event{Type: zk.EventSession, State: zk.StateExpired})

	if got, at := s.LastHeard(); got != id || !at.Equal(lastAnswer) {
		t.Errorf("LastHeard = 0x%x at %s, want 0x%x at %s", got, at.Format(clock), int64(id), lastAnswer.Format(clock))
	}
	r := &runner{sessions: []*zkSession{s}, churn: &churnWorkload{}}
	h := r.heardLog()
	if gap := expiredAt.Sub(h[id]); gap < 3*time.Second {
		t.Errorf("the check sets the expiry %v after the last answer (at %s), want 4.34s", gap, h[id].Format(clock))
	}
}
