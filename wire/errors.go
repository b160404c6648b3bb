package wire

import "strconv"

// String returns the name of the KeeperException.Code constant for c, such
// as "NONODE", or "UNKNOWN(n)" for a code ZooKeeper does not define.
func (c Code) String() string {
	switch c {
	case CodeOK:
		return "OK"
	case CodeSystemError:
		return "SYSTEMERROR"
	case CodeRuntimeInconsistency:
		return "RUNTIMEINCONSISTENCY"
	case CodeDataInconsistency:
		return "DATAINCONSISTENCY"
	case CodeConnectionLoss:
		return "CONNECTIONLOSS"
	case CodeMarshallingError:
		return "MARSHALLINGERROR"
	case CodeUnimplemented:
		return "UNIMPLEMENTED"
	case CodeOperationTimeout:
		return "OPERATIONTIMEOUT"
	case CodeBadArguments:
		return "BADARGUMENTS"
	case CodeUnknownSession:
		return "UNKNOWNSESSION"
	case CodeNewConfigNoQuorum:
		return "NEWCONFIGNOQUORUM"
	case CodeReconfigInProgress:
		return "RECONFIGINPROGRESS"
	case CodeAPIError:
		return "APIERROR"
	case CodeNoNode:
		return "NONODE"
	case CodeNoAuth:
		return "NOAUTH"
	case CodeBadVersion:
		return "BADVERSION"
	case CodeNoChildrenForEphemerals:
		return "NOCHILDRENFOREPHEMERALS"
	case CodeNodeExists:
		return "NODEEXISTS"
	case CodeNotEmpty:
		return "NOTEMPTY"
	case CodeSessionExpired:
		return "SESSIONEXPIRED"
	case CodeInvalidCallback:
		return "INVALIDCALLBACK"
	case CodeInvalidACL:
		return "INVALIDACL"
	case CodeAuthFailed:
		return "AUTHFAILED"
	case CodeSessionMoved:
		return "SESSIONMOVED"
	case CodeNotReadOnly:
		return "NOTREADONLY"
	case CodeEphemeralOnLocalSession:
		return "EPHEMERALONLOCALSESSION"
	case CodeNoWatcher:
		return "NOWATCHER"
	case CodeRequestTimeout:
		return "REQUESTTIMEOUT"
	case CodeReconfigDisabled:
		return "RECONFIGDISABLED"
	case CodeSessionClosedRequireSASLAuth:
		return "SESSIONCLOSEDREQUIRESASLAUTH"
	case CodeQuotaExceeded:
		return "QUOTAEXCEEDED"
	case CodeThrottledOp:
		return "THROTTLEDOP"
	}
	return "UNKNOWN(" + strconv.Itoa(int(c)) + ")"
}

// String returns the ZooDefs.OpCode name of o, such as "getChildren2", or
// "unknown(n)" for an opcode ZooKeeper does not define.
func (o OpCode) String() string {
	switch o {
	case OpNotification:
		return "notification"
	case OpCreate:
		return "create"
	case OpDelete:
		return "delete"
	case OpExists:
		return "exists"
	case OpGetData:
		return "getData"
	case OpSetData:
		return "setData"
	case OpGetACL:
		return "getACL"
	case OpSetACL:
		return "setACL"
	case OpGetChildren:
		return "getChildren"
	case OpSync:
		return "sync"
	case OpPing:
		return "ping"
	case OpGetChildren2:
		return "getChildren2"
	case OpCheck:
		return "check"
	case OpMulti:
		return "multi"
	case OpCreate2:
		return "create2"
	case OpReconfig:
		return "reconfig"
	case OpCheckWatches:
		return "checkWatches"
	case OpRemoveWatches:
		return "removeWatches"
	case OpCreateContainer:
		return "createContainer"
	case OpDeleteContainer:
		return "deleteContainer"
	case OpCreateTTL:
		return "createTTL"
	case OpMultiRead:
		return "multiRead"
	case OpAuth:
		return "auth"
	case OpSetWatches:
		return "setWatches"
	case OpSASL:
		return "sasl"
	case OpGetEphemerals:
		return "getEphemerals"
	case OpGetAllChildrenNumber:
		return "getAllChildrenNumber"
	case OpSetWatches2:
		return "setWatches2"
	case OpAddWatch:
		return "addWatch"
	case OpWhoAmI:
		return "whoAmI"
	case OpCreateSession:
		return "createSession"
	case OpCloseSession:
		return "closeSession"
	case OpError:
		return "error"
	}
	return "unknown(" + strconv.Itoa(int(o)) + ")"
}

// String returns the Java client's Watcher.Event.EventType name of t, such
// as "NodeDataChanged", or "Unknown".
func (t EventType) String() string {
	switch t {
	case EventNone:
		return "None"
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventDataWatchRemoved:
		return "DataWatchRemoved"
	case EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return "Unknown"
}
