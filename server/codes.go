package server

import (
	"errors"

	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkdb"
)

// errCode maps an internal error to the code on the wire: the one place
// where that happens.
func errCode(err error) wire.Code {
	if err == nil {
		return wire.CodeOK
	}
	if ce, ok := err.(codeError); ok {
		return ce.code
	}
	if errors.Is(err, zkdb.ErrSessionMoved) {
		return wire.CodeSessionMoved
	}
	return tree.ToCode(err)
}

// codeError carries a wire code for failures that never reach the tree.
type codeError struct{ code wire.Code }

func (e codeError) Error() string { return e.code.String() }

var (
	errNoWatcher   = codeError{wire.CodeNoWatcher}
	errAuthFailed  = codeError{wire.CodeAuthFailed}
	errNotReadOnly = codeError{wire.CodeNotReadOnly}
)

func isRead(op wire.OpCode) bool {
	switch op {
	case wire.OpExists, wire.OpGetData, wire.OpGetACL, wire.OpGetChildren, wire.OpGetChildren2,
		wire.OpSync, wire.OpGetEphemerals, wire.OpGetAllChildrenNumber, wire.OpCheckWatches,
		wire.OpRemoveWatches, wire.OpAddWatch, wire.OpWhoAmI, wire.OpMultiRead:
		return true
	}
	return false
}
