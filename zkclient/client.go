package zkclient

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// DefaultSessionTimeout is the session timeout asked for when Config gives
// none: zkCli's default.
const DefaultSessionTimeout = 30 * time.Second

// Config says where and how a Client connects.
type Config struct {
	// Servers are the host:port addresses to try, in a shuffled order as
	// the Java client does.
	Servers []string
	// SessionTimeout is the timeout asked for; the server may negotiate
	// another. Zero means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// Watcher receives every Event, one at a time and in order, from one
	// goroutine. Each request's reply returns to its caller only after the
	// Watcher has returned from every event that arrived before it, so it
	// must not wait on the Client. Nil drops events.
	Watcher func(Event)
	// Dial opens a connection; nil uses net.DialTimeout over TCP.
	Dial func(addr string, timeout time.Duration) (net.Conn, error)
	// Logger receives connection events at debug level; nil discards them.
	Logger *slog.Logger
	// CanBeReadOnly asks servers without a quorum to serve this client
	// read-only (the Java client's canBeReadOnly): such a connection
	// reports ConnectedReadOnly, and writes are answered NOTREADONLY. As
	// the Java client does, a client that has only ever had read-only
	// servers starts a new session at each connection.
	CanBeReadOnly bool
}

// ParseServers splits a zkCli connect string, "host:port[,host:port...]",
// into addresses. A chroot suffix (/path) is refused: this client has none.
func ParseServers(connect string) ([]string, error) {
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		return nil, fmt.Errorf("connect string %q: a chroot is not supported", connect)
	}
	var out []string
	for _, s := range strings.Split(connect, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(s, "2181") // as the Java client, a host alone means port 2181
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("connect string %q names no server", connect)
	}
	return out, nil
}

// State is the Java client's ZooKeeper.States as this client has them.
type State int

// States of a Client. Closed and AuthFailed are final.
const (
	StateConnecting State = iota
	StateConnected
	StateClosed // closed by Close, or the session expired
	StateAuthFailed
)

// String is the name zkCli shows in its prompt.
func (s State) String() string {
	switch s {
	case StateConnecting:
		return "CONNECTING"
	case StateConnected:
		return "CONNECTED"
	case StateClosed:
		return "CLOSED"
	case StateAuthFailed:
		return "AUTH_FAILED"
	}
	return "UNKNOWN"
}

// ReadOnly reports whether the client is connected to a server that
// serves it read-only (the Java client's CONNECTEDREADONLY).
func (c *Client) ReadOnly() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == StateConnected && c.readOnly
}

// Alive reports whether the client can still have a session, as
// States.isAlive: every state but Closed and AuthFailed.
func (s State) Alive() bool { return s == StateConnecting || s == StateConnected }

// Client is one ZooKeeper session, re-attached across connections until it
// expires or is closed. Its methods are safe for concurrent use.
type Client struct {
	cfg     Config
	servers []string
	log     *slog.Logger
	events  *eventQueue
	stop    chan struct{} // closed by Close: the connect loop ends
	done    chan struct{} // closed when the connect loop has ended

	mu        sync.Mutex // guards the fields below
	state     State
	changed   chan struct{} // closed and replaced when state or failures change
	failures  uint64        // connection attempts failed and connections lost
	conn      *conn         // the live connection while StateConnected
	sessionID int64
	passwd    []byte
	timeout   time.Duration // negotiated; until then the one asked for
	lastZxid  int64         // highest zxid of a reply, for re-attaching
	lastXid   int32         // xid of the last request sent
	auths     []wire.AuthPacket
	watches   watchSet
	closing   bool
	// readOnly is set while the live connection is to a read-only
	// server; seenRW once a read-write server gave the session.
	readOnly, seenRW bool
	// rwServer is a read-write server found while connected read-only
	// (searchRW): the next one to connect to.
	rwServer string
}

// New starts connecting to cfg.Servers and returns at once; requests wait
// for the session (see Client's methods).
func New(cfg Config) (*Client, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("zkclient: no servers")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.Dial == nil {
		cfg.Dial = func(addr string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, timeout)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	servers := append([]string(nil), cfg.Servers...)
	rand.Shuffle(len(servers), func(i, j int) { servers[i], servers[j] = servers[j], servers[i] })
	c := &Client{
		cfg:     cfg,
		servers: servers,
		log:     log,
		events:  newEventQueue(cfg.Watcher),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		timeout: cfg.SessionTimeout,
	}
	go c.loop()
	return c, nil
}

// State returns the client's current state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// SessionID returns the session's id, 0 before the first connection.
func (c *Client) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// SessionTimeout returns the negotiated session timeout (the one asked
// for until a server has answered).
func (c *Client) SessionTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timeout
}

// Ended is closed once the client has stopped for good: closed, expired
// or refused authentication.
func (c *Client) Ended() <-chan struct{} { return c.done }

// WaitConnected waits up to within for the client to be connected and
// reports whether it is.
func (c *Client) WaitConnected(within time.Duration) bool {
	timer := time.NewTimer(within)
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.state != StateConnected {
		if !c.state.Alive() {
			return false
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			c.mu.Lock()
			return c.state == StateConnected
		}
		c.mu.Lock()
	}
	return true
}

// setStateLocked changes state and wakes everyone waiting on a change.
func (c *Client) setStateLocked(s State) {
	c.state = s
	c.broadcastLocked()
}

func (c *Client) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// deadCode is the error a request gets when the client is in a final
// state, as the Java client's conLossPacket: AUTHFAILED after a refused
// authentication, SESSIONEXPIRED once closed or expired.
func (c *Client) deadCodeLocked() wire.Code {
	if c.state == StateAuthFailed {
		return wire.CodeAuthFailed
	}
	return wire.CodeSessionExpired
}

// connected waits for a live connection. As with the Java client, a
// request made while disconnected fails with CONNECTIONLOSS when the next
// connection attempt fails, and at the latest after a session timeout.
func (c *Client) connected() (*conn, wire.Code) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := c.failures
	var timer *time.Timer
	for c.state != StateConnected {
		if !c.state.Alive() || c.closing {
			return nil, c.deadCodeLocked()
		}
		if c.failures != start {
			return nil, wire.CodeConnectionLoss
		}
		if timer == nil {
			timer = time.NewTimer(c.timeout)
			defer timer.Stop()
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
			c.mu.Lock()
		case <-timer.C:
			c.mu.Lock()
			if c.state != StateConnected {
				return nil, wire.CodeConnectionLoss
			}
		}
	}
	return c.conn, wire.CodeOK
}

// loop connects, waits for the connection to end, and connects again to
// the next server, until the session ends or Close is called.
func (c *Client) loop() {
	defer close(c.done)
	for i := 0; ; i++ {
		select {
		case <-c.stop:
			return
		default:
		}
		if c.isClosing() {
			return
		}
		c.mu.Lock()
		addr, found := c.servers[i%len(c.servers)], c.rwServer != ""
		if found {
			addr, c.rwServer = c.rwServer, ""
		}
		c.mu.Unlock()
		if i > 0 && !found {
			// As the Java client, wait up to a second before each
			// attempt but the first, so a dead ensemble is not hammered.
			select {
			case <-c.stop:
				return
			case <-time.After(time.Duration(rand.Int64N(int64(time.Second)))):
			}
		}
		cn, err := c.connect(addr)
		if err != nil {
			c.log.Debug("connect failed", "server", addr, "err", err)
			c.mu.Lock()
			if errors.Is(err, errExpired) && !c.closing {
				c.setStateLocked(StateClosed)
				c.mu.Unlock()
				c.events.push(Event{Type: wire.EventNone, State: wire.StateExpired})
				return
			}
			c.failures++
			c.broadcastLocked()
			c.mu.Unlock()
			continue
		}
		select {
		case <-cn.dead:
		case <-c.stop:
			return
		}
		if c.State() == StateAuthFailed {
			return
		}
	}
}

func (c *Client) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// errExpired is a handshake answered without a session.
var errExpired = errors.New("session expired")

// connect opens a connection to addr and attaches the session to it:
// handshake, then the stored authentications and watches, then requests.
func (c *Client) connect(addr string) (*conn, error) {
	c.mu.Lock()
	timeout := c.timeout / time.Duration(len(c.servers))
	req := wire.ConnectRequest{
		LastZxidSeen: c.lastZxid,
		Timeout:      int32(c.cfg.SessionTimeout / time.Millisecond),
		SessionID:    c.sessionID,
		Passwd:       c.passwd,
		ReadOnly:     c.cfg.CanBeReadOnly,
	}
	if !c.seenRW {
		// A read-only server's session is its own: ClientCnxn asks for
		// a new one until a read-write server has given one.
		req.SessionID = 0
	}
	c.mu.Unlock()
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	nc, err := c.cfg.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	cn := newConn(c, nc)
	resp, err := wire.Handshake(nc, cn.r, &req)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	if resp.Timeout <= 0 {
		nc.Close()
		return nil, errExpired
	}
	_ = nc.SetDeadline(time.Time{})

	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		nc.Close()
		return nil, errors.New("closed")
	}
	c.sessionID, c.passwd = resp.SessionID, resp.Passwd
	c.readOnly = resp.ReadOnly
	c.seenRW = c.seenRW || !resp.ReadOnly
	c.timeout = time.Duration(resp.Timeout) * time.Millisecond
	cn.timeout = c.timeout
	auths := append([]wire.AuthPacket(nil), c.auths...)
	var rearm *wire.SetWatches2Request
	if !c.watches.empty() {
		rearm = c.watches.request(c.lastZxid)
	}
	c.mu.Unlock()
	c.log.Debug("connected", "server", addr, "session", fmt.Sprintf("0x%x", resp.SessionID), "timeout", cn.timeout)
	state := wire.StateSyncConnected
	if resp.ReadOnly {
		state = wire.StateConnectedReadOnly
	}
	c.events.push(Event{Type: wire.EventNone, State: state})

	go cn.readLoop()
	for i := range auths {
		cn.sendAuth(&auths[i], nil)
	}
	if rearm != nil {
		cn.sendSpecial(wire.XidSetWatches, wire.OpSetWatches2, rearm)
	}
	go cn.pingLoop()

	c.mu.Lock()
	defer c.mu.Unlock()
	if cn.gone || c.closing {
		return cn, nil // the loop sees cn.dead and moves on
	}
	c.conn = cn
	c.setStateLocked(StateConnected)
	if resp.ReadOnly && len(c.servers) > 1 {
		go c.searchRW(cn, addr)
	}
	return cn, nil
}

// lost is called once by a connection's reader when the connection ends.
func (c *Client) lost(cn *conn, err error) {
	c.mu.Lock()
	cn.gone = true
	wasLive := c.conn == cn
	if wasLive {
		c.conn = nil
	}
	notify := wasLive && !c.closing && c.state == StateConnected
	if c.state == StateConnected {
		c.state = StateConnecting
	}
	if !c.closing {
		c.failures++
	}
	c.broadcastLocked()
	code := wire.CodeConnectionLoss
	if !c.state.Alive() {
		code = c.deadCodeLocked()
	}
	c.mu.Unlock()
	cn.failPending(code)
	if notify {
		c.log.Debug("connection lost", "err", err)
		c.events.push(Event{Type: wire.EventNone, State: wire.StateDisconnected})
	}
}

// authFailed ends the session for good: the server refused an
// authentication and closes the connection.
func (c *Client) authFailed() {
	c.mu.Lock()
	if c.state.Alive() {
		c.setStateLocked(StateAuthFailed)
	}
	c.mu.Unlock()
	c.events.push(Event{Type: wire.EventNone, State: wire.StateAuthFailed})
}

// Close ends the session (closeSession) if connected, stops reconnecting,
// delivers a Closed event and waits for the Watcher to handle every event.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	// closing first: the server drops the connection after answering
	// closeSession, and that loss must not look like one to recover from.
	c.closing = true
	cn := c.conn
	live := c.state == StateConnected
	c.mu.Unlock()
	var err error
	if live {
		_, err = c.callOn(cn, &call{op: wire.OpCloseSession}, "", nil)
	}
	c.mu.Lock()
	if c.state.Alive() {
		c.setStateLocked(StateClosed)
	}
	c.mu.Unlock()
	close(c.stop)
	if cn != nil {
		cn.close()
	}
	<-c.done
	c.events.push(Event{Type: wire.EventNone, State: wire.StateClosed})
	c.events.close()
	return err
}

// call sends one request once a connection is up and waits for its reply;
// the reply's body is decoded into resp (when non-nil and the request
// succeeded), and a failure comes back as an *Error naming path.
// onReply, when set, runs with the reply's code under c.mu before any
// later notification is handled: it keeps the watch tables in step.
func (c *Client) call(op wire.OpCode, path string, req, resp wire.Message, onReply func(wire.Code)) (wire.ReplyHeader, error) {
	cn, code := c.connected()
	if code != wire.CodeOK {
		return wire.ReplyHeader{}, &Error{Code: code, Path: path}
	}
	return c.callOn(cn, &call{op: op, resp: resp, onReply: onReply}, path, req)
}

// callOn sends cl's request on cn and waits for the reply, then for the
// Watcher to have handled every event that arrived before it.
func (c *Client) callOn(cn *conn, cl *call, path string, req wire.Message) (wire.ReplyHeader, error) {
	cl.done = make(chan struct{})
	cn.send(cl, req)
	<-cl.done
	c.events.waitHandled(cl.eventMark)
	if cl.hdr.Err != wire.CodeOK {
		return cl.hdr, &Error{Code: cl.hdr.Err, Path: path}
	}
	return cl.hdr, cl.err
}
