package faultnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection, closed when the
// test ends.
func tcpPair(tb testing.TB) (net.Conn, net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	b := <-accepted
	if b == nil {
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// shapeVar is a shape a test changes while connections use it.
type shapeVar struct{ v atomic.Pointer[Shape] }

func (s *shapeVar) set(sh Shape) { s.v.Store(&sh) }
func (s *shapeVar) get() Shape {
	if p := s.v.Load(); p != nil {
		return *p
	}
	return Shape{}
}

// TestShapedDelayBothWays: a write through a delayed link arrives no
// sooner than the delay, and so does a reply read through it; healed,
// bytes go straight through again.
func TestShapedDelayBothWays(t *testing.T) {
	a, b := tcpPair(t)
	var out, in shapeVar
	sa := Shaped(a, out.get, in.get)
	out.set(Shape{Delay: 400 * time.Millisecond})
	in.set(Shape{Delay: 100 * time.Millisecond})

	start := time.Now()
	if _, err := sa.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 300*time.Millisecond {
		t.Errorf("a delayed write blocked the writer %v", took)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("the write arrived after %v, before its 400ms delay", took)
	}

	start = time.Now()
	if _, err := b.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(sa, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("the reply was read after %v, before its 100ms delay", took)
	}

	out.set(Shape{})
	in.set(Shape{})
	best := time.Hour
	for range 5 { // the fastest of five, free of a loaded machine's stalls
		start = time.Now()
		sa.Write([]byte("fast"))
		io.ReadFull(b, buf)
		b.Write([]byte("back"))
		io.ReadFull(sa, buf) // the pump, if still reading, hands this over and stops
		best = min(best, time.Since(start))
	}
	if best > 90*time.Millisecond {
		t.Errorf("a healed link still took %v", best)
	}
}

// TestShapedRate: 128 kB through a 512 kB/s link takes about a quarter
// of a second.
func TestShapedRate(t *testing.T) {
	a, b := tcpPair(t)
	sa := Shaped(a, func() Shape { return Shape{Rate: 512 << 10} }, func() Shape { return Shape{} })
	data := bytes.Repeat([]byte("x"), 128<<10)
	start := time.Now()
	go sa.Write(data)
	if _, err := io.ReadFull(b, make([]byte, len(data))); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 240*time.Millisecond {
		t.Errorf("128 kB at 512 kB/s took %v, want at least 250ms", took)
	}
}

// TestShapedJitterKeepsOrder: with jitter larger than the gap between
// writes, bytes still arrive in the order written, every one of them.
func TestShapedJitterKeepsOrder(t *testing.T) {
	a, b := tcpPair(t)
	sa := Shaped(a, func() Shape { return Shape{Delay: 20 * time.Millisecond, Jitter: 20 * time.Millisecond} }, func() Shape { return Shape{} })
	const n = 500
	go func() {
		var buf [4]byte
		for i := range n {
			binary.BigEndian.PutUint32(buf[:], uint32(i))
			sa.Write(buf[:])
		}
	}()
	buf := make([]byte, 4*n)
	b.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(b, buf); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := binary.BigEndian.Uint32(buf[4*i:]); got != uint32(i) {
			t.Fatalf("write %d arrived as number %d", i, got)
		}
	}
}

// TestShapedLoss: a lost segment costs a retransmission timeout, doubled
// for each further loss of it, and holds back what follows.
func TestShapedLoss(t *testing.T) {
	draws := []float64{0.1, 0.1, 0.9} // lost twice, then through
	lossDraw = func() float64 {
		if len(draws) == 0 {
			return 1
		}
		d := draws[0]
		draws = draws[1:]
		return d
	}
	t.Cleanup(func() { lossDraw = randFloat })
	a, b := tcpPair(t)
	sa := Shaped(a, func() Shape { return Shape{Loss: 0.5} }, func() Shape { return Shape{} })
	start := time.Now()
	sa.Write([]byte("a"))
	sa.Write([]byte("b")) // not lost (draw 1), but behind "a"
	buf := make([]byte, 2)
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "ab" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if took := time.Since(start); took < 3*RetransmitTimeout {
		t.Errorf("two losses of one segment cost %v, want at least %v (one timeout, then two)", took, 3*RetransmitTimeout)
	}
}

// TestShapedDeadlinesAndClose: a read deadline ends a read waiting for
// delayed bytes with a timeout; a later read gets them; Close ends a
// waiting read.
func TestShapedDeadlinesAndClose(t *testing.T) {
	a, b := tcpPair(t)
	sa := Shaped(a, func() Shape { return Shape{} }, func() Shape { return Shape{Delay: 300 * time.Millisecond} })
	b.Write([]byte("late"))
	sa.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	buf := make([]byte, 4)
	_, err := sa.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v", err)
	}
	sa.SetReadDeadline(time.Time{})
	if _, err := io.ReadFull(sa, buf); err != nil || string(buf) != "late" {
		t.Fatalf("read %q, %v", buf, err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := sa.Read(buf)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	sa.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("read after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting read")
	}
}

// TestShapedEOF: the end of the stream arrives after the bytes before
// it, not ahead of them.
func TestShapedEOF(t *testing.T) {
	a, b := tcpPair(t)
	sa := Shaped(a, func() Shape { return Shape{} }, func() Shape { return Shape{Delay: 50 * time.Millisecond} })
	b.Write([]byte("last words"))
	b.Close()
	got, err := io.ReadAll(sa)
	if err != nil || string(got) != "last words" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// TestNetworkShape: a shaped link between two nodes delays what one sends
// the other, one way only; Heal restores it.
func TestNetworkShape(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c) // echo
		}
	}()
	n := New()
	n.SetShape("a", ln.Addr().String(), Shape{Delay: 120 * time.Millisecond})
	c, err := n.Dialer("a")(ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo := func() time.Duration {
		start := time.Now()
		c.Write([]byte("x"))
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	if took := echo(); took < 120*time.Millisecond {
		t.Errorf("echo over a delayed link took %v", took)
	}
	n.Heal()
	best := time.Hour
	for range 5 {
		best = min(best, echo())
	}
	if best > 100*time.Millisecond {
		t.Errorf("echo over a healed link took %v", best)
	}
}

// TestShapedWhileReading: bytes that arrive after a shape is set take it,
// even for a read that was already waiting when it was set.
func TestShapedWhileReading(t *testing.T) {
	a, b := tcpPair(t)
	var in shapeVar
	sa := Shaped(a, func() Shape { return Shape{} }, in.get)
	got := make(chan time.Time, 1)
	go func() {
		buf := make([]byte, 1)
		if _, err := io.ReadFull(sa, buf); err == nil {
			got <- time.Now()
		}
	}()
	time.Sleep(20 * time.Millisecond) // the read waits, unshaped
	in.set(Shape{Delay: 150 * time.Millisecond})
	sent := time.Now()
	b.Write([]byte("x"))
	select {
	case at := <-got:
		if at.Sub(sent) < 150*time.Millisecond {
			t.Errorf("a byte sent after the shape was set arrived in %v", at.Sub(sent))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing read")
	}
}
