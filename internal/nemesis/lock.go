package nemesis

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// lockWorkload is the fair lock of the seed articles with a fence: each
// client queues an ephemeral sequential node under dir and waits for its
// predecessor to go, and inside the critical section increments the
// integer in fence with a versioned setData. The lock is correct if no two
// critical sections overlap in this process and no fenced write is ever
// refused.
type lockWorkload struct {
	dir, fence string
	cfg        Config

	mu           sync.Mutex // guards the fields below
	holds        []hold     // critical sections, as this process saw them
	acquisitions int
	acked        int // increments known to have landed
	unknown      int // increments whose outcome stayed unknown
	conflicts    []string
	// excused are conflicts met in a hold whose session ended under it:
	// the lock passed on with the session, so the fence doing its job
	// there is no fault.
	excused []string
	errs    []string
}

// hold is one critical section: from acquire returning to release
// starting, so it lies inside the time the server saw the lock held.
type hold struct {
	client      int
	enter, exit time.Time
	// node is the lock node the client found first, and session the
	// session it held it in, to tell a double holder's story.
	node    string
	session int64
	// lost is set when the session ended during the hold (go-zookeeper
	// then opens another by itself): the server deleted the lock node
	// with the session, and the lock was no longer this client's, as a
	// ZooKeeper lock recipe treats an expired session. Whether the
	// expiry was wrong is the sessions check's to say.
	lost bool
}

// lockClient is one client of the lock. Its node names carry a prefix
// unique to the client, as Curator's protected mode does, so after a
// create whose answer was lost it finds its node instead of queueing
// twice; a client has one acquire at a time, so every node with its
// prefix is its own.
type lockClient struct {
	id     int
	s      *zkSession
	prefix string
	w      *lockWorkload
	// conflicts met in the current hold (conflict).
	conflicts []string
}

// maxLockRounds bounds every loop of one acquire, increment or release.
const maxLockRounds = 500

func (w *lockWorkload) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) < 20 {
		w.errs = append(w.errs, fmt.Sprintf(format, args...))
	}
}

// conflict notes a fence conflict met in the current hold; run counts it
// once it knows whether the hold's session lived through it.
func (lc *lockClient) conflict(format string, args ...any) {
	lc.conflicts = append(lc.conflicts, fmt.Sprintf(format, args...))
}

// run takes the lock again and again until ctx ends.
func (w *lockWorkload) run(ctx context.Context, id int, s *zkSession) {
	lc := &lockClient{id: id, s: s, prefix: fmt.Sprintf("c%d-%s-", id, rand.Text()[:8]), w: w}
	for round := 0; round < 1_000_000 && ctx.Err() == nil; round++ {
		node, err := lc.acquire(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.fail("client %d: acquire: %v", id, err)
			}
			continue
		}
		h := hold{client: id, enter: time.Now(), node: node, session: s.conn.SessionID()}
		lc.increment(ctx)
		h.exit = time.Now()
		h.lost = s.conn.SessionID() != h.session
		w.mu.Lock()
		if h.lost {
			w.excused = append(w.excused, lc.conflicts...)
		} else {
			w.conflicts = append(w.conflicts, lc.conflicts...)
		}
		lc.conflicts = nil
		w.holds = append(w.holds, h)
		w.acquisitions++
		w.mu.Unlock()
		if err := lc.release(ctx); err != nil && ctx.Err() == nil {
			// Its node stays, and so does the lock, until this client
			// finds it on its next acquire: nobody else can take it.
			w.fail("client %d: release: %v", id, err)
		}
	}
}

// seq is a lock node's sequence number, its ten-digit suffix.
func seq(name string) string { return name[max(0, len(name)-10):] }

// children lists dir after a sync, retrying over connection losses.
func (lc *lockClient) children(ctx context.Context) ([]string, error) {
	var kids []string
	var err error
	for range maxLockRounds {
		kids, err = CallValue(ctx, lc.w.cfg.OpTimeout, func() ([]string, error) {
			if _, err := lc.s.conn.Sync(lc.w.dir); err != nil {
				return nil, err
			}
			kids, _, err := lc.s.conn.Children(lc.w.dir)
			return kids, err
		})
		if err == nil || refused(err) || ctx.Err() != nil {
			break
		}
	}
	return kids, err
}

// acquire returns once this client's node is the first in the queue,
// with that node's name.
func (lc *lockClient) acquire(ctx context.Context) (string, error) {
	deadline := time.Now().Add(4 * lc.w.cfg.OpTimeout)
	for round := 0; round < maxLockRounds && time.Now().Before(deadline); round++ {
		kids, err := lc.children(ctx)
		if err != nil {
			return "", fmt.Errorf("list %s: %w", lc.w.dir, err)
		}
		slices.SortFunc(kids, func(a, b string) int { return strings.Compare(seq(a), seq(b)) })
		var mine []int
		for i, k := range kids {
			if strings.HasPrefix(k, lc.prefix) {
				mine = append(mine, i)
			}
		}
		switch {
		case len(mine) == 0:
			err := Call(ctx, lc.w.cfg.OpTimeout, func() error {
				_, err := lc.s.conn.Create(lc.w.dir+"/"+lc.prefix+"lock-", nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
				return err
			})
			if err != nil && refused(err) {
				return "", fmt.Errorf("create: %w", err)
			}
			continue // look again: the node may or may not be there
		case len(mine) > 1:
			// A create retried after a lost answer landed twice; keep
			// the first, which holds the earlier place.
			for _, i := range mine[1:] {
				_ = Call(ctx, lc.w.cfg.OpTimeout, func() error { return lc.s.conn.Delete(lc.w.dir+"/"+kids[i], -1) })
			}
			continue
		case mine[0] == 0:
			return kids[0], nil
		}
		pred := lc.w.dir + "/" + kids[mine[0]-1]
		var there bool
		var ch <-chan zk.Event
		err = Call(ctx, lc.w.cfg.OpTimeout, func() error {
			var err error
			there, _, ch, err = lc.s.conn.ExistsW(pred)
			return err
		})
		if err != nil || !there {
			continue
		}
		// Wait for the predecessor to go. A watch lost with a session
		// never fires, so look again now and then.
		t := time.NewTimer(2 * lc.w.cfg.SessionTimeout)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	return "", fmt.Errorf("not first within %d rounds or %v", maxLockRounds, 4*lc.w.cfg.OpTimeout)
}

// readFence reads the fence after a sync.
func (lc *lockClient) readFence(ctx context.Context) (value int, version int32, err error) {
	var f fence
	for range maxLockRounds {
		f, err = CallValue(ctx, lc.w.cfg.OpTimeout, func() (fence, error) { return syncReadFence(lc.s.conn, lc.w.fence) })
		if err == nil || refused(err) || ctx.Err() != nil {
			break
		}
	}
	return f.value, f.version, err
}

// fence is the fence's value and the version it was read at.
type fence struct {
	value   int
	version int32
}

// syncReadFence reads the fence at p after a sync.
func syncReadFence(conn *zk.Conn, p string) (fence, error) {
	if _, err := conn.Sync(p); err != nil {
		return fence{}, err
	}
	data, st, err := conn.Get(p)
	if err != nil {
		return fence{}, err
	}
	value, err := strconv.Atoi(string(data))
	return fence{value, st.Version}, err
}

// increment adds one to the fence under the lock. After a lost answer it
// reads the fence back: in ZooKeeper's FIFO client order the lost write
// either landed before that read or never will, so the read settles it,
// and nobody else writes while the lock is held.
func (lc *lockClient) increment(ctx context.Context) {
	w := lc.w
	var lost *[2]int // value and version seen before a write whose answer was lost
	deadline := time.Now().Add(2 * w.cfg.OpTimeout)
	for round := 0; round < maxLockRounds && time.Now().Before(deadline) && ctx.Err() == nil; round++ {
		value, version, err := lc.readFence(ctx)
		if err != nil {
			break
		}
		if lost != nil {
			switch {
			case int32(lost[1]) == version && lost[0] == value:
				lost = nil // it did not land: write again
			case int32(lost[1])+1 == version && lost[0]+1 == value:
				w.mu.Lock()
				w.acked++
				w.mu.Unlock()
				return
			default:
				lc.conflict("client %d: fence moved under the lock: wrote %d at version %d (answer lost), then read %d at version %d",
					lc.id, lost[0]+1, lost[1], value, version)
				w.mu.Lock()
				w.unknown++ // whether that write landed is still unknown
				w.mu.Unlock()
				return
			}
		}
		err = Call(ctx, w.cfg.OpTimeout, func() error {
			_, err := lc.s.conn.Set(w.fence, []byte(strconv.Itoa(value+1)), version)
			return err
		})
		switch {
		case err == nil:
			w.mu.Lock()
			w.acked++
			w.mu.Unlock()
			return
		case errors.Is(err, zk.ErrBadVersion):
			lc.conflict("client %d: fenced write refused: %d at version %d (two holders, or a stale write landed late)",
				lc.id, value+1, version)
			return
		case refused(err):
			w.fail("client %d: set fence: %v", lc.id, err)
			return
		}
		lost = &[2]int{value, int(version)}
	}
	if lost != nil {
		w.mu.Lock()
		w.unknown++
		w.mu.Unlock()
	}
}

// release deletes every node carrying this client's prefix: the held one
// and any a retried create left behind.
func (lc *lockClient) release(ctx context.Context) error {
	var err error
	for range maxLockRounds {
		var kids []string
		if kids, err = lc.children(ctx); err != nil {
			return err
		}
		err = nil
		for _, k := range kids {
			if !strings.HasPrefix(k, lc.prefix) {
				continue
			}
			derr := Call(ctx, lc.w.cfg.OpTimeout, func() error { return lc.s.conn.Delete(lc.w.dir+"/"+k, -1) })
			if derr != nil && !errors.Is(derr, zk.ErrNoNode) {
				err = derr
			}
		}
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// overlaps returns every pair of critical sections that overlapped,
// leaving out those whose session ended during them.
func overlaps(holds []hold) []string {
	sorted := slices.DeleteFunc(slices.Clone(holds), func(h hold) bool { return h.lost })
	slices.SortFunc(sorted, func(a, b hold) int { return a.enter.Compare(b.enter) })
	var out []string
	for i, a := range sorted {
		for _, b := range sorted[i+1:] {
			if !b.enter.Before(a.exit) {
				break // sorted by entry: no later one overlaps a either
			}
			end := a.exit
			if b.exit.Before(end) {
				end = b.exit
			}
			out = append(out, fmt.Sprintf("clients %d and %d both held the lock for %v from %s (%s in session 0x%x, %s in 0x%x)",
				a.client, b.client, end.Sub(b.enter).Round(time.Millisecond), b.enter.Format(clock),
				a.node, a.session, b.node, b.session))
		}
	}
	return out
}
