package server

import (
	"testing"

	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/wire"
)

// BenchmarkPipelinedReads measures the request path of one connection:
// getData requests pipelined 64 deep on a single in-process node, each
// read, answered, counted in the statistics and written back.
func BenchmarkPipelinedReads(b *testing.B) {
	s := startServer(b, Config{})
	r := dialRaw(b, s.Addr().String())
	r.handshake(30000, 0, nil)
	r.send(1, wire.OpCreate, &wire.CreateRequest{Path: "/b", Data: make([]byte, 64), ACL: []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
	r.reply()
	req := frame(func(e *wire.Encoder) {
		(&wire.RequestHeader{Xid: 2, Type: wire.OpGetData}).Encode(e)
		(&wire.PathWatchRequest{Path: "/b"}).Encode(e)
	})
	const depth = 64
	burst := make([]byte, 0, depth*len(req))
	for range depth {
		burst = append(burst, req...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += depth {
		r.writeRaw(burst)
		for range depth {
			if _, err := r.tryReadFrame(10e9); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPipelinedWrites measures a single node's write path with and
// without the trace's history window (on by default): setData pipelined
// 64 deep on one connection, each applied, published to the window when
// it is kept, and answered. The difference is what keeping the window
// costs a write.
func BenchmarkPipelinedWrites(b *testing.B) {
	for _, tc := range []struct {
		name    string
		history trace.HistoryLimits
	}{{"history=on", trace.HistoryLimits{}}, {"history=off", trace.HistoryLimits{Events: -1}}} {
		b.Run(tc.name, func(b *testing.B) {
			s := startServer(b, Config{TraceHistory: tc.history})
			r := dialRaw(b, s.Addr().String())
			r.handshake(30000, 0, nil)
			r.send(1, wire.OpCreate, &wire.CreateRequest{Path: "/b", Data: make([]byte, 64), ACL: []wire.ACL{{Perms: 31, ID: wire.ID{Scheme: "world", ID: "anyone"}}}})
			r.reply()
			req := frame(func(e *wire.Encoder) {
				(&wire.RequestHeader{Xid: 2, Type: wire.OpSetData}).Encode(e)
				(&wire.SetDataRequest{Path: "/b", Data: make([]byte, 64), Version: -1}).Encode(e)
			})
			const depth = 64
			burst := make([]byte, 0, depth*len(req))
			for range depth {
				burst = append(burst, req...)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += depth {
				r.writeRaw(burst)
				for range depth {
					if _, err := r.tryReadFrame(10e9); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
