package testcluster

import (
	"io"
	"net"
	"strconv"
	"sync"
)

// Fronts give each member a TCP client port on loopback for clients that
// cannot be handed a dialer (another language's, another process's): a
// port per member, bound at once and kept across the member's restarts,
// whose connections are carried to the member in memory (Member.Dial),
// so the member's client links and the sessions' shapes apply to them.
// While a member is stopped its port resets each connection at once, as
// a closed port refuses one.
type Fronts struct {
	host     string
	basePort int
	wg       sync.WaitGroup // accept loops and carriers

	mu     sync.Mutex // guards lns, conns and closed
	lns    []net.Listener
	conns  map[net.Conn]struct{}
	closed bool
}

// ServeTCP listens on a port of host (a loopback address) for each
// member, kernel-chosen when basePort is 0 and basePort+N-1 for member N
// otherwise, and carries the connections to it; Addrs names the ports,
// member 1 first.
func (c *Cluster) ServeTCP(host string, basePort int) (*Fronts, error) {
	f := &Fronts{host: host, basePort: basePort, conns: map[net.Conn]struct{}{}}
	for _, m := range c.Members() {
		if _, err := f.Add(m); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Add gives one more member a port (basePort+N-1 for the Nth port when
// basePort is not 0) and returns its address; for a member that joined
// after ServeTCP (Cluster.AddMember).
func (f *Fronts) Add(m *Member) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return "", net.ErrClosed
	}
	port := 0
	if f.basePort != 0 {
		port = f.basePort + len(f.lns)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, strconv.Itoa(port)))
	if err != nil {
		return "", err
	}
	f.lns = append(f.lns, ln)
	f.wg.Add(1)
	go f.accept(ln, m)
	return ln.Addr().String(), nil
}

// Addrs are the ports' addresses, member 1 first: the connect string's
// parts.
func (f *Fronts) Addrs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.lns))
	for i, ln := range f.lns {
		out[i] = ln.Addr().String()
	}
	return out
}

func (f *Fronts) accept(ln net.Listener, m *Member) {
	defer f.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			return // closed
		}
		mc, err := m.Dial()
		if err != nil {
			if tc, ok := client.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, as a closed port answers
			}
			_ = client.Close()
			continue
		}
		if !f.track(client, mc) {
			continue
		}
		f.wg.Add(2)
		go f.carry(client, mc)
		go f.carry(mc, client)
	}
}

// track remembers a pair of connections until they end; false (and both
// closed) once the fronts are closed.
func (f *Fronts) track(a, b net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		a.Close()
		b.Close()
		return false
	}
	f.conns[a], f.conns[b] = struct{}{}, struct{}{}
	return true
}

// carry copies one direction; when it ends, both sides are closed, as a
// member closing its end closes the client's socket.
func (f *Fronts) carry(dst, src net.Conn) {
	defer f.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	f.mu.Lock()
	delete(f.conns, dst)
	delete(f.conns, src)
	f.mu.Unlock()
}

// Close stops listening and closes every connection carried.
func (f *Fronts) Close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	lns := f.lns
	f.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	f.wg.Wait()
}
