package faultnet

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer accepts connections and echoes what it reads until closed.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func TestIsolateCutsBothWaysAndHeals(t *testing.T) {
	a, b := echoServer(t), echoServer(t)
	n := New()
	dialA, dialB := n.Dialer(a), n.Dialer(b)

	open, err := dialA(b, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	n.Isolate(a, b)
	if _, err := dialA(b, time.Second); !errors.Is(err, ErrPartitioned) {
		t.Fatalf("dial a→b across a cut: %v", err)
	}
	if _, err := dialB(a, time.Second); !errors.Is(err, ErrPartitioned) {
		t.Fatalf("dial b→a across a cut: %v", err)
	}
	// The connection open before the cut is closed: reads fail at once.
	_ = open.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1)
	for {
		if _, err := open.Read(buf); err != nil {
			break
		}
	}
	// Links not named stay up.
	if c, err := n.Dialer("c")(b, time.Second); err != nil {
		t.Fatalf("unrelated link: %v", err)
	} else {
		c.Close()
	}

	n.Heal()
	c, err := dialA(b, time.Second)
	if err != nil {
		t.Fatalf("after heal: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || buf[0] != 'y' {
		t.Fatalf("echo after heal: %q %v", buf, err)
	}
}
