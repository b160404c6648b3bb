package conformance

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/hutchzk/hutch/wire"
)

// faultProxy relays connections to a server and drops the notifications
// drop selects from what the server sends: a deliberate bug, outside the
// server, for proving that the differential checker finds and shrinks one.
type faultProxy struct {
	ln       net.Listener
	upstream string
	drop     func(wire.WatcherEvent) bool

	wg     sync.WaitGroup // the accept loop and both relays of every connection
	mu     sync.Mutex     // guards conns and closed
	conns  []net.Conn
	closed bool
}

// startFaultProxy listens on a free loopback port; it stops when tb ends.
func startFaultProxy(tb testing.TB, upstream string, drop func(wire.WatcherEvent) bool) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("proxy listen: %v", err)
	}
	p := &faultProxy{ln: ln, upstream: upstream, drop: drop}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.close)
	return ln.Addr().String()
}

func (p *faultProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track remembers c for close; once the proxy is closing it closes c
// instead.
func (p *faultProxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return
	}
	p.conns = append(p.conns, c)
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.upstream)
		if err != nil {
			client.Close()
			continue
		}
		p.track(client)
		p.track(server)
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(server, client)
			server.Close()
		}()
		go func() {
			defer p.wg.Done()
			p.relayReplies(client, server)
			client.Close()
		}()
	}
}

// relayReplies copies frames from server to client, the connect response
// first and untouched, and leaves out notifications that drop selects.
func (p *faultProxy) relayReplies(client, server net.Conn) {
	r := bufio.NewReader(server)
	var buf []byte
	first := true
	for {
		body, err := wire.ReadFrame(r, 16<<20, buf)
		if err != nil {
			return
		}
		buf = body[:0]
		if !first {
			d := wire.NewDecoder(body)
			var h wire.ReplyHeader
			h.Decode(d)
			if h.Xid == wire.XidNotification {
				var ev wire.WatcherEvent
				ev.Decode(d)
				if d.Err() == nil && p.drop(ev) {
					continue
				}
			}
		}
		first = false
		out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
		if _, err := client.Write(append(out, body...)); err != nil {
			return
		}
	}
}
