package raftstore

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Connection tags: the dialer says which protocol the connection carries.
const (
	tagRaft    byte = 'R'
	tagForward byte = 'F'
)

// Peer handshake. Every connection between nodes starts with a mutual
// challenge-response over the shared secret before a byte of Raft or
// forwarding is read:
//
//	acceptor → dialer  "HUTCHP1" nonceA(32)
//	dialer → acceptor  tag(1) nonceD(32) HMAC-SHA256(secret, "dial"|nonceA|nonceD|tag)
//	acceptor → dialer  HMAC-SHA256(secret, "accept"|nonceA|nonceD|tag)
//
// Either side closes on a wrong answer, so a process without the secret
// can neither send a node Raft messages or forwarded writes nor pose as a
// leader to a dialling follower. The traffic itself is not encrypted: the
// peer port belongs on a private network.
const (
	helloMagic = "HUTCHP1"
	nonceSize  = 32
	macSize    = sha256.Size
)

// handshakeTimeout bounds a handshake, so a silent client cannot hold a
// goroutine; maxHandshakes bounds the connections handshaking at once.
const (
	handshakeTimeout = 5 * time.Second
	maxHandshakes    = 64
)

var (
	errListenerClosed = errors.New("raftstore: listener closed")
	errBadPeer        = errors.New("raftstore: peer failed authentication")
)

func peerMAC(secret []byte, role string, nonceA, nonceD []byte, tag byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(role))
	m.Write(nonceA)
	m.Write(nonceD)
	m.Write([]byte{tag})
	return m.Sum(nil)
}

// mux owns a node's one TCP listener. It authenticates each accepted
// connection and hands Raft connections to Accept (as the raft.StreamLayer)
// and forwarding connections to onForward.
type mux struct {
	ln        net.Listener
	log       *slog.Logger
	secret    []byte
	onForward func(net.Conn)
	advertise string // what Addr reports to Raft
	dial      func(addr string, timeout time.Duration) (net.Conn, error)

	pendingMu sync.Mutex
	pending   map[net.Conn]struct{} // accepted, not yet authenticated; guarded by pendingMu

	raftConns chan net.Conn
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and handshakes
}

func newMux(ln net.Listener, advertise string, secret []byte, log *slog.Logger, onForward func(net.Conn),
	dial func(addr string, timeout time.Duration) (net.Conn, error)) *mux {
	m := &mux{ln: ln, advertise: advertise, secret: secret, log: log, onForward: onForward, dial: dial,
		raftConns: make(chan net.Conn), done: make(chan struct{}),
		pending: make(map[net.Conn]struct{})}
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

func (m *mux) acceptLoop() {
	defer m.wg.Done()
	var backoff time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			// Temporary failures (fd exhaustion): back off and retry.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			m.log.Warn("raftstore: accept failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-m.done:
				return
			}
		}
		backoff = 0
		m.pendingMu.Lock()
		select {
		case <-m.done:
			m.pendingMu.Unlock()
			c.Close()
			return
		default:
		}
		if len(m.pending) >= maxHandshakes {
			m.pendingMu.Unlock()
			m.log.Warn("raftstore: too many peer handshakes at once; refusing", "remote", c.RemoteAddr().String())
			c.Close()
			continue
		}
		m.pending[c] = struct{}{}
		m.pendingMu.Unlock()
		m.wg.Add(1)
		go m.route(c)
	}
}

// route authenticates the connection and dispatches it by its tag.
func (m *mux) route(c net.Conn) {
	defer m.wg.Done()
	tag, err := m.accept(c)
	m.pendingMu.Lock()
	delete(m.pending, c)
	m.pendingMu.Unlock()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			m.log.Warn("raftstore: refusing peer connection", "remote", c.RemoteAddr().String(), "err", err)
		}
		c.Close()
		return
	}
	switch tag {
	case tagRaft:
		select {
		case m.raftConns <- c:
		case <-m.done:
			c.Close()
		}
	case tagForward:
		m.onForward(c)
	}
}

// accept runs the acceptor's side of the handshake.
func (m *mux) accept(c net.Conn) (byte, error) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetDeadline(time.Time{})
	hello := make([]byte, len(helloMagic)+nonceSize)
	copy(hello, helloMagic)
	nonceA := hello[len(helloMagic):]
	if _, err := rand.Read(nonceA); err != nil {
		return 0, err
	}
	if _, err := c.Write(hello); err != nil {
		return 0, err
	}
	var answer [1 + nonceSize + macSize]byte
	if _, err := io.ReadFull(c, answer[:]); err != nil {
		return 0, err
	}
	tag, nonceD, mac := answer[0], answer[1:1+nonceSize], answer[1+nonceSize:]
	if tag != tagRaft && tag != tagForward {
		return 0, fmt.Errorf("%w: unknown tag %#x", errBadPeer, tag)
	}
	if !hmac.Equal(mac, peerMAC(m.secret, "dial", nonceA, nonceD, tag)) {
		return 0, errBadPeer
	}
	if _, err := c.Write(peerMAC(m.secret, "accept", nonceA, nonceD, tag)); err != nil {
		return 0, err
	}
	return tag, nil
}

// Accept returns the next Raft connection (raft.StreamLayer).
func (m *mux) Accept() (net.Conn, error) {
	select {
	case c := <-m.raftConns:
		return c, nil
	case <-m.done:
		return nil, errListenerClosed
	}
}

// Close stops accepting; Raft's transport calls it on shutdown. It does not
// wait for forwarding handlers, which Store.Close stops.
func (m *mux) Close() error {
	var err error
	m.closeOnce.Do(func() {
		m.pendingMu.Lock()
		close(m.done)
		for c := range m.pending {
			c.Close()
		}
		m.pendingMu.Unlock()
		err = m.ln.Close()
	})
	return err
}

// Addr is the advertised address (raft.StreamLayer): Raft sends it to
// peers as this node's address.
func (m *mux) Addr() net.Addr {
	if m.advertise != "" {
		return tcpAddr(m.advertise)
	}
	return m.ln.Addr()
}

// tcpAddr is an advertised host:port.
type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }

// Dial opens an authenticated Raft connection (raft.StreamLayer).
func (m *mux) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialPeer(m.dial, m.secret, string(address), tagRaft, timeout)
}

// dialPeer connects to a peer and runs the dialer's side of the handshake.
func dialPeer(dial func(string, time.Duration) (net.Conn, error), secret []byte, addr string, tag byte, timeout time.Duration) (net.Conn, error) {
	c, err := dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if err := dialHandshake(c, secret, tag, min(timeout, handshakeTimeout)); err != nil {
		c.Close()
		return nil, fmt.Errorf("raftstore: handshake with %s: %w", addr, err)
	}
	return c, nil
}

func dialHandshake(c net.Conn, secret []byte, tag byte, timeout time.Duration) error {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	hello := make([]byte, len(helloMagic)+nonceSize)
	if _, err := io.ReadFull(c, hello); err != nil {
		return err
	}
	if string(hello[:len(helloMagic)]) != helloMagic {
		return errBadPeer
	}
	nonceA := hello[len(helloMagic):]
	answer := make([]byte, 1+nonceSize, 1+nonceSize+macSize)
	answer[0] = tag
	if _, err := rand.Read(answer[1:]); err != nil {
		return err
	}
	nonceD := answer[1 : 1+nonceSize]
	answer = append(answer, peerMAC(secret, "dial", nonceA, nonceD, tag)...)
	if _, err := c.Write(answer); err != nil {
		return err
	}
	mac := make([]byte, macSize)
	if _, err := io.ReadFull(c, mac); err != nil {
		return err
	}
	if !hmac.Equal(mac, peerMAC(secret, "accept", nonceA, nonceD, tag)) {
		return errBadPeer
	}
	return nil
}
