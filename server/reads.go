package server

import (
	"github.com/hutchzk/hutch/trace"
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// read answers a read-only request. The read, any watch it sets and the
// queued reply happen inside one DB read, so a write cannot slip between
// them: its notification is queued after this reply.
func (c *conn) read(h wire.RequestHeader) bool {
	s := c.srv
	switch h.Type {
	case wire.OpExists, wire.OpGetData, wire.OpGetChildren, wire.OpGetChildren2:
		var r wire.PathWatchRequest
		if !c.decode(h, &r) {
			return c.badBody(h)
		}
		s.db.Read(func(v *zkdb.View) {
			body, err := c.readPath(v, h.Type, &r)
			c.reply(h.Xid, v.Tree.LastZxid(), err, body)
		})
	case wire.OpGetACL, wire.OpSync, wire.OpGetEphemerals, wire.OpGetAllChildrenNumber:
		var r wire.PathRequest
		if !c.decode(h, &r) {
			return c.badBody(h)
		}
		if h.Type == wire.OpSync {
			if err := s.catchUp(s.ctx); err != nil {
				s.log.Warn("closing connection: sync could not reach the leader", "session", c.sessionID.Load(), "err", err)
				return false
			}
		}
		s.db.Read(func(v *zkdb.View) {
			var body encodable
			var err error
			switch h.Type {
			case wire.OpGetACL:
				var resp wire.GetACLResponse
				resp.ACL, resp.Stat, err = v.Tree.GetACL(r.Path, c.identities())
				body = &resp
			case wire.OpSync:
				// Every earlier write of this session has applied (waitWrites);
				// a Raft follower has also caught up with the leader, above.
				body = &wire.PathResponse{Path: r.Path}
			case wire.OpGetEphemerals:
				var resp wire.GetEphemeralsResponse
				resp.Paths, err = v.Tree.GetEphemerals(c.sessionID.Load(), r.Path)
				body = &resp
			case wire.OpGetAllChildrenNumber:
				var resp wire.GetAllChildrenNumberResponse
				resp.Total, err = v.Tree.AllChildrenNumber(r.Path, c.identities())
				body = &resp
			}
			c.reply(h.Xid, v.Tree.LastZxid(), err, body)
		})
	case wire.OpCheckWatches, wire.OpRemoveWatches:
		var r wire.RemoveWatchesRequest
		if !c.decode(h, &r) {
			return c.badBody(h)
		}
		s.db.Read(func(v *zkdb.View) {
			var err error
			if h.Type == wire.OpCheckWatches {
				if !v.HasWatch(r.Path, c.id, r.Type) {
					err = errNoWatcher
				}
			} else if !v.RemoveWatch(r.Path, c.id, r.Type) {
				err = errNoWatcher
			} else {
				c.traceWatchesGone(trace.ReasonRemoveWatches, []trace.Op{{Op: removedKind(r.Type), Path: r.Path}}, v.Tree.LastZxid())
			}
			c.reply(h.Xid, v.Tree.LastZxid(), err, nil)
		})
	case wire.OpAddWatch:
		var r wire.AddWatchRequest
		if !c.decode(h, &r) {
			return c.badBody(h)
		}
		s.db.Read(func(v *zkdb.View) {
			recursive := r.Mode == wire.AddWatchModePersistentRecursive
			v.AddPersistentWatch(r.Path, c.id, recursive)
			if recursive {
				c.traceWatchSet("persistentRecursive", r.Path, v.Tree.LastZxid())
			} else {
				c.traceWatchSet("persistent", r.Path, v.Tree.LastZxid())
			}
			// ZooKeeper answers addWatch with an ErrorResponse body of 0.
			c.reply(h.Xid, v.Tree.LastZxid(), nil, &wire.ErrorResult{Err: wire.CodeOK})
		})
	case wire.OpWhoAmI:
		resp := wire.WhoAmIResponse{Infos: make([]wire.ClientInfo, 0, len(c.identities()))}
		for _, id := range c.identities() {
			resp.Infos = append(resp.Infos, wire.ClientInfo{AuthScheme: id.Scheme, User: tree.UserName(id)})
		}
		c.reply(h.Xid, c.lastZxid(), nil, &resp)
	case wire.OpMultiRead:
		return c.multiRead(h)
	}
	return true
}

// readPath serves exists, getData, getChildren and getChildren2 inside a
// DB read.
func (c *conn) readPath(v *zkdb.View, op wire.OpCode, r *wire.PathWatchRequest) (encodable, error) {
	switch op {
	case wire.OpExists:
		stat, err := v.Tree.Exists(r.Path)
		// exists leaves a watch whether or not the node is there.
		if r.Watch && (err == nil || err == tree.ErrNoNode) {
			v.AddDataWatch(r.Path, c.id)
			if err == nil {
				c.traceWatchSet("data", r.Path, v.Tree.LastZxid())
			} else {
				c.traceWatchSet("exist", r.Path, v.Tree.LastZxid())
			}
		}
		if err != nil {
			return nil, err
		}
		return &wire.StatResponse{Stat: stat}, nil
	case wire.OpGetData:
		data, stat, err := v.Tree.GetData(r.Path, c.identities())
		if err != nil {
			return nil, err
		}
		if r.Watch {
			v.AddDataWatch(r.Path, c.id)
			c.traceWatchSet("data", r.Path, v.Tree.LastZxid())
		}
		return &wire.GetDataResponse{Data: data, Stat: stat}, nil
	default:
		children, stat, err := v.Tree.GetChildren(r.Path, c.identities())
		if err != nil {
			return nil, err
		}
		if r.Watch {
			v.AddChildWatch(r.Path, c.id)
			c.traceWatchSet("child", r.Path, v.Tree.LastZxid())
		}
		if op == wire.OpGetChildren {
			return &wire.GetChildrenResponse{Children: children}, nil
		}
		return &wire.GetChildren2Response{Children: children, Stat: stat}, nil
	}
}

// multiRead answers each getData/getChildren op independently: one failing
// op does not fail the others.
func (c *conn) multiRead(h wire.RequestHeader) bool {
	var ops []wire.MultiHeader
	var reqs []wire.PathWatchRequest
	for {
		var mh wire.MultiHeader
		if !c.decode(h, &mh) {
			return c.badBody(h)
		}
		if mh.Done {
			break
		}
		if mh.Type != wire.OpGetData && mh.Type != wire.OpGetChildren {
			c.srv.log.Warn("closing connection: invalid op in multiRead", "op", int32(mh.Type), "session", c.sessionID.Load(), "ip", c.ip)
			return false
		}
		var r wire.PathWatchRequest
		if !c.decode(h, &r) {
			return c.badBody(h)
		}
		ops = append(ops, mh)
		reqs = append(reqs, r)
	}
	c.srv.db.Read(func(v *zkdb.View) {
		resp := &multiResponse{results: make([]tree.OpResult, len(ops))}
		for i := range ops {
			body, err := c.readPath(v, ops[i].Type, &reqs[i])
			resp.results[i] = tree.OpResult{Op: ops[i].Type, Err: err, Resp: body}
		}
		c.reply(h.Xid, v.Tree.LastZxid(), nil, resp)
	})
	return true
}

// setWatches re-arms a reconnecting client's watches and fires, before the
// reply, the events it missed since relativeZxid.
func (c *conn) setWatches(h wire.RequestHeader) bool {
	var r wire.SetWatches2Request
	if h.Type == wire.OpSetWatches {
		var old wire.SetWatchesRequest
		if !c.decode(h, &old) {
			return c.badBody(h)
		}
		r = wire.SetWatches2Request{RelativeZxid: old.RelativeZxid, DataWatches: old.DataWatches,
			ExistWatches: old.ExistWatches, ChildWatches: old.ChildWatches}
	} else if !c.decode(h, &r) {
		return c.badBody(h)
	}
	c.waitWrites()
	c.srv.db.Read(func(v *zkdb.View) {
		var fired map[string]bool // paths whose missed events were delivered instead
		v.SetWatches(&r, c.id, func(ev wire.WatcherEvent) {
			c.notify(&ev)
			if fired == nil {
				fired = map[string]bool{}
			}
			fired[ev.Path] = true
		})
		if c.srv.trace.Active() {
			c.traceRearmed(&r, fired, v.Tree.LastZxid())
		}
		c.reply(h.Xid, v.Tree.LastZxid(), nil, nil)
	})
	return true
}

// traceRearmed publishes the watches a setWatches armed: those whose
// missed events it did not deliver instead.
func (c *conn) traceRearmed(r *wire.SetWatches2Request, fired map[string]bool, zxid int64) {
	for _, list := range []struct {
		kind  string
		paths []string
	}{{"data", r.DataWatches}, {"exist", r.ExistWatches}, {"child", r.ChildWatches},
		{"persistent", r.PersistentWatches}, {"persistentRecursive", r.PersistentRecursiveWatches}} {
		for _, p := range list.paths {
			if !fired[p] {
				c.traceWatchSet(list.kind, p, zxid)
			}
		}
	}
}

// removedKind names the watches a removeWatches of watcherType removed.
func removedKind(watcherType int32) string {
	switch watcherType {
	case wire.WatcherTypeChildren:
		return "child"
	case wire.WatcherTypeData:
		return "data"
	}
	return "any"
}
