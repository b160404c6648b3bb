package bench

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// opGetData is getData's opcode in ZooKeeper's protocol.
const opGetData = 4

// silentServer accepts one ZooKeeper client, answers its handshake and
// then reads requests without answering any. It reports on seen each time
// another getData arrives: how many have, all unanswered.
func silentServer(tb testing.TB) (addr string, seen <-chan int) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ch := make(chan int, 1024)
	var wg sync.WaitGroup
	var conn net.Conn
	var mu sync.Mutex // guards conn
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		if conn != nil {
			conn.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		conn = c
		mu.Unlock()
		readFrame := func() ([]byte, error) {
			var n [4]byte
			if _, err := io.ReadFull(c, n[:]); err != nil {
				return nil, err
			}
			b := make([]byte, binary.BigEndian.Uint32(n[:]))
			_, err := io.ReadFull(c, b)
			return b, err
		}
		if _, err := readFrame(); err != nil { // the connect request
			return
		}
		// ConnectResponse: protocol version, timeout (ms), session id,
		// password (length-prefixed, 16 bytes).
		resp := binary.BigEndian.AppendUint32(nil, 0)
		resp = binary.BigEndian.AppendUint32(resp, 10_000)
		resp = binary.BigEndian.AppendUint64(resp, 0x1234)
		resp = binary.BigEndian.AppendUint32(resp, 16)
		resp = append(resp, make([]byte, 16)...)
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(resp))), resp...)); err != nil {
			return
		}
		gets := 0
		for range 100_000 { // bounded: a client sends far fewer
			b, err := readFrame()
			if err != nil {
				return
			}
			if len(b) >= 8 && binary.BigEndian.Uint32(b[4:8]) == opGetData {
				gets++
				ch <- gets
			}
		}
	})
	return ln.Addr().String(), ch
}

// TestPipelinedRequestsStayInFlight checks what the pipelined workloads
// rely on: go-zookeeper sends the requests that several goroutines issue
// on one session without waiting for earlier answers, so a server that
// answers none still receives every one of them.
func TestPipelinedRequestsStayInFlight(t *testing.T) {
	const window = 32
	addr, seen := silentServer(t)
	s, err := connect(context.Background(), 0, addr, 10*time.Second, dialOptions{timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer s.conn.Close() // the unanswered calls return ErrConnectionClosed
	for range window {
		wg.Go(func() { _, _, _ = s.conn.Get("/pipelined") })
	}
	deadline := time.After(20 * time.Second)
	got := 0
	for got < window {
		select {
		case got = <-seen:
		case <-deadline:
			t.Fatalf("the server received %d getData of %d issued, none answered: the client does not keep them in flight", got, window)
		}
	}
}
