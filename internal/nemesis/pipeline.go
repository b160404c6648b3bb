package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutchzk/hutch/wire"
)

// writeState is what a pipelined create came to.
type writeState int

const (
	writeSent    writeState = iota // no answer yet
	writeAcked                     // answered OK
	writeRefused                   // answered with an error that means not applied
	writeUnknown                   // answer lost with the connection
)

// pwrite is one create of a pipelined writer: the k-th of connection
// incarnation inc in directory generation gen.
type pwrite struct {
	gen, inc, k int
	xid         int32
	dir         bool // the create of directory gen itself, not a write
	state       writeState
	code        wire.Code // the server's error answer, if it gave one
}

// pipeWriter keeps many sequential creates outstanding on one session
// through the raw protocol. On connection loss it re-attaches the same
// session on another node, as a new incarnation, and goes on; a session
// the server expires is counted and replaced. Its creates are named
// w-<inc>-<k>- so the final listing alone shows which committed and in
// which order.
type pipeWriter struct {
	id    int
	dir   string // parent of the writer's directories
	addrs []string
	cfg   Config

	// Owned by run's goroutine.
	sess    rawSession
	node    int
	xid     int32
	needDir bool // the current generation's directory is not known to exist
	dirSent int  // creates sent into the current directory
	k       int  // next k in (gen, inc)

	mu        sync.Mutex // guards the fields below, read by the checks
	gen       int        // directory generation: a new session or a full directory starts the next
	inc       int        // connection incarnation
	writes    []*pwrite
	dirsAcked map[int]bool
	expiries  []expiry     // sessions the server said had expired
	heard     atomic.Int64 // unix nanos of the last reply read
	abandoned []string
	disorder  []string // replies out of xid order
	answers   map[wire.Code]int
}

// errMoved and errClosed end a connection: the server said the session
// moved elsewhere, or the run is over and the session closed.
var (
	errMoved  = errors.New("session moved")
	errClosed = errors.New("session closed")
)

var openWireACL = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

func newPipeWriter(id int, dir string, addrs []string, cfg Config) *pipeWriter {
	return &pipeWriter{id: id, dir: dir, addrs: addrs, cfg: cfg, node: id - 1, needDir: true,
		dirsAcked: make(map[int]bool), answers: make(map[wire.Code]int)}
}

func (w *pipeWriter) dirPath(gen int) string { return fmt.Sprintf("%s/p%d-%d", w.dir, w.id, gen) }

func (w *pipeWriter) nextXid() int32 {
	w.xid++
	return w.xid
}

// newSession forgets the session, so the next attach opens another, in a
// directory of its own: FIFO order holds within a session only.
func (w *pipeWriter) newSession() {
	w.sess = rawSession{lastZxid: w.sess.lastZxid}
	w.mu.Lock()
	w.gen++
	w.mu.Unlock()
	w.needDir, w.dirSent = true, 0
}

// run writes until ctx ends, then closes its session.
func (w *pipeWriter) run(ctx context.Context) {
	for round := 0; round < 100_000 && ctx.Err() == nil; round++ {
		c, err := w.attach(ctx)
		switch {
		case errors.Is(err, errExpired):
			w.expired(w.heard.Load())
			w.newSession()
			continue
		case err != nil:
			if ctx.Err() == nil {
				w.mu.Lock()
				w.abandoned = append(w.abandoned, err.Error())
				w.mu.Unlock()
				w.newSession()
			}
			continue
		}
		w.mu.Lock()
		w.inc++
		w.mu.Unlock()
		w.k = 0
		err = w.serve(ctx, c)
		c.close()
		switch {
		case errors.Is(err, errClosed):
			return
		case errors.Is(err, errExpired):
			w.expired(time.Now().UnixNano()) // told so in a reply
			w.newSession()
		}
	}
}

// expired records that the server ended the session, the client having
// last heard from a server at heard (unix nanos, 0 for never).
func (w *pipeWriter) expired(heard int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	e := expiry{workload: "pipeline", id: w.sess.id, at: now, heard: heard != 0}
	if e.heard {
		e.silent = now.Sub(time.Unix(0, heard))
	}
	w.expiries = append(w.expiries, e)
}

// attach connects to the next node after the current one, and the ones
// after that, until one takes the session. It gives up after three
// session timeouts, by which the session may rightly have expired.
func (w *pipeWriter) attach(ctx context.Context) (*rawConn, error) {
	// A fault may hold every member down for longer than a few session
	// timeouts (a full disk on all of them: the burst that fills them,
	// the hold, each member's restart and an election, some 15-20s on a
	// loaded machine); go-zookeeper's client would go on trying, so this
	// one gives up only past that.
	limit := max(3*w.cfg.SessionTimeout, 30*time.Second)
	deadline := time.Now().Add(limit)
	n := len(w.addrs)
	var last error
	for i := 1; i <= 300 && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		idx := (w.node + i) % n
		c, err := dialRaw(w.addrs[idx], &w.sess, w.cfg.SessionTimeout, 2*time.Second)
		if err == nil {
			w.node = idx
			return c, nil
		}
		if errors.Is(err, errExpired) {
			return nil, err
		}
		last = err
		if i%n == 0 {
			pause(ctx, 200*time.Millisecond) // every node refused: let an election finish
		}
	}
	return nil, fmt.Errorf("pipeline %d: no node took session 0x%x within %v (last: %v)", w.id, w.sess.id, limit, last)
}

// serve runs one connection: it tops the window up every PipelineEvery,
// pings, and matches replies to requests in xid order. It returns when
// the connection fails (every create still outstanding becomes unknown),
// or once ctx has ended, the window drained and the session closed.
func (w *pipeWriter) serve(ctx context.Context, c *rawConn) error {
	replies := make(chan rawReply, 2*w.cfg.PipelineWindow+8)
	readErr := make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			rep, err := c.next()
			if err != nil {
				readErr <- err
				return
			}
			w.heard.Store(time.Now().UnixNano())
			select {
			case replies <- rep:
			case <-quit:
				return
			}
		}
	}()
	var pending []*pwrite
	lose := func(err error) error {
		w.mu.Lock()
		for _, pw := range pending {
			if !pw.dir {
				pw.state = writeUnknown
			}
		}
		w.mu.Unlock()
		return err
	}
	ping := time.NewTicker(w.sess.timeout / 3)
	defer ping.Stop()
	burst := time.NewTicker(w.cfg.PipelineEvery)
	defer burst.Stop()
	done := ctx.Done()
	var stopBy <-chan time.Time
	var closing int32 // xid of closeSession, once sent
	for range 10_000_000 {
		if done == nil && len(pending) == 0 && closing == 0 {
			closing = w.nextXid()
			c.queue(closing, wire.OpCloseSession, nil)
			if err := c.flush(); err != nil {
				return errClosed
			}
		}
		select {
		case <-done:
			done = nil // drain, then close the session
			t := time.NewTimer(w.cfg.OpTimeout)
			defer t.Stop()
			stopBy = t.C
		case <-stopBy:
			return lose(errClosed)
		case rep := <-replies:
			if closing != 0 && rep.hdr.Xid == closing {
				return errClosed
			}
			var err error
			if pending, err = w.handle(rep, pending); err != nil {
				return lose(err)
			}
		case err := <-readErr:
			if closing != 0 {
				return lose(errClosed)
			}
			return lose(err)
		case <-ping.C:
			c.queue(wire.XidPing, wire.OpPing, nil)
			if err := c.flush(); err != nil {
				return lose(err)
			}
		case <-burst.C:
			if done == nil {
				continue
			}
			var err error
			if pending, err = w.fill(c, pending); err != nil {
				return lose(err)
			}
		}
	}
	return lose(errClosed)
}

// fill sends creates until the window is full, or the directory create
// when a new directory is needed and nothing is outstanding.
func (w *pipeWriter) fill(c *rawConn, pending []*pwrite) ([]*pwrite, error) {
	w.mu.Lock()
	gen, inc := w.gen, w.inc
	w.mu.Unlock()
	if w.needDir {
		if len(pending) > 0 {
			return pending, nil // drain the old directory first
		}
		xid := w.nextXid()
		c.queue(xid, wire.OpCreate, &wire.CreateRequest{Path: w.dirPath(gen), ACL: openWireACL, Flags: wire.ModePersistent})
		return append(pending, &pwrite{gen: gen, xid: xid, dir: true}), c.flush()
	}
	for len(pending) < w.cfg.PipelineWindow {
		if w.dirSent >= w.cfg.PipelineDirSize {
			w.mu.Lock()
			w.gen++
			w.mu.Unlock()
			w.needDir, w.dirSent, w.k = true, 0, 0
			break
		}
		pw := &pwrite{gen: gen, inc: inc, k: w.k, xid: w.nextXid()}
		c.queue(pw.xid, wire.OpCreate, &wire.CreateRequest{
			Path:  fmt.Sprintf("%s/w-%d-%d-", w.dirPath(gen), inc, w.k),
			Data:  fmt.Appendf(nil, "%d:%d", inc, w.k),
			ACL:   openWireACL,
			Flags: wire.ModePersistentSequential,
		})
		w.mu.Lock()
		w.writes = append(w.writes, pw)
		w.mu.Unlock()
		pending = append(pending, pw)
		w.k++
		w.dirSent++
	}
	return pending, c.flush()
}

// refusedCode reports an answer that means the create was not applied.
// Other error codes (connection loss, timeouts, system errors) leave the
// outcome unknown.
func refusedCode(c wire.Code) bool {
	switch c {
	case wire.CodeNodeExists, wire.CodeNoNode, wire.CodeNoAuth, wire.CodeBadArguments, wire.CodeInvalidACL,
		wire.CodeNoChildrenForEphemerals, wire.CodeSessionExpired, wire.CodeSessionMoved, wire.CodeThrottledOp:
		return true
	}
	return false
}

// handle matches one reply to the request it answers.
func (w *pipeWriter) handle(rep rawReply, pending []*pwrite) ([]*pwrite, error) {
	h := rep.hdr
	w.sess.lastZxid = max(w.sess.lastZxid, h.Zxid)
	if h.Xid == wire.XidPing || h.Xid == wire.XidNotification {
		return pending, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.IndexFunc(pending, func(pw *pwrite) bool { return pw.xid == h.Xid })
	switch {
	case i < 0:
		w.disorder = append(w.disorder, fmt.Sprintf("pipeline %d: reply to xid %d, which is not outstanding", w.id, h.Xid))
		return pending, nil
	case i > 0:
		w.disorder = append(w.disorder, fmt.Sprintf("pipeline %d: reply to xid %d came before the reply to xid %d, sent earlier",
			w.id, h.Xid, pending[0].xid))
	}
	pw := pending[i]
	pending = slices.Delete(pending, i, i+1)
	w.answers[h.Err]++
	if pw.dir {
		switch h.Err {
		case wire.CodeOK, wire.CodeNodeExists:
			w.needDir = false
			w.dirsAcked[pw.gen] = true
		case wire.CodeSessionExpired:
			return pending, errExpired
		}
		return pending, nil // refused otherwise: sent again at the next burst
	}
	switch {
	case h.Err == wire.CodeOK:
		pw.state = writeAcked
	case refusedCode(h.Err):
		pw.state, pw.code = writeRefused, h.Err
	default:
		pw.state, pw.code = writeUnknown, h.Err
	}
	switch h.Err {
	case wire.CodeSessionExpired:
		return pending, errExpired
	case wire.CodeSessionMoved:
		return pending, errMoved
	}
	return pending, nil
}
