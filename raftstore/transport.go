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

	"github.com/hutchzk/hutch/internal/netaddr"

	"github.com/hashicorp/raft"
)

// Connection tags: the dialer says which protocol the connection carries.
const (
	tagRaft byte = 'R'
	// tagPipe ('P') carries forwarding (pipe.go), tagAsk ('Q') a
	// member's question to another (ask.go). 'F', forwarding one frame at
	// a time, is no longer spoken.
)

// Peer handshake. Every connection between nodes starts with a mutual
// challenge-response over the shared secret before a byte of Raft or
// forwarding is read. The dialer speaks first:
//
//	dialer → acceptor  "HUTCHP2" tag(1) nonceD(32) HMAC-SHA256(secret, "knock"|nonceD|tag)
//	acceptor → dialer  nonceA(32) HMAC-SHA256(secret, "accept"|nonceA|nonceD|tag)
//	dialer → acceptor  HMAC-SHA256(secret, "dial"|nonceA|nonceD|tag)
//
// The knock lets the acceptor tell a member from a stranger by the first
// bytes it reads, which a member sends as soon as it connects: only
// connections that have not knocked yet compete for the handshake slots a
// flood of strangers can fill (see maxPending). It proves nothing by
// itself, since it could be replayed; the two answers after it authenticate
// each side with the other's fresh nonce. Either side closes on a wrong
// answer, so a process without the secret can neither send a node Raft
// messages or forwarded writes nor pose as a leader to a dialling
// follower. The traffic itself is not encrypted: the peer port belongs on
// a private network.
const (
	knockMagic = "HUTCHP2"
	nonceSize  = 32
	macSize    = sha256.Size
	knockSize  = len(knockMagic) + 1 + nonceSize + macSize
)

// Bounds on handshakes, which anyone who can reach the peer port may
// start. handshakeTimeout ends a silent one (a member answers within a
// round trip). At most maxPending connections may be waiting for their
// knock at once, and at most maxPendingPerIP from one source address;
// past either bound the oldest waiting (of that address, or of the address
// with the most) is closed to make room. So a flood of idle connections
// costs a bounded number of goroutines and descriptors and never keeps a
// member out: a member's knock is read as soon as its connection is, so
// it is never the oldest waiting, even when the flood comes from its own
// address. maxKnocked bounds the connections past the knock but not yet
// authenticated (members, or someone replaying a member's knock).
const (
	handshakeTimeout = 2 * time.Second
	maxPending       = 512
	maxPendingPerIP  = 128
	maxKnocked       = 64
)

var (
	errListenerClosed = errors.New("raftstore: listener closed")
	// errNoPeek: the connection cannot be read without consuming.
	errNoPeek  = errors.New("raftstore: cannot peek")
	errBadPeer = errors.New("raftstore: peer failed authentication")
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
// forwarding connections to onForward and members' questions to onAsk.
type mux struct {
	ln        net.Listener
	log       *slog.Logger
	secret    []byte
	onForward func(net.Conn)
	onAsk     func(net.Conn)
	advertise string // what Addr reports to Raft
	dial      func(addr string, timeout time.Duration) (net.Conn, error)

	// pendingMu guards pending and pressure.
	pendingMu sync.Mutex
	pending   *handshakeSlots // accepted, not yet authenticated
	pressure  throttledLog    // evictions and failed handshakes, logged at most every few seconds

	raftConns chan net.Conn
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and handshakes
}

func newMux(ln net.Listener, advertise string, secret []byte, log *slog.Logger, onForward, onAsk func(net.Conn),
	dial func(addr string, timeout time.Duration) (net.Conn, error)) *mux {
	m := &mux{ln: ln, advertise: advertise, secret: secret, log: log, onForward: onForward, onAsk: onAsk, dial: dial,
		raftConns: make(chan net.Conn), done: make(chan struct{}),
		pending: newHandshakeSlots(maxPending, maxPendingPerIP, maxKnocked)}
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
		// A member's knock has normally arrived by now: look at it here,
		// so that only connections still silent compete for the slots a
		// flood can fill, before the flood's next connections are taken.
		var knock [knockSize]byte
		var evicted net.Conn
		if n := peek(c, knock[:]); n < knockSize {
			var refused bool
			evicted, refused = m.pending.admit(c, netaddr.Host(c.RemoteAddr()), time.Now(), hasData)
			if refused {
				m.pressure.note(m.log, "raftstore: too many peer connections waiting to authenticate; refusing", "remote", c.RemoteAddr().String())
				m.pendingMu.Unlock()
				c.Close()
				continue
			}
		} else if err := m.checkKnock(knock[:]); err == nil {
			evicted = m.pending.admitKnocked(c)
		} else {
			m.pressure.note(m.log, "raftstore: refusing peer connection", "remote", c.RemoteAddr().String(), "err", err)
			m.pendingMu.Unlock()
			c.Close()
			continue
		}
		if evicted != nil {
			m.pressure.note(m.log, "raftstore: too many peer connections waiting to authenticate; closing the oldest", "remote", evicted.RemoteAddr().String())
		}
		m.pendingMu.Unlock()
		if evicted != nil {
			evicted.Close()
		}
		m.wg.Add(1)
		go m.route(c)
	}
}

// hasData reports whether c has received bytes nobody has read yet.
func hasData(c net.Conn) bool {
	var b [1]byte
	return peek(c, b[:]) > 0
}

// pendingCount is how many connections wait for their knock and how many
// have knocked but not yet authenticated.
func (m *mux) pendingCount() (waiting, knocked int) {
	m.pendingMu.Lock()
	defer m.pendingMu.Unlock()
	return m.pending.counts()
}

// route authenticates the connection and dispatches it by its tag.
func (m *mux) route(c net.Conn) {
	defer m.wg.Done()
	tag, err := m.accept(c)
	m.pendingMu.Lock()
	m.pending.forget(c)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		m.pressure.note(m.log, "raftstore: refusing peer connection", "remote", c.RemoteAddr().String(), "err", err)
	}
	m.pendingMu.Unlock()
	if err != nil {
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
	case tagPipe:
		m.onForward(c)
	case tagAsk:
		m.onAsk(c)
	}
}

// checkKnock verifies a knock, which proves nothing yet (see the
// handshake) but tells a member from a stranger.
func (m *mux) checkKnock(knock []byte) error {
	rest := knock[len(knockMagic):]
	tag, nonceD, mac := rest[0], rest[1:1+nonceSize], rest[1+nonceSize:]
	switch {
	case string(knock[:len(knockMagic)]) != knockMagic:
		return fmt.Errorf("%w: not a hutch peer", errBadPeer)
	case tag != tagRaft && tag != tagPipe && tag != tagAsk:
		return fmt.Errorf("%w: unknown tag %#x", errBadPeer, tag)
	case !hmac.Equal(mac, peerMAC(m.secret, "knock", nil, nonceD, tag)):
		return errBadPeer
	}
	return nil
}

// accept runs the acceptor's side of the handshake. The knock is looked
// at before it is consumed, and the connection leaves the waiting ones
// first, so that until then it shows as busy (hasData) and never gives
// way to a newer connection.
func (m *mux) accept(c net.Conn) (byte, error) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	defer c.SetDeadline(time.Time{})
	var knock [knockSize]byte
	claim := func(k []byte) error {
		if err := m.checkKnock(k); err != nil {
			return err
		}
		m.pendingMu.Lock()
		evicted, ok := m.pending.knock(c)
		m.pendingMu.Unlock()
		if evicted != nil {
			evicted.Close()
		}
		if !ok {
			return net.ErrClosed // it gave way before it knocked
		}
		return nil
	}
	// Peeked, the knock stays unread until the connection is claimed.
	err := waitPeek(c, knock[:])
	if errors.Is(err, errNoPeek) {
		if _, err := io.ReadFull(c, knock[:]); err != nil {
			return 0, err
		}
		err = claim(knock[:])
	} else if err == nil {
		if err = claim(knock[:]); err == nil {
			_, err = io.ReadFull(c, knock[:]) // what was peeked
		}
	}
	if err != nil {
		return 0, err
	}
	tag := knock[len(knockMagic)]
	nonceD := knock[len(knockMagic)+1 : len(knockMagic)+1+nonceSize]
	challenge := make([]byte, nonceSize, nonceSize+macSize)
	if _, err := rand.Read(challenge); err != nil {
		return 0, err
	}
	nonceA := challenge[:nonceSize]
	challenge = append(challenge, peerMAC(m.secret, "accept", nonceA, nonceD, tag)...)
	if _, err := c.Write(challenge); err != nil {
		return 0, err
	}
	proof := make([]byte, macSize)
	if _, err := io.ReadFull(c, proof); err != nil {
		return 0, err
	}
	if !hmac.Equal(proof, peerMAC(m.secret, "dial", nonceA, nonceD, tag)) {
		return 0, errBadPeer
	}
	return tag, nil
}

// throttledLog logs a warning at most once per throttleEvery, with how
// many were left out since: a flood of strangers must not flood the log.
type throttledLog struct {
	last    time.Time
	skipped int
}

const throttleEvery = 10 * time.Second

func (t *throttledLog) note(log *slog.Logger, msg string, args ...any) {
	now := time.Now()
	if now.Sub(t.last) < throttleEvery {
		t.skipped++
		return
	}
	if t.skipped > 0 {
		args = append(args, "similar_since_last", t.skipped)
	}
	t.last, t.skipped = now, 0
	log.Warn(msg, args...)
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
		// Closed after the lock is let go: a close waits for any
		// operation under way on the connection.
		m.pendingMu.Lock()
		close(m.done)
		pending := m.pending.all()
		m.pendingMu.Unlock()
		for _, c := range pending {
			c.Close()
		}
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
	knock := make([]byte, len(knockMagic)+1+nonceSize, knockSize)
	copy(knock, knockMagic)
	knock[len(knockMagic)] = tag
	nonceD := knock[len(knockMagic)+1:]
	if _, err := rand.Read(nonceD); err != nil {
		return err
	}
	knock = append(knock, peerMAC(secret, "knock", nil, nonceD, tag)...)
	if _, err := c.Write(knock); err != nil {
		return err
	}
	var challenge [nonceSize + macSize]byte
	if _, err := io.ReadFull(c, challenge[:]); err != nil {
		return err
	}
	nonceA, mac := challenge[:nonceSize], challenge[nonceSize:]
	if !hmac.Equal(mac, peerMAC(secret, "accept", nonceA, nonceD, tag)) {
		return errBadPeer
	}
	_, err := c.Write(peerMAC(secret, "dial", nonceA, nonceD, tag))
	return err
}
