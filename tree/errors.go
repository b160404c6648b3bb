package tree

import (
	"errors"

	"github.com/hutchzk/hutch/wire"
)

// Error is a ZooKeeper error code as a Go error. The tree only ever returns the
// sentinels below, so callers compare with == or errors.Is.
type Error struct {
	Code wire.Code
	msg  string
}

func (e *Error) Error() string { return e.msg }

func newError(c wire.Code, msg string) *Error { return &Error{Code: c, msg: "tree: " + msg} }

// Sentinel errors, one per ZooKeeper code the tree can produce, and one the
// server handles itself.
var (
	ErrSystemError             error = newError(wire.CodeSystemError, "system error")
	ErrRuntimeInconsistency    error = newError(wire.CodeRuntimeInconsistency, "runtime inconsistency")
	ErrMarshallingError        error = newError(wire.CodeMarshallingError, "marshalling error")
	ErrUnimplemented           error = newError(wire.CodeUnimplemented, "unimplemented")
	ErrBadArguments            error = newError(wire.CodeBadArguments, "bad arguments")
	ErrNoNode                  error = newError(wire.CodeNoNode, "no node")
	ErrNoAuth                  error = newError(wire.CodeNoAuth, "not authorized")
	ErrBadVersion              error = newError(wire.CodeBadVersion, "bad version")
	ErrNoChildrenForEphemerals error = newError(wire.CodeNoChildrenForEphemerals, "no children for ephemerals")
	ErrNodeExists              error = newError(wire.CodeNodeExists, "node exists")
	ErrNotEmpty                error = newError(wire.CodeNotEmpty, "directory not empty")
	ErrSessionExpired          error = newError(wire.CodeSessionExpired, "session expired")
	ErrInvalidACL              error = newError(wire.CodeInvalidACL, "invalid ACL")
	ErrReconfigDisabled        error = newError(wire.CodeReconfigDisabled, "reconfig disabled")
	ErrQuotaExceeded           error = newError(wire.CodeQuotaExceeded, "quota exceeded")
	ErrReconfigInProgress      error = newError(wire.CodeReconfigInProgress, "another reconfiguration is in progress")
	ErrNewConfigNoQuorum       error = newError(wire.CodeNewConfigNoQuorum, "no quorum of the new configuration is connected and synced")
	// ErrSessionExists refuses a createSession for an id already in use. No
	// client sees it (the server mints another id), so it has no code of
	// its own; ZooKeeper's session tracker likewise never replaces a
	// session (putIfAbsent).
	ErrSessionExists error = newError(wire.CodeSystemError, "session id already in use")
)

// ToCode maps an error returned by this package to its ZooKeeper wire code:
// nil is CodeOK, and anything that is not one of our sentinels is
// CodeSystemError (it would be a bug, and ZooKeeper reports its own
// unexpected failures that way too).
func ToCode(err error) wire.Code {
	if err == nil {
		return wire.CodeOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return wire.CodeSystemError
}
