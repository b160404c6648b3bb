package server

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/wire"
)

func be32(v uint32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return b[:]
}

// TestBadInput sends each kind of malformed or out-of-order input on its own
// connection. Each gets ZooKeeper's answer or a closed connection, while a
// healthy session on the same server keeps working and no goroutine leaks.
func TestBadInput(t *testing.T) {
	s := startServer(t, Config{})
	addr := s.Addr().String()
	healthy, _ := dial(t, addr, 10*time.Second)
	if _, err := healthy.Create("/ok", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	checkHealthy := func(t *testing.T) {
		t.Helper()
		data, _, err := healthy.Get("/ok")
		if err != nil || string(data) != "v" {
			t.Fatalf("healthy session broken: %q %v", data, err)
		}
	}
	base := runtime.NumGoroutine()

	tests := []struct {
		name string
		run  func(t *testing.T, r *rawClient)
		// kicksHealthy marks the case that legitimately closes the healthy
		// session's connection: re-attaching its session id.
		kicksHealthy bool
	}{
		{"truncated frame before handshake", func(t *testing.T, r *rawClient) {
			r.writeRaw(append(be32(44), 0, 0, 0))
			_ = r.nc.(interface{ CloseWrite() error }).CloseWrite()
			r.expectClosed()
		}, false},
		{"negative length", func(t *testing.T, r *rawClient) {
			r.writeRaw(be32(0xffffffff))
			r.expectClosed()
		}, false},
		{"huge length", func(t *testing.T, r *rawClient) {
			r.writeRaw(be32(0x7fffffff))
			r.expectClosed()
		}, false},
		{"frame just over the limit after handshake", func(t *testing.T, r *rawClient) {
			r.handshake(10000, 0, nil)
			r.writeRaw(be32(DefaultMaxFrameSize + 1))
			r.expectClosed()
		}, false},
		{"request before connect", func(t *testing.T, r *rawClient) {
			// A getData header where the connect request belongs: too short to be one.
			r.writeRaw(frame(func(e *wire.Encoder) {
				(&wire.RequestHeader{Xid: 1, Type: wire.OpGetData}).Encode(e)
			}))
			r.expectClosed()
		}, false},
		{"truncated request body", func(t *testing.T, r *rawClient) {
			// ZooKeeper answers MARSHALLINGERROR on that xid and keeps
			// the connection.
			r.handshake(10000, 0, nil)
			for _, op := range []wire.OpCode{wire.OpGetData, wire.OpSetData} {
				r.writeRaw(frame(func(e *wire.Encoder) {
					(&wire.RequestHeader{Xid: 1, Type: op}).Encode(e)
					e.Int32(100) // path length with no path after it
				}))
				if h, _ := r.reply(); h.Xid != 1 || h.Err != wire.CodeMarshallingError {
					t.Fatalf("op %d: reply %+v, want MARSHALLINGERROR on xid 1", op, h)
				}
			}
			r.send(2, wire.OpExists, &wire.PathWatchRequest{Path: "/ok"})
			if h, _ := r.reply(); h.Xid != 2 || h.Err != wire.CodeOK {
				t.Fatalf("exists after bad bodies: %+v", h)
			}
		}, false},
		{"truncated request header", func(t *testing.T, r *rawClient) {
			r.handshake(10000, 0, nil)
			r.writeRaw(frame(func(e *wire.Encoder) { e.Int32(1) }))
			r.expectClosed()
		}, false},
		{"unknown opcode", func(t *testing.T, r *rawClient) {
			r.handshake(10000, 0, nil)
			r.send(7, wire.OpCode(999), nil)
			h, _ := r.reply()
			if h.Xid != 7 || h.Err != wire.CodeUnimplemented {
				t.Fatalf("reply %+v, want xid 7 Unimplemented", h)
			}
			r.expectClosed()
		}, false},
		{"garbage after a valid request", func(t *testing.T, r *rawClient) {
			r.handshake(10000, 0, nil)
			r.writeRaw(frame(func(e *wire.Encoder) {
				(&wire.RequestHeader{Xid: 3, Type: wire.OpGetData}).Encode(e)
				(&wire.PathWatchRequest{Path: "/ok"}).Encode(e)
				e.Int64(-1)
				e.String("trailing junk")
			}))
			h, d := r.reply()
			var resp wire.GetDataResponse
			resp.Decode(d)
			if h.Xid != 3 || h.Err != wire.CodeOK || string(resp.Data) != "v" {
				t.Fatalf("reply %+v data %q, want the node's data", h, resp.Data)
			}
		}, false},
		{"invalid paths", func(t *testing.T, r *rawClient) {
			r.handshake(10000, 0, nil)
			// Codes as ZooKeeper's PrepRequestProcessor gives them: the parent
			// is looked up before the full path is validated.
			for i, tc := range []struct {
				path string
				want wire.Code
			}{
				{"", wire.CodeBadArguments},
				{"rel", wire.CodeBadArguments},
				{"/nul\x00x", wire.CodeBadArguments},
				{"/ctl\x01", wire.CodeBadArguments},
				{"/ok/", wire.CodeBadArguments},
				{"/ok/.", wire.CodeBadArguments},
				{"/ok/..", wire.CodeBadArguments},
				{"/missing/", wire.CodeNoNode},
				{"/a//b", wire.CodeNoNode},
			} {
				xid := int32(10 + i)
				r.send(xid, wire.OpCreate, &wire.CreateRequest{Path: tc.path, ACL: []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
				h, _ := r.reply()
				if h.Xid != xid || h.Err != tc.want {
					t.Fatalf("create %q: reply %+v, want %v", tc.path, h, tc.want)
				}
			}
		}, false},
		{"requests after closeSession", func(t *testing.T, r *rawClient) {
			r.handshake(10000, 0, nil)
			var both []byte
			both = append(both, frame(func(e *wire.Encoder) {
				(&wire.RequestHeader{Xid: 1, Type: wire.OpCloseSession}).Encode(e)
			})...)
			both = append(both, frame(func(e *wire.Encoder) {
				(&wire.RequestHeader{Xid: 2, Type: wire.OpGetData}).Encode(e)
				(&wire.PathWatchRequest{Path: "/ok"}).Encode(e)
			})...)
			r.writeRaw(both)
			h, _ := r.reply()
			if h.Xid != 1 || h.Err != wire.CodeOK {
				t.Fatalf("close reply %+v", h)
			}
			if b, err := r.tryReadFrame(5 * time.Second); err == nil {
				t.Fatalf("got a frame after closeSession: %x", b)
			}
		}, false},
		{"re-attach with a wrong password", func(t *testing.T, r *rawClient) {
			resp := r.handshake(10000, healthy.SessionID(), make([]byte, 16))
			if resp.Timeout != 0 || resp.SessionID != 0 {
				t.Fatalf("connect response %+v, want an expired session (timeout 0)", resp)
			}
			r.expectClosed()
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := dialRaw(t, addr)
			tt.run(t, r)
			_ = r.nc.Close()
			if tt.kicksHealthy {
				// ZooKeeper closes the session's current connection before it
				// checks the password; the client reconnects with the right one.
				waitFor(t, 30*time.Second, "healthy session to reconnect", func() bool {
					_, _, err := healthy.Get("/ok")
					return err == nil
				})
			}
			checkHealthy(t)
		})
	}
	settleGoroutines(t, base+4)
}
