package zkclient

import (
	"strconv"

	"github.com/hutchzk/hutch/wire"
)

// MaxTTL is the largest TTL a TTL node may have, in milliseconds
// (EphemeralType.TTL.maxValue).
const MaxTTL = 1<<40 - 1

// TTLError is a TTL the Java client refuses before sending; its message is
// EphemeralType's.
type TTLError struct{ TTL int64 }

func (e *TTLError) Error() string {
	return "ttl must be positive and cannot be larger than: " + strconv.FormatInt(MaxTTL, 10)
}

// ValidateTTL checks ttl as the Java client does for a TTL create mode.
func ValidateTTL(ttl int64) error {
	if ttl <= 0 || ttl > MaxTTL {
		return &TTLError{TTL: ttl}
	}
	return nil
}

func sequential(flags int32) bool {
	return flags == wire.ModePersistentSequential || flags == wire.ModeEphemeralSequential ||
		flags == wire.ModePersistentSequentialWithTTL
}

func isTTL(flags int32) bool {
	return flags == wire.ModePersistentWithTTL || flags == wire.ModePersistentSequentialWithTTL
}

// Create creates a node with the create flags (wire.ModePersistent ...)
// and returns its path, as the Java client's create: opcode create, or
// createContainer for a container, or createTTL (ttl in milliseconds) for
// the TTL modes. An empty ACL fails with INVALIDACL before anything is sent.
func (c *Client) Create(path string, data []byte, acl []wire.ACL, flags int32, ttl int64) (string, error) {
	if err := ValidatePath(path, sequential(flags)); err != nil {
		return "", err
	}
	if len(acl) == 0 {
		return "", &Error{Code: wire.CodeInvalidACL}
	}
	if isTTL(flags) {
		if err := ValidateTTL(ttl); err != nil {
			return "", err
		}
		var resp wire.Create2Response
		_, err := c.call(wire.OpCreateTTL, path, &wire.CreateTTLRequest{Path: path, Data: data, ACL: acl, Flags: flags, TTL: ttl}, &resp, nil)
		return resp.Path, err
	}
	op := wire.OpCreate
	if flags == wire.ModeContainer {
		op = wire.OpCreateContainer
	}
	var resp wire.CreateResponse
	_, err := c.call(op, path, &wire.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags}, &resp, nil)
	return resp.Path, err
}

// Delete deletes path at version (-1 for any).
func (c *Client) Delete(path string, version int32) error {
	if err := ValidatePath(path, false); err != nil {
		return err
	}
	_, err := c.call(wire.OpDelete, path, &wire.DeleteRequest{Path: path, Version: version}, nil, nil)
	return err
}

// watchOn returns the bookkeeping that records a watch of kind on path
// when the reply's code is one of codes.
func (c *Client) watchOn(watch bool, path string, kinds map[wire.Code]watchKind) func(wire.Code) {
	if !watch {
		return nil
	}
	return func(code wire.Code) {
		if k, ok := kinds[code]; ok {
			c.watches.add(k, path)
		}
	}
}

// Exists returns path's Stat; a missing node is a NONODE error. With watch
// it leaves a watch that fires when the node is created, changed or
// deleted.
func (c *Client) Exists(path string, watch bool) (wire.Stat, error) {
	if err := ValidatePath(path, false); err != nil {
		return wire.Stat{}, err
	}
	var resp wire.StatResponse
	_, err := c.call(wire.OpExists, path, &wire.PathWatchRequest{Path: path, Watch: watch}, &resp,
		c.watchOn(watch, path, map[wire.Code]watchKind{wire.CodeOK: watchData, wire.CodeNoNode: watchExist}))
	return resp.Stat, err
}

// Get returns path's data and Stat, with watch leaving a data watch.
func (c *Client) Get(path string, watch bool) ([]byte, wire.Stat, error) {
	if err := ValidatePath(path, false); err != nil {
		return nil, wire.Stat{}, err
	}
	var resp wire.GetDataResponse
	_, err := c.call(wire.OpGetData, path, &wire.PathWatchRequest{Path: path, Watch: watch}, &resp,
		c.watchOn(watch, path, map[wire.Code]watchKind{wire.CodeOK: watchData}))
	return resp.Data, resp.Stat, err
}

// Set replaces path's data at version (-1 for any) and returns its Stat.
func (c *Client) Set(path string, data []byte, version int32) (wire.Stat, error) {
	if err := ValidatePath(path, false); err != nil {
		return wire.Stat{}, err
	}
	var resp wire.StatResponse
	_, err := c.call(wire.OpSetData, path, &wire.SetDataRequest{Path: path, Data: data, Version: version}, &resp, nil)
	return resp.Stat, err
}

// Children returns path's children in the server's order (getChildren),
// with watch leaving a child watch.
func (c *Client) Children(path string, watch bool) ([]string, error) {
	if err := ValidatePath(path, false); err != nil {
		return nil, err
	}
	var resp wire.GetChildrenResponse
	_, err := c.call(wire.OpGetChildren, path, &wire.PathWatchRequest{Path: path, Watch: watch}, &resp,
		c.watchOn(watch, path, map[wire.Code]watchKind{wire.CodeOK: watchChild}))
	return resp.Children, err
}

// ChildrenStat is Children that also returns path's Stat (getChildren2).
func (c *Client) ChildrenStat(path string, watch bool) ([]string, wire.Stat, error) {
	if err := ValidatePath(path, false); err != nil {
		return nil, wire.Stat{}, err
	}
	var resp wire.GetChildren2Response
	_, err := c.call(wire.OpGetChildren2, path, &wire.PathWatchRequest{Path: path, Watch: watch}, &resp,
		c.watchOn(watch, path, map[wire.Code]watchKind{wire.CodeOK: watchChild}))
	return resp.Children, resp.Stat, err
}

// GetACL returns path's ACL and Stat.
func (c *Client) GetACL(path string) ([]wire.ACL, wire.Stat, error) {
	if err := ValidatePath(path, false); err != nil {
		return nil, wire.Stat{}, err
	}
	var resp wire.GetACLResponse
	_, err := c.call(wire.OpGetACL, path, &wire.PathRequest{Path: path}, &resp, nil)
	return resp.ACL, resp.Stat, err
}

// SetACL replaces path's ACL at aclVersion (-1 for any). An empty ACL
// fails with INVALIDACL before anything is sent.
func (c *Client) SetACL(path string, acl []wire.ACL, aclVersion int32) (wire.Stat, error) {
	if err := ValidatePath(path, false); err != nil {
		return wire.Stat{}, err
	}
	if len(acl) == 0 {
		return wire.Stat{}, &Error{Code: wire.CodeInvalidACL}
	}
	var resp wire.StatResponse
	_, err := c.call(wire.OpSetACL, path, &wire.SetACLRequest{Path: path, ACL: acl, Version: aclVersion}, &resp, nil)
	return resp.Stat, err
}

// Sync asks the server to catch up with the leader before answering.
func (c *Client) Sync(path string) error {
	if err := ValidatePath(path, false); err != nil {
		return err
	}
	var resp wire.PathResponse
	_, err := c.call(wire.OpSync, path, &wire.PathRequest{Path: path}, &resp, nil)
	return err
}

// Ephemerals returns the paths of the session's ephemeral nodes that start
// with prefix ("/" for all), in the server's order. Its errors name no
// path, as the Java client's.
func (c *Client) Ephemerals(prefix string) ([]string, error) {
	if err := ValidatePath(prefix, false); err != nil {
		return nil, err
	}
	var resp wire.GetEphemeralsResponse
	_, err := c.call(wire.OpGetEphemerals, "", &wire.PathRequest{Path: prefix}, &resp, nil)
	return resp.Paths, err
}

// AllChildrenNumber returns the number of nodes below path.
func (c *Client) AllChildrenNumber(path string) (int32, error) {
	if err := ValidatePath(path, false); err != nil {
		return 0, err
	}
	var resp wire.GetAllChildrenNumberResponse
	_, err := c.call(wire.OpGetAllChildrenNumber, path, &wire.PathRequest{Path: path}, &resp, nil)
	return resp.Total, err
}

// AddWatch adds a persistent watch on path, which fires on every change
// of the node and its children list without being consumed; recursive
// makes it persistent-recursive, firing for the whole subtree.
func (c *Client) AddWatch(path string, recursive bool) error {
	if err := ValidatePath(path, false); err != nil {
		return err
	}
	mode, kind := wire.AddWatchModePersistent, watchPersistent
	if recursive {
		mode, kind = wire.AddWatchModePersistentRecursive, watchPersistentRecursive
	}
	_, err := c.call(wire.OpAddWatch, path, &wire.AddWatchRequest{Path: path, Mode: mode}, nil,
		c.watchOn(true, path, map[wire.Code]watchKind{wire.CodeOK: kind}))
	return err
}

// RemoveWatches removes the session's watches on path of watcherType
// (wire.WatcherTypeChildren, Data or Any; Any includes persistent ones).
func (c *Client) RemoveWatches(path string, watcherType int32) error {
	if err := ValidatePath(path, false); err != nil {
		return err
	}
	_, err := c.call(wire.OpRemoveWatches, path, &wire.RemoveWatchesRequest{Path: path, Type: watcherType}, nil,
		func(code wire.Code) {
			if code == wire.CodeOK {
				c.watches.removed(path, watcherType)
			}
		})
	return err
}

// WhoAmI returns the identities the server has for this connection.
func (c *Client) WhoAmI() ([]wire.ClientInfo, error) {
	var resp wire.WhoAmIResponse
	_, err := c.call(wire.OpWhoAmI, "", nil, &resp, nil)
	return resp.Infos, err
}

// AddAuth adds the identity scheme:auth to the session and waits for the
// server's answer; the client re-sends it on every reconnect. A refusal
// (AUTHFAILED) ends the session, as in the Java client.
func (c *Client) AddAuth(scheme string, auth []byte) error {
	p := wire.AuthPacket{Scheme: scheme, Auth: auth}
	for {
		cn, code := c.connected()
		if code != wire.CodeOK {
			return &Error{Code: code}
		}
		c.mu.Lock()
		if c.conn != cn {
			c.mu.Unlock()
			continue // reconnected in between: the next connection gets it
		}
		c.auths = append(c.auths, p)
		c.mu.Unlock()
		wait := make(chan wire.Code, 1)
		if !cn.sendAuth(&p, wait) {
			// Lost before sending: the reconnect sends it.
			return &Error{Code: wire.CodeConnectionLoss}
		}
		code = <-wait
		// The AuthFailed event of a refusal is queued before the answer:
		// let the Watcher see it first, as with a reply.
		c.events.waitHandled(c.events.mark())
		if code != wire.CodeOK {
			return &Error{Code: code}
		}
		return nil
	}
}

// Reconfig changes the ensemble's membership (ZooKeeperAdmin.reconfigure):
// joining and leaving for an incremental change, or members for a new
// configuration; nil sends Java's null. version is the configuration
// version the change expects, -1 for any. It returns the new
// configuration's text and the Stat of /zookeeper/config.
func (c *Client) Reconfig(joining, leaving, members []byte, version int64) ([]byte, wire.Stat, error) {
	var resp wire.GetDataResponse
	_, err := c.call(wire.OpReconfig, "", &wire.ReconfigRequest{JoiningServers: joining, LeavingServers: leaving,
		NewMembers: members, CurConfigID: version}, &resp, nil)
	return resp.Data, resp.Stat, err
}
