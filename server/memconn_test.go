package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/net/nettest"
)

var (
	pipeClientAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}
	pipeServerAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 0}
)

// TestPipeIsANetConn runs golang.org/x/net/nettest's conformance suite
// (concurrent I/O, deadlines, close while blocked, ...) on the pipe.
func TestPipeIsANetConn(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		c1, c2 = newPipe(pipeClientAddr, pipeServerAddr)
		return c1, c2, func() { c1.Close(); c2.Close() }, nil
	})
}

// TestPipeBuffers: a writer runs ahead of its reader by up to
// pipeBuffer bytes, as into a socket buffer, and then waits for reads;
// after a close the reader gets every byte and then io.EOF.
func TestPipeBuffers(t *testing.T) {
	a, b := newPipe(pipeClientAddr, pipeServerAddr)
	defer b.Close()
	msg := bytes.Repeat([]byte("z"), pipeBuffer)
	if _, err := a.Write(msg); err != nil {
		t.Fatalf("a write that fits the buffer waited or failed: %v", err)
	}
	_ = a.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := a.Write([]byte("!")); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write into a full buffer: %d, %v; want it to wait until its deadline", n, err)
	}
	_ = a.SetWriteDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := a.Write([]byte("tail"))
		done <- errors.Join(err, a.Close())
	}()
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := append(msg, "tail"...); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}
	if _, err := b.Write([]byte("x")); err == nil {
		t.Fatal("write to a closed peer succeeded")
	}
	if a.RemoteAddr() != pipeServerAddr || b.RemoteAddr() != pipeClientAddr {
		t.Fatalf("addresses %v %v", a.RemoteAddr(), b.RemoteAddr())
	}
}
