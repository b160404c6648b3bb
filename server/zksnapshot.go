package server

import (
	"io"
	"net"
	"strings"

	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
	"github.com/hutchzk/hutch/zkexport"
)

// AdminAuthorize is ZooKeeper 3.9's check of an admin command's
// AuthRequest(ALL, "/") (monitor.SnapshotSource): the Authorization value
// names a scheme and, for digest, user:password; the identities it gives
// need some permission in "/"'s ACL, or to be the super user.
func (s *Server) AdminAuthorize(authInfo, remoteAddr string) error {
	if authInfo == "" {
		return monitor.ErrAuthMissing
	}
	parts := strings.Split(authInfo, " ")
	if len(parts) > 2 {
		return monitor.ErrNotAuthenticated
	}
	var ids []wire.ID
	switch parts[0] {
	case "digest":
		if len(parts) == 2 {
			if id := tree.DigestID(parts[1]); id != "" {
				ids = append(ids, wire.ID{Scheme: "digest", ID: id})
				if s.cfg.SuperDigest != "" && id == s.cfg.SuperDigest {
					ids = append(ids, wire.ID{Scheme: "super"})
				}
			}
		}
	case "ip":
		if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
			ids = append(ids, wire.ID{Scheme: "ip", ID: host})
		}
	}
	if len(ids) == 0 {
		return monitor.ErrNotAuthenticated
	}
	allowed := false
	s.db.Read(func(v *zkdb.View) {
		acl, _, err := v.Tree.GetACL("/", superAuth)
		allowed = err == nil && tree.Allowed(acl, wire.PermAll, ids)
	})
	if !allowed {
		return monitor.ErrNotAuthorized
	}
	return nil
}

// WriteZooKeeperSnapshot writes the tree as ZooKeeper 3.9's snapshot
// command does (monitor.SnapshotSource), under the read lock.
func (s *Server) WriteZooKeeperSnapshot(w io.Writer) (lastZxid int64, err error) {
	s.db.Read(func(v *zkdb.View) {
		lastZxid = v.Tree.LastZxid()
		err = zkexport.WriteSnapshot(w, v.Tree, true)
	})
	return lastZxid, err
}
