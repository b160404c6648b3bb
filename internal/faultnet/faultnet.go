package faultnet

import (
	"errors"
	"net"
	"sync"
	"time"
)

// ErrPartitioned is what dials and I/O return across a cut link.
var ErrPartitioned = errors.New("faultnet: link partitioned")

// Network tracks which nodes are cut off from which, by node name (any
// string the test chooses, usually the node's listen address).
type Network struct {
	mu      sync.Mutex
	cut     map[link]bool
	conns   map[*conn]struct{}
	dropped map[link]bool  // silent partitions (Drop), see drop.go
	shapes  map[link]Shape // slow, narrow or lossy links (SetShape), see shape.go
	healed  chan struct{}  // closed and replaced by Heal, waking blocked I/O
	waiting int            // goroutines blocked on a dropped link, for tests
}

type link struct{ from, to string }

// New returns a network with every link up.
func New() *Network {
	return &Network{
		cut:     make(map[link]bool),
		conns:   make(map[*conn]struct{}),
		dropped: make(map[link]bool),
		shapes:  make(map[link]Shape),
		healed:  make(chan struct{}),
	}
}

// Dialer returns the dial function node self uses to reach others; addr
// names the target node.
func (n *Network) Dialer(self string) func(addr string, timeout time.Duration) (net.Conn, error) {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		if n.isCut(self, addr) {
			return nil, ErrPartitioned
		}
		timeout, err := n.waitDial(self, addr, timeout)
		if err != nil {
			return nil, err
		}
		nc, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return nil, err
		}
		c := &conn{Conn: nc, net: n, from: self, to: addr, closed: make(chan struct{})}
		n.mu.Lock()
		n.conns[c] = struct{}{}
		n.mu.Unlock()
		// A cut made while dialling must not leave this one open.
		if n.isCut(self, addr) {
			c.Close()
			return nil, ErrPartitioned
		}
		return Shaped(c, func() Shape { return n.shape(self, addr) }, func() Shape { return n.shape(addr, self) }), nil
	}
}

// Isolate cuts every link between node and the others named, both ways,
// and closes the connections already open across them.
func (n *Network) Isolate(node string, others ...string) {
	n.mu.Lock()
	for _, o := range others {
		n.cut[link{node, o}] = true
		n.cut[link{o, node}] = true
	}
	var doomed []*conn
	for c := range n.conns {
		if n.cut[link{c.from, c.to}] {
			doomed = append(doomed, c)
		}
	}
	n.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

// Heal restores every link, those cut by Isolate, dropped by Drop and
// shaped by SetShape; I/O blocked on a dropped link resumes where it
// stopped.
func (n *Network) Heal() {
	n.mu.Lock()
	clear(n.cut)
	clear(n.shapes)
	n.healDropsLocked()
	n.mu.Unlock()
}

func (n *Network) isCut(from, to string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[link{from, to}]
}

// conn is one dialled connection; closing it ends the TCP connection, so
// the accepting side sees it go too.
type conn struct {
	net.Conn
	net      *Network
	from, to string
	once     sync.Once
	closed   chan struct{} // closed by Close, waking I/O held by a Drop
	hold     held          // deadlines and bytes held across a Drop, see drop.go
}

func (c *conn) Read(b []byte) (int, error) {
	if c.net.isCut(c.from, c.to) {
		c.Close()
		return 0, ErrPartitioned
	}
	return c.heldRead(b)
}

func (c *conn) Write(b []byte) (int, error) {
	if c.net.isCut(c.from, c.to) {
		c.Close()
		return 0, ErrPartitioned
	}
	return c.heldWrite(b)
}

func (c *conn) Close() error {
	var err error
	c.once.Do(func() {
		c.net.mu.Lock()
		delete(c.net.conns, c)
		c.net.mu.Unlock()
		close(c.closed)
		err = c.Conn.Close()
	})
	return err
}

// SetShape degrades the bytes node from sends to node to, on every
// connection between them whoever dialled it (see Shape); the zero Shape
// restores the link. Bytes already in flight keep the shape they were
// sent with.
func (n *Network) SetShape(from, to string, s Shape) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s.IsZero() {
		delete(n.shapes, link{from, to})
		return
	}
	n.shapes[link{from, to}] = s
}

func (n *Network) shape(from, to string) Shape {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.shapes[link{from, to}]
}

// HealShapes restores every link SetShape degraded, leaving cuts and
// drops as they are.
func (n *Network) HealShapes() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.shapes)
}
