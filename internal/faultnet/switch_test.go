package faultnet

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// whoamiServer listens on ip, and on each connection first writes the
// source IP it sees and a newline, then echoes.
func whoamiServer(t *testing.T, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s (the whole of 127/8 should be loopback): %v", ip, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				src := c.RemoteAddr().(*net.TCPAddr).IP.String()
				if _, err := io.WriteString(c, src+"\n"); err != nil {
					return
				}
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// peer is a connection from one node to another through the switch,
// dialled from the first node's IP as a node would.
type peer struct {
	net.Conn
	r *bufio.Reader
}

func dialFrom(t *testing.T, ip, addr string) *peer {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return &peer{Conn: c, r: bufio.NewReader(c)}
}

// expect reads len(want) bytes within limit.
func (p *peer) expect(t *testing.T, want string, limit time.Duration) {
	t.Helper()
	_ = p.SetReadDeadline(time.Now().Add(limit))
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(p.r, buf); err != nil || string(buf) != want {
		t.Fatalf("read %q, %v; want %q", buf, err, want)
	}
}

// expectNothing checks that a read finds nothing for d and times out.
func (p *peer) expectNothing(t *testing.T, d time.Duration) {
	t.Helper()
	_ = p.SetReadDeadline(time.Now().Add(d))
	if b, err := p.r.ReadByte(); !isTimeout(err) {
		t.Fatalf("read across a dropped link: %q, %v; want a timeout", b, err)
	}
}

func (p *peer) send(t *testing.T, s string) {
	t.Helper()
	_ = p.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(p, s); err != nil {
		t.Fatal(err)
	}
}

func TestSwitch(t *testing.T) {
	ips := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	tests := []struct {
		name string
		run  func(t *testing.T, s *Switch)
	}{
		{"forwards from the dialler's own IP", func(t *testing.T, s *Switch) {
			p := dialFrom(t, ips[2], s.Front("2"))
			p.expect(t, ips[2]+"\n", 5*time.Second)
			p.send(t, "hello")
			p.expect(t, "hello", 5*time.Second)
		}},
		{"drop holds open links both ways, heal resumes them", func(t *testing.T, s *Switch) {
			p12 := dialFrom(t, ips[0], s.Front("2"))
			p12.expect(t, ips[0]+"\n", 5*time.Second)
			p21 := dialFrom(t, ips[1], s.Front("1"))
			p21.expect(t, ips[1]+"\n", 5*time.Second)
			p32 := dialFrom(t, ips[2], s.Front("2"))
			p32.expect(t, ips[2]+"\n", 5*time.Second)

			s.Drop("1", "2")
			p12.send(t, "a")
			p21.send(t, "b")
			p12.expectNothing(t, 200*time.Millisecond)
			p21.expectNothing(t, 200*time.Millisecond)
			p32.send(t, "c") // 3↔2 is not cut
			p32.expect(t, "c", 5*time.Second)

			s.Heal()
			p12.expect(t, "a", 5*time.Second)
			p21.expect(t, "b", 5*time.Second)
		}},
		{"a new connection across a drop is accepted but held", func(t *testing.T, s *Switch) {
			s.Drop("3", "1", "2")
			p := dialFrom(t, ips[2], s.Front("1"))
			p.send(t, "late")
			p.expectNothing(t, 200*time.Millisecond)
			waitFor(t, 5*time.Second, "connection held", func() bool { return s.Paused() >= 1 })
			s.Heal()
			p.expect(t, ips[2]+"\nlate", 5*time.Second)
		}},
		{"a writer hangs once the buffers fill, nothing fails", func(t *testing.T, s *Switch) {
			p := dialFrom(t, ips[0], s.Front("3"))
			p.expect(t, ips[0]+"\n", 5*time.Second)
			s.Drop("1", "3")
			_ = p.SetWriteDeadline(time.Now().Add(time.Second))
			big := strings.Repeat("x", 64<<20)
			n, err := io.WriteString(p, big)
			if !isTimeout(err) || n >= len(big) {
				t.Fatalf("write of %d bytes across a drop: wrote %d, %v; want a timeout", len(big), n, err)
			}
			s.Heal()
			// Everything written before the deadline arrives, in order.
			_ = p.SetReadDeadline(time.Now().Add(30 * time.Second))
			got, err := io.ReadFull(p.r, make([]byte, n))
			if err != nil || got != n {
				t.Fatalf("after heal read %d of %d bytes: %v", got, n, err)
			}
		}},
		{"a one-way cut holds the cut side's connections and leaves the other side's", func(t *testing.T, s *Switch) {
			p21 := dialFrom(t, ips[1], s.Front("1")) // 2 dialled 1: cut below
			p21.expect(t, ips[1]+"\n", 5*time.Second)
			p12 := dialFrom(t, ips[0], s.Front("2")) // 1 dialled 2: untouched
			p12.expect(t, ips[0]+"\n", 5*time.Second)

			s.DropDials("2", "1")
			p21.send(t, "a")
			p21.expectNothing(t, 200*time.Millisecond)
			late := dialFrom(t, ips[1], s.Front("1"))
			late.expectNothing(t, 200*time.Millisecond)
			p12.send(t, "b") // both directions of 1's own connection flow
			p12.expect(t, "b", 5*time.Second)

			s.Heal()
			p21.expect(t, "a", 5*time.Second)
			late.expect(t, ips[1]+"\n", 5*time.Second)
		}},
		{"close ends every forwarded connection", func(t *testing.T, s *Switch) {
			p := dialFrom(t, ips[1], s.Front("3"))
			p.expect(t, ips[1]+"\n", 5*time.Second)
			s.Drop("2", "3")
			s.Close()
			_ = p.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := p.r.ReadByte(); err == nil || isTimeout(err) {
				t.Fatalf("read after the switch closed: %v, want end of stream", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var routes []Route
			for i, ip := range ips {
				routes = append(routes, Route{Node: string(rune('1' + i)), IP: ip, Target: whoamiServer(t, ip)})
			}
			tc.run(t, StartSwitch(t, routes))
		})
	}
}
