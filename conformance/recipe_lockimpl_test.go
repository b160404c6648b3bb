package conformance

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The lock recipes below are written the way applications write them on a
// bare ZooKeeper client. Each acquire loop is bounded by recipeMaxAttempts
// and by its context; each wait on a watch goes through recipeStats.await
// so that a check can count the events that wake waiters.

// recipeMaxAttempts bounds every retry loop of a recipe: far more attempts
// than a correct run needs, so a livelock fails instead of hanging.
const recipeMaxAttempts = 10000

var recipeACL = zk.WorldACL(zk.PermAll)

// recipeLocker is one participant's handle on a lock.
type recipeLocker interface {
	// acquire blocks until the lock is held and returns its release.
	acquire(ctx context.Context) (release func() error, err error)
}

// recipeEnsurePath creates p and its missing ancestors as persistent nodes.
func recipeEnsurePath(conn *zk.Conn, p string) error {
	var cur string
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, zk.FlagPersistent, recipeACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// recipeNodeLock is the simplest lock: whoever creates the ephemeral
// node holds it; the others wait for its deletion on an exists watch and
// then race to create it again — every waiter is woken by every release
// (the herd effect).
type recipeNodeLock struct {
	conn *zk.Conn
	path string
	st   *recipeStats
}

func (l *recipeNodeLock) acquire(ctx context.Context) (func() error, error) {
	for range recipeMaxAttempts {
		_, err := l.conn.Create(l.path, nil, zk.FlagEphemeral, recipeACL)
		if err == nil {
			return func() error { return l.conn.Delete(l.path, -1) }, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return nil, fmt.Errorf("create %s: %w", l.path, err)
		}
		ok, _, ch, err := l.conn.ExistsW(l.path)
		if err != nil {
			return nil, fmt.Errorf("exists %s: %w", l.path, err)
		}
		if !ok {
			continue // released between create and exists: race again
		}
		ev, err := l.st.await(ctx, ch)
		if err != nil {
			return nil, err
		}
		if ev.Type != zk.EventNodeDeleted {
			return nil, fmt.Errorf("exists watch on %s fired %v, want %v", l.path, ev.Type, zk.EventNodeDeleted)
		}
	}
	return nil, fmt.Errorf("lock %s: no success in %d attempts", l.path, recipeMaxAttempts)
}

// recipeSortedChildren lists dir's children in sequence order. All lock
// nodes share one prefix, so the ten-digit suffix orders them as strings.
func recipeSortedChildren(conn *zk.Conn, dir string, watch bool) ([]string, <-chan zk.Event, error) {
	var (
		kids []string
		ch   <-chan zk.Event
		err  error
	)
	if watch {
		kids, _, ch, err = conn.ChildrenW(dir)
	} else {
		kids, _, err = conn.Children(dir)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("children %s: %w", dir, err)
	}
	slices.Sort(kids)
	return kids, ch, nil
}

// recipeRelease deletes a lock node; it must still be there.
func recipeRelease(conn *zk.Conn, node string) func() error {
	return func() error {
		if err := conn.Delete(node, -1); err != nil {
			return fmt.Errorf("delete %s: %w", node, err)
		}
		return nil
	}
}

// recipeQueueLock is the lock of seed 002: each participant queues an ephemeral
// sequential node and, until its node is the smallest, waits on a watch on
// the parent's children list — which fires for every waiter on every
// release and every new arrival.
type recipeQueueLock struct {
	conn *zk.Conn
	dir  string
	st   *recipeStats
}

func (l *recipeQueueLock) acquire(ctx context.Context) (func() error, error) {
	node, err := l.conn.Create(l.dir+"/lock-", nil, zk.FlagEphemeralSequential, recipeACL)
	if err != nil {
		return nil, fmt.Errorf("create in %s: %w", l.dir, err)
	}
	name := path.Base(node)
	for range recipeMaxAttempts {
		kids, ch, err := recipeSortedChildren(l.conn, l.dir, true)
		if err != nil {
			return nil, err
		}
		if len(kids) == 0 || !slices.Contains(kids, name) {
			return nil, fmt.Errorf("own node %s is gone", node)
		}
		if kids[0] == name {
			return recipeRelease(l.conn, node), nil
		}
		ev, err := l.st.await(ctx, ch)
		if err != nil {
			return nil, err
		}
		if ev.Type != zk.EventNodeChildrenChanged {
			return nil, fmt.Errorf("children watch on %s fired %v", l.dir, ev.Type)
		}
	}
	return nil, fmt.Errorf("lock %s: not first in %d attempts", l.dir, recipeMaxAttempts)
}

// recipeSeqLock is the sequential-node lock of seeds 003 and 004. Fair:
// each waiter watches only its predecessor, so a release wakes exactly one
// waiter and the lock goes in arrival order. Non-fair (seed 004's other
// branch): a waiter that is not first withdraws its node, watches the
// smallest node and queues again once that goes — every waiter races for
// the next turn, and every release wakes them all.
type recipeSeqLock struct {
	conn    *zk.Conn
	dir     string
	st      *recipeStats
	nonFair bool

	lastNode string // the node the last successful acquire holds
}

func (l *recipeSeqLock) acquire(ctx context.Context) (func() error, error) {
	var node string // our queued node, "" when withdrawn
	for range recipeMaxAttempts {
		if node == "" {
			var err error
			node, err = l.conn.Create(l.dir+"/lock-", nil, zk.FlagEphemeralSequential, recipeACL)
			if err != nil {
				return nil, fmt.Errorf("create in %s: %w", l.dir, err)
			}
		}
		name := path.Base(node)
		kids, _, err := recipeSortedChildren(l.conn, l.dir, false)
		if err != nil {
			return nil, err
		}
		i := slices.Index(kids, name)
		if i < 0 {
			// Seed 004's "session ended between create and list" case.
			return nil, fmt.Errorf("own node %s is gone", node)
		}
		if i == 0 {
			l.lastNode = node
			return recipeRelease(l.conn, node), nil
		}
		watched := l.dir + "/" + kids[i-1]
		if l.nonFair {
			watched = l.dir + "/" + kids[0]
		}
		ok, _, ch, err := l.conn.ExistsW(watched)
		if err != nil {
			return nil, fmt.Errorf("exists %s: %w", watched, err)
		}
		if !ok {
			continue // gone meanwhile: look again
		}
		if l.nonFair {
			if err := l.conn.Delete(node, -1); err != nil {
				return nil, fmt.Errorf("withdraw %s: %w", node, err)
			}
			node = ""
		}
		ev, err := l.st.await(ctx, ch)
		if err != nil {
			return nil, err
		}
		if ev.Type != zk.EventNodeDeleted || ev.Path != watched {
			return nil, fmt.Errorf("exists watch on %s fired %v on %s, want %v", watched, ev.Type, ev.Path, zk.EventNodeDeleted)
		}
	}
	return nil, fmt.Errorf("lock %s: not first in %d attempts", l.dir, recipeMaxAttempts)
}

// recipeReentrantLock is seed 003's reentrant lock kept in one ephemeral znode
// whose data names the owner and its hold count ("owner count"). The owner
// re-enters by raising the count with a versioned set; the others wait on a
// data watch until the node is deleted, which happens when the count
// returns to zero.
type recipeReentrantLock struct {
	conn  *zk.Conn
	path  string
	owner string
	st    *recipeStats
}

func recipeEncodeHold(owner string, count int) []byte {
	return []byte(owner + " " + strconv.Itoa(count))
}

func recipeDecodeHold(data []byte) (owner string, count int, err error) {
	owner, n, ok := strings.Cut(string(data), " ")
	if !ok {
		return "", 0, fmt.Errorf("lock data %q is not \"owner count\"", data)
	}
	count, err = strconv.Atoi(n)
	return owner, count, err
}

// acquireReentrant takes the lock or re-enters it; reentered reports that
// the caller already held it, parked that it had to wait on a watch.
func (l *recipeReentrantLock) acquireReentrant(ctx context.Context) (reentered, parked bool, err error) {
	for range recipeMaxAttempts {
		_, err := l.conn.Create(l.path, recipeEncodeHold(l.owner, 1), zk.FlagEphemeral, recipeACL)
		if err == nil {
			return false, parked, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return false, parked, fmt.Errorf("create %s: %w", l.path, err)
		}
		data, stat, ch, err := l.conn.GetW(l.path)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return false, parked, fmt.Errorf("get %s: %w", l.path, err)
		}
		owner, count, err := recipeDecodeHold(data)
		if err != nil {
			return false, parked, err
		}
		if owner == l.owner {
			_, err := l.conn.Set(l.path, recipeEncodeHold(l.owner, count+1), stat.Version)
			if err != nil {
				// Only the owner writes its node: any failure is a bug.
				return false, parked, fmt.Errorf("re-enter %s at version %d: %w", l.path, stat.Version, err)
			}
			return true, parked, nil
		}
		parked = true
		if _, err := l.st.await(ctx, ch); err != nil {
			return false, parked, err
		}
	}
	return false, parked, fmt.Errorf("lock %s: no success in %d attempts", l.path, recipeMaxAttempts)
}

// releaseReentrant lowers the hold count, deleting the node at zero, and
// returns the count left.
func (l *recipeReentrantLock) releaseReentrant() (int, error) {
	data, stat, err := l.conn.Get(l.path)
	if err != nil {
		return 0, fmt.Errorf("get %s: %w", l.path, err)
	}
	owner, count, err := recipeDecodeHold(data)
	if err != nil {
		return 0, err
	}
	if owner != l.owner || count < 1 {
		return 0, fmt.Errorf("release by %s: lock data is %q", l.owner, data)
	}
	if count == 1 {
		l.st.noteRelease()
		if err := l.conn.Delete(l.path, stat.Version); err != nil {
			return 0, fmt.Errorf("delete %s at version %d: %w", l.path, stat.Version, err)
		}
		return 0, nil
	}
	if _, err := l.conn.Set(l.path, recipeEncodeHold(l.owner, count-1), stat.Version); err != nil {
		return 0, fmt.Errorf("set %s at version %d: %w", l.path, stat.Version, err)
	}
	return count - 1, nil
}
