package faultnet

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(2 * time.Millisecond) // polling in-process state
	}
}

// isTimeout reports a net.Error that says it timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// serverPair dials a fresh listener through the network as node "a" and
// returns the wrapped client side, the raw server side and the target name.
func serverPair(t *testing.T, n *Network) (c net.Conn, srv net.Conn, target string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // later dials in a test need it
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- s
	}()
	target = ln.Addr().String()
	c, err = n.Dialer("a")(target, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); srv.Close() })
	return c, srv, target
}

// readExactly reads len(want) bytes within limit and compares them.
func readExactly(t *testing.T, c net.Conn, want string, limit time.Duration) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(limit)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
		t.Fatalf("read %q, %v; want %q", buf, err, want)
	}
}

// greeter listens and writes "hi" on every connection; its address names
// it as a node.
func greeter(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			s, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = s.Write([]byte("hi"))
			t.Cleanup(func() { s.Close() })
		}
	}()
	return ln.Addr().String()
}

// TestDropOneWay cuts only one node's side: a's open connection to b and
// a's new dials hang, while b's dials to a go through both ways.
func TestDropOneWay(t *testing.T) {
	n := New()
	a, b := greeter(t), greeter(t)
	ab, err := n.Dialer(a)(b, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ab.Close()
	readExactly(t, ab, "hi", 5*time.Second)

	n.DropOneWay(a, b)
	_ = ab.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := ab.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("read on a's connection across the cut: %v, want a timeout", err)
	}
	if _, err := n.Dialer(a)(b, 100*time.Millisecond); !isTimeout(err) {
		t.Fatalf("a new dial a→b across the cut: %v, want a timeout", err)
	}
	ba, err := n.Dialer(b)(a, 5*time.Second)
	if err != nil {
		t.Fatalf("dial b→a: %v", err)
	}
	defer ba.Close()
	readExactly(t, ba, "hi", 5*time.Second)

	n.Heal()
	fresh, err := n.Dialer(a)(b, 5*time.Second)
	if err != nil {
		t.Fatalf("dial a→b after heal: %v", err)
	}
	defer fresh.Close()
	readExactly(t, fresh, "hi", 5*time.Second)
}

func TestDropIsSilentAndHeals(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, n *Network, c, srv net.Conn, target string)
	}{
		{"write held until heal, then delivered", func(t *testing.T, n *Network, c, srv net.Conn, target string) {
			n.Drop("a", target)
			done := make(chan error, 1)
			go func() { _, err := c.Write([]byte("ping")); done <- err }()
			waitFor(t, 5*time.Second, "write held", func() bool { return n.Waiting() == 1 })
			n.Heal()
			if err := <-done; err != nil {
				t.Fatalf("write after heal: %v", err)
			}
			readExactly(t, srv, "ping", 5*time.Second)
		}},
		{"read deadline passes while held, bytes kept for after heal", func(t *testing.T, n *Network, c, srv net.Conn, target string) {
			n.Drop("a", target)
			if _, err := srv.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			buf := make([]byte, 1)
			if _, err := c.Read(buf); !isTimeout(err) || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read across a dropped link: %v, want a timeout", err)
			}
			n.Heal()
			readExactly(t, c, "x", 5*time.Second)
		}},
		{"bytes arriving under a read that the drop catches are not lost", func(t *testing.T, n *Network, c, srv net.Conn, target string) {
			got := make(chan error, 1)
			go func() {
				_ = c.SetReadDeadline(time.Time{})
				_, err := c.Read(make([]byte, 1))
				got <- err
			}()
			n.Drop("a", target)
			if _, err := srv.Write([]byte("y")); err != nil {
				t.Fatal(err)
			}
			// Wherever the read was when the link dropped, it now waits.
			waitFor(t, 5*time.Second, "read held", func() bool { return n.Waiting() == 1 })
			_ = c.SetReadDeadline(time.Now())
			if err := <-got; !isTimeout(err) {
				t.Fatalf("held read after its deadline moved to now: %v", err)
			}
			n.Heal()
			readExactly(t, c, "y", 5*time.Second)
		}},
		{"write deadline passes while held", func(t *testing.T, n *Network, c, srv net.Conn, target string) {
			n.Drop("a", target)
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := c.Write([]byte("z")); !isTimeout(err) {
				t.Fatalf("write across a dropped link: %v, want a timeout", err)
			}
		}},
		{"close wakes a held read", func(t *testing.T, n *Network, c, srv net.Conn, target string) {
			n.Drop("a", target)
			got := make(chan error, 1)
			go func() { _, err := c.Read(make([]byte, 1)); got <- err }()
			waitFor(t, 5*time.Second, "read held", func() bool { return n.Waiting() == 1 })
			c.Close()
			select {
			case err := <-got:
				if err == nil || isTimeout(err) {
					t.Fatalf("read on a closed conn: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("close did not wake the held read")
			}
		}},
		{"a dial across the drop waits out its timeout", func(t *testing.T, n *Network, c, srv net.Conn, target string) {
			n.Drop("a", target)
			start := time.Now()
			nc, err := n.Dialer("a")(target, 200*time.Millisecond)
			if err == nil {
				nc.Close()
				t.Fatal("dial across a dropped link succeeded")
			}
			if !isTimeout(err) || time.Since(start) < 200*time.Millisecond {
				t.Fatalf("dial: %v after %v, want a timeout after 200ms", err, time.Since(start))
			}
		}},
		{"a waiting dial goes through when healed in time", func(t *testing.T, n *Network, c, srv net.Conn, target string) {
			n.Drop("a", target)
			got := make(chan error, 1)
			go func() {
				nc, err := n.Dialer("a")(target, 30*time.Second)
				if err == nil {
					nc.Close()
				}
				got <- err
			}()
			waitFor(t, 5*time.Second, "dial held", func() bool { return n.Waiting() == 1 })
			n.Heal()
			if err := <-got; err != nil {
				t.Fatalf("dial healed in time: %v", err)
			}
		}},
		{"links not named stay up", func(t *testing.T, n *Network, c, srv net.Conn, target string) {
			n.Drop("a", "elsewhere")
			if _, err := c.Write([]byte("up")); err != nil {
				t.Fatal(err)
			}
			readExactly(t, srv, "up", 5*time.Second)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := New()
			c, srv, target := serverPair(t, n)
			tc.run(t, n, c, srv, target)
		})
	}
}

// TestUndropOneLink: Undrop restores the one direction it names; a link
// dropped elsewhere stays down, and I/O held on the restored one resumes.
func TestUndropOneLink(t *testing.T) {
	n := New()
	c, srv, target := serverPair(t, n)
	other, otherSrv, otherTarget := serverPair(t, n)
	n.DropOneWay("a", target)
	n.DropOneWay("a", otherTarget)
	if _, err := srv.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(make([]byte, 4)); !isTimeout(err) {
		t.Fatalf("read across a dropped link: %v", err)
	}
	_ = c.SetReadDeadline(time.Time{})
	n.Undrop("a", target)
	readExactly(t, c, "held", 10*time.Second)
	if _, err := otherSrv.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = other.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := other.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("Undrop restored another link too: %v", err)
	}
}
