package zkclient

import (
	"errors"

	"github.com/hutchzk/hutch/wire"
)

// Error is a ZooKeeper error code: one a server answered with, or one the
// client reports itself (CONNECTIONLOSS, SESSIONEXPIRED, AUTHFAILED, and
// INVALIDACL for an empty ACL, which the Java client refuses before sending).
// Path is the path the request named, empty where the Java client's
// KeeperException carries none (an empty ACL, getEphemerals).
type Error struct {
	Code wire.Code
	Path string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "zookeeper: " + e.Code.String()
	}
	return "zookeeper: " + e.Code.String() + " for " + e.Path
}

// Code returns the ZooKeeper code carried by err, or CodeOK and false when
// err is not an *Error.
func Code(err error) (wire.Code, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return wire.CodeOK, false
}

// IsCode reports whether err carries the ZooKeeper code c.
func IsCode(err error, c wire.Code) bool {
	got, ok := Code(err)
	return ok && got == c
}

// PathError is a path the client refuses before sending, as the Java
// client's PathUtils.validatePath does; Reason is that method's message.
type PathError struct {
	Reason string
}

func (e *PathError) Error() string { return e.Reason }
