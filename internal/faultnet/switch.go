package faultnet

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Route is one node behind a Switch.
type Route struct {
	// Node names the node in Drop.
	Node string
	// IP is the loopback address the node binds its outgoing peer
	// connections to, such as 127.0.0.2: the switch tells who dialled by
	// it. The node's front address listens on it too.
	IP string
	// Target is the node's real peer listener, where its connections are
	// forwarded.
	Target string
	// FrontPort, when set, is the port the node's front listens on (on
	// IP); 0 lets the system pick one, which may be one a test has just
	// chosen for another listener on that address.
	FrontPort int
}

// Switch partitions separate processes on loopback. For each node it
// listens on a front address, the one the other nodes are told to dial,
// and forwards every connection to the node's real listener; it knows the
// dialling node by the connection's source IP. Drop pauses the links
// between nodes: the switch stops reading and writing their bytes, neither
// losing nor refusing nor closing anything, so kernel buffers fill and the
// peers' I/O hangs as it does across a real partition. Heal resumes the
// copying where it stopped.
type Switch struct {
	byIP  map[string]string // source IP → node
	front map[string]string // node → front address
	wg    sync.WaitGroup    // accept loops and forwarders
	done  chan struct{}     // closed by Close

	mu      sync.Mutex // guards the fields below
	routes  map[string]Route
	lns     []net.Listener
	dropped map[link]bool // byte directions paused by Drop
	// dialsCut holds, by dialler and target, the connections DropDials
	// stopped: new and open ones alike, both ways.
	dialsCut map[link]bool
	healed   chan struct{} // closed and replaced by Heal
	conns    map[net.Conn]struct{}
	paused   int // copiers and connections held by a Drop, for tests
	closed   bool
}

// StartSwitch listens on a free port of each route's IP and starts
// forwarding; the switch is closed when tb ends.
func StartSwitch(tb testing.TB, routes []Route) *Switch {
	tb.Helper()
	s := &Switch{
		byIP:     make(map[string]string),
		front:    make(map[string]string),
		done:     make(chan struct{}),
		routes:   make(map[string]Route),
		dropped:  make(map[link]bool),
		dialsCut: make(map[link]bool),
		healed:   make(chan struct{}),
		conns:    make(map[net.Conn]struct{}),
	}
	tb.Cleanup(func() { s.Close() })
	for _, r := range routes {
		if _, dup := s.byIP[r.IP]; dup {
			tb.Fatalf("switch: two nodes on %s", r.IP)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(r.IP, strconv.Itoa(r.FrontPort)))
		if err != nil {
			tb.Fatalf("switch: listen for node %s: %v", r.Node, err)
		}
		s.byIP[r.IP] = r.Node
		s.front[r.Node] = ln.Addr().String()
		s.routes[r.Node] = r
		s.lns = append(s.lns, ln)
	}
	for _, ln := range s.lns {
		s.wg.Add(1)
		go s.accept(ln, s.nodeAt(ln.Addr().String()))
	}
	return s
}

func (s *Switch) nodeAt(front string) string {
	for n, a := range s.front {
		if a == front {
			return n
		}
	}
	return ""
}

// Front returns the address the other nodes must dial to reach node.
func (s *Switch) Front(node string) string { return s.front[node] }

// SetTarget changes where new connections to node are forwarded, for a
// node restarted on another port. Open connections are left alone.
func (s *Switch) SetTarget(node, target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.routes[node]
	r.Target = target
	s.routes[node] = r
}

// Drop pauses every link between node and each of others, both ways.
func (s *Switch) Drop(node string, others ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range others {
		s.dropped[link{node, o}] = true
		s.dropped[link{o, node}] = true
	}
}

// DropDials stops node from opening connections to node to, silently,
// while to's connections to from carry on: a one-way cut, as a stateful
// firewall or a full accept queue makes. A new connection from→to is held
// before it reaches to, and those already open hang both ways, bytes
// kept, until Heal.
func (s *Switch) DropDials(from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialsCut[link{from, to}] = true
}

// Heal resumes every paused link.
func (s *Switch) Heal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.dropped)
	clear(s.dialsCut)
	close(s.healed)
	s.healed = make(chan struct{})
}

// Paused returns how many copiers and new connections are held by a Drop
// right now, so a test can wait until traffic has reached the cut.
func (s *Switch) Paused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// Close stops listening, closes every forwarded connection and waits for
// the forwarders to end. It is safe to call more than once.
func (s *Switch) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

var errSwitchClosed = errors.New("faultnet: switch closed")

// waitUp blocks while bytes from→to are dropped or the connection's dial
// (dialler to target) is cut; it fails once the switch closes.
func (s *Switch) waitUp(from, to string, dial link) error {
	for {
		s.mu.Lock()
		dropped, healed := s.dropped[link{from, to}] || s.dialsCut[dial], s.healed
		if dropped {
			s.paused++
		}
		s.mu.Unlock()
		if !dropped {
			return nil
		}
		select {
		case <-healed:
		case <-s.done:
		}
		s.mu.Lock()
		s.paused--
		s.mu.Unlock()
		select {
		case <-s.done:
			return errSwitchClosed
		default:
		}
	}
}

// track registers c to be closed by Close; it reports false, having closed
// c, when the switch is closed already.
func (s *Switch) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Switch) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

func (s *Switch) accept(ln net.Listener, to string) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		if !s.track(c) {
			return
		}
		s.wg.Add(1)
		go s.forward(c, to)
	}
}

// forward connects an accepted connection to node to's real listener,
// once the link from the dialling node is up, and copies both ways. It
// dials from the same source IP, so the node sees its peer's address as
// it would without the switch.
func (s *Switch) forward(c net.Conn, to string) {
	defer s.wg.Done()
	srcIP := c.RemoteAddr().(*net.TCPAddr).IP.String()
	from := s.byIP[srcIP] // "" for an unknown source: never dropped
	dial := link{from, to}
	if err := s.waitUp(from, to, dial); err != nil {
		s.untrack(c)
		return
	}
	s.mu.Lock()
	target := s.routes[to].Target
	s.mu.Unlock()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(srcIP)}}
	up, err := d.Dial("tcp", target)
	if err != nil {
		s.untrack(c)
		return
	}
	if !s.track(up) {
		s.untrack(c)
		return
	}
	s.wg.Add(2)
	go s.copy(up, c, from, to, dial)
	go s.copy(c, up, to, from, dial)
}

// copy moves bytes from src to dst while the link from→to is up. Bytes
// read just before a Drop are held until Heal, never lost, and so is the
// end of the stream: a FIN does not cross a partition either.
func (s *Switch) copy(dst, src net.Conn, from, to string, dial link) {
	defer s.wg.Done()
	defer s.untrack(dst)
	defer s.untrack(src)
	buf := make([]byte, 32<<10)
	for {
		if s.waitUp(from, to, dial) != nil {
			return
		}
		n, rerr := src.Read(buf)
		if s.waitUp(from, to, dial) != nil {
			return
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if rerr != nil {
			return
		}
	}
}

// String describes the switch's fronts, for logs.
func (s *Switch) String() string {
	return fmt.Sprintf("switch%v", s.front)
}
