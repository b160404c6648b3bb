package httpserve

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound one HTTP port. Zero fields take the defaults below.
type Limits struct {
	// ReadHeaderTimeout bounds a request's headers; ReadTimeout the whole
	// request, body included (hutch's requests are small).
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// WriteTimeout bounds writing a response. A handler that streams
	// (the event trace) pushes its deadline on before each write
	// (ExtendWrite), so a reader that stops reading is dropped after it.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no next
	// request: ZooKeeper's admin server (Jetty) closes one after 30s.
	IdleTimeout time.Duration
	// MaxConns bounds the connections a port holds at once; past it a new
	// connection is closed as soon as it is accepted, before it costs
	// more than its socket for a moment.
	MaxConns int
}

// Defaults. WriteTimeout leaves room for Go's CPU profile, 30s by
// default, which net/http/pprof refuses to take if the server's write
// deadline is shorter.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
	DefaultMaxConns          = 64
)

// WithDefaults fills the zero fields. A ReadHeaderTimeout or ReadTimeout
// left zero is at most the IdleTimeout, so a port configured to drop idle
// connections quickly drops silent new ones as quickly.
func (l Limits) WithDefaults() Limits {
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = min(DefaultReadHeaderTimeout, l.IdleTimeout)
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = min(DefaultReadTimeout, max(l.IdleTimeout, l.ReadHeaderTimeout))
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	return l
}

// Server returns an http.Server for h with l's deadlines; serve it on
// Listener(ln) for the connection cap.
func (l Limits) Server(h http.Handler) *http.Server {
	l = l.WithDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// Listener caps ln at l.MaxConns open connections: a connection accepted
// past the cap is closed at once. Unlike golang.org/x/net/netutil's
// LimitListener, which stops accepting, this keeps the kernel's backlog
// moving, so the port answers again the moment a slot frees, and an
// operator is told "connection reset" rather than left waiting.
func (l Limits) Listener(ln net.Listener) net.Listener {
	l = l.WithDefaults()
	return &capListener{Listener: ln, max: l.MaxConns}
}

// Serve serves h on ln within l until the listener is closed (or the
// server returned is, by Close or Shutdown). It returns the server at
// once; errors other than closing end up in errs, if it is not nil.
func Serve(ln net.Listener, h http.Handler, l Limits, errs func(error)) *http.Server {
	hs := l.Server(h)
	go func() {
		if err := hs.Serve(l.Listener(ln)); err != nil && err != http.ErrServerClosed && errs != nil {
			errs(err)
		}
	}()
	return hs
}

// ExtendWrite moves w's write deadline to d from now: a streaming handler
// calls it before each write, so the port's WriteTimeout bounds one write
// rather than the whole stream.
func ExtendWrite(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}

type capListener struct {
	net.Listener
	max int
	// mu guards open.
	mu   sync.Mutex
	open int
}

func (c *capListener) Accept() (net.Conn, error) {
	for {
		nc, err := c.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		full := c.open >= c.max
		if !full {
			c.open++
		}
		c.mu.Unlock()
		if full {
			if tc, ok := nc.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, not a connection left in TIME_WAIT here
			}
			_ = nc.Close()
			continue
		}
		return &countedConn{Conn: nc, l: c}, nil
	}
}

// countedConn gives its slot back once, when it closes.
type countedConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
