package monitor

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// ZooKeeper 3.9's admin snapshot and restore commands carry a ZooKeeper
// snapshot over HTTP. They need an identity with any permission on "/"
// (AuthRequest(ALL, "/"): "Authorization: digest user:password", or
// "ip"), and each answers at most once per interval.

// SnapshotSource is a Source that can write its state as a ZooKeeper
// snapshot: a server that serves the snapshot command.
type SnapshotSource interface {
	// AdminAuthorize checks an admin request's Authorization value
	// ("digest user:password", "ip") from remoteAddr against "/"'s ACL:
	// ErrAuthMissing, ErrNotAuthenticated or ErrNotAuthorized if it fails.
	AdminAuthorize(authInfo, remoteAddr string) error
	// WriteZooKeeperSnapshot writes the state as ZooKeeper 3.9 does for
	// the snapshot command (with the last zxid after the digest) and
	// returns its last zxid.
	WriteZooKeeperSnapshot(w io.Writer) (lastZxid int64, err error)
}

// The ways an admin request fails ZooKeeper's authorization, with the
// status and message ZooKeeper answers.
var (
	ErrAuthMissing      = errors.New("Auth info is missing for the command")
	ErrNotAuthenticated = errors.New("Not authenticated")
	ErrNotAuthorized    = errors.New("Not authorized")
)

func authStatus(err error) int {
	if errors.Is(err, ErrNotAuthorized) {
		return http.StatusForbidden
	}
	if errors.Is(err, ErrAuthMissing) || errors.Is(err, ErrNotAuthenticated) {
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// snapshotInterval is the snapshot command's rate limit: ZooKeeper 3.9
// reads zookeeper.admin.rateLimiterIntervalInMS (300000) as microseconds
// there, so it answers one snapshot per 0.3 s.
const snapshotInterval = 300 * time.Millisecond

// rateLimit lets one request through per interval.
type rateLimit struct {
	interval time.Duration
	mu       sync.Mutex // guards last
	last     time.Time
}

func (r *rateLimit) allow(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < r.interval {
		return false
	}
	r.last = now
	return true
}

// authorizeAdmin answers a snapshot or restore request that cannot go on,
// in ZooKeeper's order: unknown without a SnapshotSource, not serving,
// then the AuthRequest.
func (m *Monitor) authorizeAdmin(w http.ResponseWriter, r *http.Request, name string) (SnapshotSource, bool) {
	src, ok := m.src.(SnapshotSource)
	if !ok {
		adminReply(w, http.StatusOK, map[string]any{"command": name, "error": "Unknown command: " + name})
		return nil, false
	}
	if v := m.take(0); !v.Serving {
		adminReply(w, http.StatusOK, map[string]any{"command": name, "error": "This ZooKeeper instance is not currently serving requests"})
		return nil, false
	}
	if err := src.AdminAuthorize(r.Header.Get("Authorization"), r.RemoteAddr); err != nil {
		adminReply(w, authStatus(err), map[string]any{"command": name, "error": err.Error()})
		return nil, false
	}
	return src, true
}

// snapshotHandler serves GET /commands/snapshot?streaming=true|false.
func (m *Monitor) snapshotHandler(limit *rateLimit) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		const name = "snapshot"
		src, ok := m.authorizeAdmin(w, r, name)
		if !ok {
			return
		}
		if !limit.allow(time.Now()) {
			adminReply(w, http.StatusTooManyRequests, map[string]any{"command": name, "error": nil})
			return
		}
		streaming := true
		if s := r.URL.Query().Get("streaming"); s != "" {
			streaming, _ = strconv.ParseBool(s) // Boolean.parseBoolean: anything but "true" is false
		}
		// The snapshot goes to a file first, as ZooKeeper's does, so the
		// state is read at once and a slow client holds up no write.
		f, err := os.CreateTemp("", "hutch-snapshot-")
		if err != nil {
			adminReply(w, http.StatusInternalServerError, map[string]any{"command": name, "error": err.Error()})
			return
		}
		defer os.Remove(f.Name())
		defer f.Close()
		zxid, err := src.WriteZooKeeperSnapshot(f)
		var size int64
		if err == nil {
			size, err = f.Seek(0, io.SeekCurrent)
		}
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
		if err != nil {
			adminReply(w, http.StatusInternalServerError, map[string]any{"command": name, "error": err.Error()})
			return
		}
		w.Header().Set("last_zxid", fmt.Sprintf("0x%x", zxid))
		w.Header().Set("snapshot_size", strconv.FormatInt(size, 10))
		if !streaming {
			adminReply(w, http.StatusOK, map[string]any{"command": name, "error": nil})
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
		_, _ = io.Copy(w, f)
	}
}

// restoreHandler serves POST /commands/restore: authorized as ZooKeeper
// authorizes it, then refused as ZooKeeper refuses it with
// zookeeper.admin.restore.enabled=false. Replacing a replicated state
// under live clients is not something hutch does through the admin port;
// hutch import builds a data directory from a ZooKeeper snapshot instead.
func (m *Monitor) restoreHandler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		const name = "restore"
		if _, ok := m.authorizeAdmin(w, r, name); !ok {
			return
		}
		adminReply(w, http.StatusServiceUnavailable, map[string]any{"command": name,
			"error": "restore is disabled in hutch: build a data directory from the snapshot with hutch import instead"})
	}
}
