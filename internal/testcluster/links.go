package testcluster

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"

	"github.com/hutchzk/hutch/internal/faultnet"
)

// clientLinks shapes the connections of clients (faultnet.Shape): those
// of every client of a member, and those of one session wherever its
// client connects, now and after it reconnects. A connection's shape is
// the two together.
type clientLinks struct {
	mu       sync.Mutex // guards the maps
	members  map[int]faultnet.Shape
	sessions map[int64]faultnet.Shape
}

func newClientLinks() *clientLinks {
	return &clientLinks{members: map[int]faultnet.Shape{}, sessions: map[int64]faultnet.Shape{}}
}

// setMember shapes the client connections of member; zero restores them.
func (l *clientLinks) setMember(member int, s faultnet.Shape) { setShape(l, l.members, member, s) }

// setSession shapes the connections of session id; zero restores them.
func (l *clientLinks) setSession(id int64, s faultnet.Shape) { setShape(l, l.sessions, id, s) }

// setShape sets or, for the zero Shape, removes shapes[k] under l.mu.
func setShape[K comparable](l *clientLinks, shapes map[K]faultnet.Shape, k K, s faultnet.Shape) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.IsZero() {
		delete(shapes, k)
	} else {
		shapes[k] = s
	}
}

func (l *clientLinks) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.members)
	clear(l.sessions)
}

func (l *clientLinks) shape(member int, session int64) faultnet.Shape {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.members[member]
	if session != 0 {
		s = s.Plus(l.sessions[session])
	}
	return s
}

// wrap shapes a client's connection to member. The session it carries is
// read from the server's first reply (ZooKeeper's ConnectResponse: frame
// length, protocol version, timeout, session id), so a session's shape
// follows its client across reconnections without asking the server.
func (l *clientLinks) wrap(nc net.Conn, member int) net.Conn {
	sn := &sniffer{}
	shape := func() faultnet.Shape { return l.shape(member, sn.session.Load()) }
	sn.Conn = faultnet.Shaped(nc, shape, shape)
	return sn
}

// connectResponseHead is the length of a ConnectResponse up to and
// including its session id.
const connectResponseHead = 4 + 4 + 4 + 8

// sniffer learns the session of a client connection from the first bytes
// the server sends on it.
type sniffer struct {
	net.Conn
	session atomic.Int64
	head    []byte // the server's first bytes, until connectResponseHead
}

func (s *sniffer) Read(b []byte) (int, error) {
	n, err := s.Conn.Read(b)
	if len(s.head) < connectResponseHead && n > 0 {
		s.head = append(s.head, b[:min(n, connectResponseHead-len(s.head))]...)
		if len(s.head) == connectResponseHead {
			s.session.Store(int64(binary.BigEndian.Uint64(s.head[12:])))
		}
	}
	return n, err
}
