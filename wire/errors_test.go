package wire

import (
	"strings"
	"testing"
)

func TestCodeString(t *testing.T) {
	tests := []struct {
		c    Code
		want string
	}{
		{CodeOK, "OK"},
		{CodeNoNode, "NONODE"},
		{CodeNodeExists, "NODEEXISTS"},
		{CodeSessionExpired, "SESSIONEXPIRED"},
		{CodeRequestTimeout, "REQUESTTIMEOUT"},
		{CodeThrottledOp, "THROTTLEDOP"},
		{Code(-999), "UNKNOWN(-999)"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("Code(%d).String() = %q, want %q", int32(tt.c), got, tt.want)
		}
	}
}

func TestOpCodeString(t *testing.T) {
	tests := []struct {
		o    OpCode
		want string
	}{
		{OpCreate, "create"},
		{OpGetChildren2, "getChildren2"},
		{OpCreateTTL, "createTTL"},
		{OpSetWatches2, "setWatches2"},
		{OpWhoAmI, "whoAmI"},
		{OpCloseSession, "closeSession"},
		{OpError, "error"},
		{OpCode(10), "unknown(10)"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("OpCode(%d).String() = %q, want %q", int32(tt.o), got, tt.want)
		}
	}
}

// TestNamesAreDistinct catches a constant added to types.go without a name.
func TestNamesAreDistinct(t *testing.T) {
	codes := []Code{
		CodeOK, CodeSystemError, CodeRuntimeInconsistency, CodeDataInconsistency,
		CodeConnectionLoss, CodeMarshallingError, CodeUnimplemented, CodeOperationTimeout,
		CodeBadArguments, CodeNewConfigNoQuorum, CodeReconfigInProgress, CodeUnknownSession,
		CodeAPIError, CodeNoNode, CodeNoAuth, CodeBadVersion, CodeNoChildrenForEphemerals,
		CodeNodeExists, CodeNotEmpty, CodeSessionExpired, CodeInvalidCallback, CodeInvalidACL,
		CodeAuthFailed, CodeSessionMoved, CodeNotReadOnly, CodeEphemeralOnLocalSession,
		CodeNoWatcher, CodeRequestTimeout, CodeReconfigDisabled, CodeSessionClosedRequireSASLAuth,
		CodeQuotaExceeded, CodeThrottledOp,
	}
	seen := map[string]Code{}
	for _, c := range codes {
		s := c.String()
		if strings.HasPrefix(s, "UNKNOWN(") {
			t.Errorf("code %d has no name", c)
		}
		if prev, ok := seen[s]; ok {
			t.Errorf("codes %d and %d both print %q", prev, c, s)
		}
		seen[s] = c
	}
	ops := []OpCode{
		OpNotification, OpCreate, OpDelete, OpExists, OpGetData, OpSetData, OpGetACL,
		OpSetACL, OpGetChildren, OpSync, OpPing, OpGetChildren2, OpCheck, OpMulti, OpCreate2,
		OpReconfig, OpCheckWatches, OpRemoveWatches, OpCreateContainer, OpDeleteContainer,
		OpCreateTTL, OpMultiRead, OpAuth, OpSetWatches, OpSASL, OpGetEphemerals,
		OpGetAllChildrenNumber, OpSetWatches2, OpAddWatch, OpWhoAmI, OpCreateSession,
		OpCloseSession, OpError,
	}
	seenOps := map[string]OpCode{}
	for _, o := range ops {
		s := o.String()
		if strings.HasPrefix(s, "unknown(") {
			t.Errorf("opcode %d has no name", o)
		}
		if prev, ok := seenOps[s]; ok {
			t.Errorf("opcodes %d and %d both print %q", prev, o, s)
		}
		seenOps[s] = o
	}
}
