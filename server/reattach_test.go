package server

import (
	"bytes"
	"testing"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/wire"
)

// TestReattachWrongPasswordKeepsLiveConnection: a connect that names a
// live session with a wrong password is refused as an expired session
// (timeout 0 in the connect response), and the session's current
// connection carries on. ZooKeeper 3.8 closes the session's current
// connection before it checks the password; hutch deliberately does not,
// since session ids are shown by cons and dump and anyone could otherwise
// disconnect any client (docs/operations.md, Known differences). The
// zookeeper case runs the same steps against real ZooKeeper and expects
// its behaviour, so a change on either side shows here.
func TestReattachWrongPasswordKeepsLiveConnection(t *testing.T) {
	tests := []struct {
		name         string
		start        func(tb testing.TB) string
		liveSurvives bool
	}{
		{"hutch", func(tb testing.TB) string { return startServer(tb, Config{}).Addr().String() }, true},
		{"zookeeper", func(tb testing.TB) string { return realzk.Start(tb).Addr }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.start(t)
			live := dialRaw(t, addr)
			sess := live.handshake(10000, 0, nil)
			if sess.SessionID == 0 || sess.Timeout == 0 {
				t.Fatalf("no session: %+v", sess)
			}

			wrong := bytes.Repeat([]byte{0x5a}, len(sess.Passwd))
			intruder := dialRaw(t, addr)
			if resp := intruder.handshake(10000, sess.SessionID, wrong); resp.Timeout != 0 || resp.SessionID != 0 {
				t.Fatalf("re-attach with a wrong password: %+v, want timeout 0 (expired)", resp)
			}
			intruder.expectClosed()

			if !tc.liveSurvives {
				live.expectClosed()
				return
			}
			// The live connection still answers, reads and writes alike.
			live.send(-2, wire.OpPing, nil)
			if h, _ := live.reply(); h.Xid != wire.XidPing || h.Err != wire.CodeOK {
				t.Fatalf("ping after the refused re-attach: %+v", h)
			}
			live.send(1, wire.OpCreate, &wire.CreateRequest{Path: "/still-mine", Flags: wire.ModeEphemeral,
				ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
			if h, _ := live.reply(); h.Xid != 1 || h.Err != wire.CodeOK {
				t.Fatalf("write after the refused re-attach: %+v", h)
			}
		})
	}
}
