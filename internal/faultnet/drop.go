package faultnet

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// Drop partitions node from each of others, both ways, without telling
// anyone: unlike Isolate nothing is refused or closed. Reads and writes on
// connections already open across a dropped link block, keeping every
// byte, until Heal, Close or the connection's deadline; a new dial across
// it waits out its timeout, like a SYN sent into a black hole. This is
// what a real partition looks like to TCP, and the case in which a node
// must notice a dead peer by its own timers.
func (n *Network) Drop(node string, others ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, o := range others {
		n.dropped[link{node, o}] = true
		n.dropped[link{o, node}] = true
	}
}

// DropOneWay stops node from opening connections to to, silently, while
// to's connections to from work on: a stateful firewall that blocks new
// connections in one direction, or a peer whose accept queue is full. A
// dial from→to waits out its timeout, and the connections from already
// opened to to hang (both ways, bytes kept) until Heal; connections that
// to dialled are untouched, so from still hears everything to sends it on
// them.
func (n *Network) DropOneWay(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dropped[link{from, to}] = true
}

// Undrop restores the one direction from→to that Drop or DropOneWay took
// down, leaving every other link as it is: connections dialled from→to
// resume where they stopped, and dials across it go through again.
func (n *Network) Undrop(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.dropped[link{from, to}] {
		return
	}
	delete(n.dropped, link{from, to})
	close(n.healed)
	n.healed = make(chan struct{})
}

// healDropsLocked restores every dropped link and wakes what waits on one.
// n.mu must be held.
func (n *Network) healDropsLocked() {
	clear(n.dropped)
	close(n.healed)
	n.healed = make(chan struct{})
}

// linkState reports whether from→to is dropped, with a channel that is
// closed at the next Heal.
func (n *Network) linkState(from, to string) (dropped bool, healed <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropped[link{from, to}], n.healed
}

func (n *Network) addWaiting(d int) {
	n.mu.Lock()
	n.waiting += d
	n.mu.Unlock()
}

// Waiting returns how many reads, writes and dials are blocked on dropped
// links, so a test can wait until its I/O is held before healing.
func (n *Network) Waiting() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.waiting
}

// waitDial blocks a dial from→to while the link is dropped. It returns the
// part of timeout left for the real dial, or a timeout error once timeout
// has passed with the link still down; timeout 0 waits for Heal.
func (n *Network) waitDial(from, to string, timeout time.Duration) (time.Duration, error) {
	var expire <-chan time.Time
	start := time.Now()
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	for {
		dropped, healed := n.linkState(from, to)
		if !dropped {
			if timeout == 0 {
				return 0, nil
			}
			left := timeout - time.Since(start)
			if left <= 0 {
				return 0, dialTimeout(to)
			}
			return left, nil
		}
		n.addWaiting(1)
		select {
		case <-healed:
			n.addWaiting(-1)
		case <-expire:
			n.addWaiting(-1)
			return 0, dialTimeout(to)
		}
	}
}

func dialTimeout(to string) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: stringAddr(to), Err: os.ErrDeadlineExceeded}
}

// stringAddr is a net.Addr for an address that was never resolved.
type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

// held is a connection's state across a Drop: its deadlines, which the
// wrapper must enforce itself while it holds I/O back, and bytes already
// read from the socket when the link went down, delivered after Heal.
type held struct {
	readMu sync.Mutex // serialises Reads, which own pending and pendErr

	mu      sync.Mutex // guards the deadline fields below
	readDL  time.Time
	writeDL time.Time
	changed chan struct{} // closed and replaced when a deadline changes

	pending []byte
	pendErr error
}

// deadline returns the read or write deadline and a channel closed when
// either changes.
func (h *held) deadline(write bool) (time.Time, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	if write {
		return h.writeDL, h.changed
	}
	return h.readDL, h.changed
}

func (h *held) set(read, write bool, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if read {
		h.readDL = t
	}
	if write {
		h.writeDL = t
	}
	if h.changed != nil {
		close(h.changed)
	}
	h.changed = make(chan struct{})
}

// SetDeadline sets both deadlines, on the socket and on I/O held by a Drop.
func (c *conn) SetDeadline(t time.Time) error {
	c.hold.set(true, true, t)
	return c.Conn.SetDeadline(t)
}

// SetReadDeadline sets the read deadline, on the socket and on reads held
// by a Drop.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.hold.set(true, false, t)
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline sets the write deadline, on the socket and on writes
// held by a Drop.
func (c *conn) SetWriteDeadline(t time.Time) error {
	c.hold.set(false, true, t)
	return c.Conn.SetWriteDeadline(t)
}

// waitUp blocks while the connection's link is dropped. It returns nil once
// the link is up, or an error when the connection is closed or the
// deadline of the operation passes first.
func (c *conn) waitUp(write bool) error {
	op := "read"
	if write {
		op = "write"
	}
	for {
		dropped, healed := c.net.linkState(c.from, c.to)
		if !dropped {
			return nil
		}
		dl, changed := c.hold.deadline(write)
		var expire <-chan time.Time
		var timer *time.Timer
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return c.opError(op, os.ErrDeadlineExceeded)
			}
			timer = time.NewTimer(d)
			expire = timer.C
		}
		c.net.addWaiting(1)
		var err error
		select {
		case <-healed:
		case <-changed: // look at the new deadline
		case <-c.closed:
			err = c.opError(op, net.ErrClosed)
		case <-expire:
			err = c.opError(op, os.ErrDeadlineExceeded)
		}
		c.net.addWaiting(-1)
		if timer != nil {
			timer.Stop()
		}
		if err != nil {
			return err
		}
	}
}

func (c *conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// heldRead reads unless the link is dropped. Bytes that arrive while a
// read is under way and the link drops are kept and delivered after Heal,
// so nothing is lost; so is an end of stream, which a partition also holds
// back.
func (c *conn) heldRead(b []byte) (int, error) {
	h := &c.hold
	h.readMu.Lock()
	defer h.readMu.Unlock()
	if err := c.waitUp(false); err != nil {
		return 0, err
	}
	if len(h.pending) > 0 {
		n := copy(b, h.pending)
		h.pending = h.pending[n:]
		return n, nil
	}
	if h.pendErr != nil {
		err := h.pendErr
		h.pendErr = nil
		return 0, err
	}
	n, err := c.Conn.Read(b)
	var ne net.Error
	if n == 0 && errors.As(err, &ne) && ne.Timeout() {
		return 0, err // the socket's own deadline: local, not held
	}
	if werr := c.waitUp(false); werr != nil {
		h.pending = append(h.pending, b[:n]...)
		h.pendErr = err
		return 0, werr
	}
	return n, err
}

// heldWrite writes once the link is up. What the kernel took before a Drop
// is on the wire already, as with TCP.
func (c *conn) heldWrite(b []byte) (int, error) {
	if err := c.waitUp(true); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
