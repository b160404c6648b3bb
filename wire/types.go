package wire

import "encoding/binary"

// OpCode identifies a request type; the numbers are ZooKeeper's.
type OpCode int32

// ZooKeeper request opcodes.
const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

// Special xids used by ZooKeeper in headers.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// Code is a ZooKeeper error code as carried in a reply header.
type Code int32

// ZooKeeper error codes.
const (
	CodeOK                           Code = 0
	CodeSystemError                  Code = -1
	CodeRuntimeInconsistency         Code = -2
	CodeDataInconsistency            Code = -3
	CodeConnectionLoss               Code = -4
	CodeMarshallingError             Code = -5
	CodeUnimplemented                Code = -6
	CodeOperationTimeout             Code = -7
	CodeBadArguments                 Code = -8
	CodeNewConfigNoQuorum            Code = -13
	CodeReconfigInProgress           Code = -14
	CodeUnknownSession               Code = -12
	CodeAPIError                     Code = -100
	CodeNoNode                       Code = -101
	CodeNoAuth                       Code = -102
	CodeBadVersion                   Code = -103
	CodeNoChildrenForEphemerals      Code = -108
	CodeNodeExists                   Code = -110
	CodeNotEmpty                     Code = -111
	CodeSessionExpired               Code = -112
	CodeInvalidCallback              Code = -113
	CodeInvalidACL                   Code = -114
	CodeAuthFailed                   Code = -115
	CodeSessionMoved                 Code = -118
	CodeNotReadOnly                  Code = -119
	CodeEphemeralOnLocalSession      Code = -120
	CodeNoWatcher                    Code = -121
	CodeRequestTimeout               Code = -122
	CodeReconfigDisabled             Code = -123
	CodeSessionClosedRequireSASLAuth Code = -124
	CodeQuotaExceeded                Code = -125
	CodeThrottledOp                  Code = -127
)

// Permission bits of an ACL entry.
const (
	PermRead   int32 = 1 << 0
	PermWrite  int32 = 1 << 1
	PermCreate int32 = 1 << 2
	PermDelete int32 = 1 << 3
	PermAdmin  int32 = 1 << 4
	PermAll    int32 = PermRead | PermWrite | PermCreate | PermDelete | PermAdmin
)

// Create mode flags as sent in CreateRequest.Flags.
const (
	ModePersistent                  int32 = 0
	ModeEphemeral                   int32 = 1
	ModePersistentSequential        int32 = 2
	ModeEphemeralSequential         int32 = 3
	ModeContainer                   int32 = 4
	ModePersistentWithTTL           int32 = 5
	ModePersistentSequentialWithTTL int32 = 6
)

// EventType is the type of a WatcherEvent.
type EventType int32

// Watch event types.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

// Keeper states carried in WatcherEvent.State.
const (
	StateDisconnected  int32 = 0
	StateSyncConnected int32 = 3
	StateAuthFailed    int32 = 4
	StateExpired       int32 = -112
	StateClosed        int32 = 7
	// StateConnectedReadOnly is reported to clients connected to a read-only server.
	StateConnectedReadOnly int32 = 5
)

// Watcher types of checkWatches/removeWatches.
const (
	WatcherTypeChildren int32 = 1
	WatcherTypeData     int32 = 2
	WatcherTypeAny      int32 = 3
)

// Modes of addWatch.
const (
	AddWatchModePersistent          int32 = 0
	AddWatchModePersistentRecursive int32 = 1
)

// PermString is ZKUtil.getPermString: the letters of perms in the order
// c, d, r, w, a.
func PermString(perms int32) string {
	var b []byte
	for _, p := range []struct {
		bit    int32
		letter byte
	}{{PermCreate, 'c'}, {PermDelete, 'd'}, {PermRead, 'r'}, {PermWrite, 'w'}, {PermAdmin, 'a'}} {
		if perms&p.bit != 0 {
			b = append(b, p.letter)
		}
	}
	return string(b)
}

// ID is an identity in an ACL: a scheme and a scheme-specific id.
type ID struct {
	Scheme string
	ID     string
}

// ACL grants Perms to ID.
type ACL struct {
	Perms int32
	ID    ID
}

// AppendACLKey appends an encoding of acl that two ACL lists share only
// if they are equal, for use as a map key (the tables of distinct ACLs
// snapshots write); dst is reused so that a lookup does not allocate.
func AppendACLKey(dst []byte, acl []ACL) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(acl)))
	for _, a := range acl {
		dst = binary.AppendVarint(dst, int64(a.Perms))
		dst = binary.AppendUvarint(dst, uint64(len(a.ID.Scheme)))
		dst = append(dst, a.ID.Scheme...)
		dst = binary.AppendUvarint(dst, uint64(len(a.ID.ID)))
		dst = append(dst, a.ID.ID...)
	}
	return dst
}

// Stat is the znode metadata ZooKeeper returns with most reads.
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// ConnectRequest opens or re-attaches a session. ReadOnly is optional on the wire.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	Timeout         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
}

// ConnectResponse answers a ConnectRequest.
type ConnectResponse struct {
	ProtocolVersion int32
	Timeout         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
}

// RequestHeader precedes every request after the handshake.
type RequestHeader struct {
	Xid  int32
	Type OpCode
}

// ReplyHeader precedes every response and notification.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Code
}

// CreateRequest is used by create, create2 and createContainer.
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

// CreateTTLRequest is used by createTTL.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

// CreateResponse answers create.
type CreateResponse struct{ Path string }

// Create2Response answers create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

// DeleteRequest deletes a node at an expected version (-1 for any).
type DeleteRequest struct {
	Path    string
	Version int32
}

// PathWatchRequest is the shape of exists, getData, getChildren and getChildren2 requests.
type PathWatchRequest struct {
	Path  string
	Watch bool
}

// StatResponse answers exists and setData.
type StatResponse struct{ Stat Stat }

// GetDataResponse answers getData.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// SetDataRequest replaces a node's data at an expected version.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// PathRequest is the shape of getACL, sync, getEphemerals and getAllChildrenNumber requests.
type PathRequest struct{ Path string }

// PathResponse answers sync.
type PathResponse struct{ Path string }

// GetACLResponse answers getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// SetACLRequest replaces a node's ACL at an expected aversion.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// GetChildrenResponse answers getChildren.
type GetChildrenResponse struct{ Children []string }

// GetChildren2Response answers getChildren2.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// CheckVersionRequest asserts a node's version, in multi or alone.
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// MultiHeader precedes each op of a multi request and each result of a multi response.
// Type -1 with Done ends the list; in responses Err carries the op's code.
type MultiHeader struct {
	Type OpCode
	Done bool
	Err  Code
}

// ErrorResult is one failed (or rolled back) op of a multi response.
type ErrorResult struct{ Err Code }

// AuthPacket adds an identity to a connection.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// SetWatchesRequest re-arms watches after reconnect (opcode 101).
type SetWatchesRequest struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// SetWatches2Request also carries persistent watches (opcode 105).
type SetWatches2Request struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// AddWatchRequest adds a persistent or persistent-recursive watch.
type AddWatchRequest struct {
	Path string
	Mode int32
}

// RemoveWatchesRequest is used by checkWatches and removeWatches.
type RemoveWatchesRequest struct {
	Path string
	Type int32
}

// GetEphemeralsResponse answers getEphemerals.
type GetEphemeralsResponse struct{ Paths []string }

// GetAllChildrenNumberResponse answers getAllChildrenNumber.
type GetAllChildrenNumberResponse struct{ Total int32 }

// ClientInfo is one identity in a whoAmI response.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// WhoAmIResponse answers whoAmI.
type WhoAmIResponse struct{ Infos []ClientInfo }

// WatcherEvent is the body of a notification (xid -1).
type WatcherEvent struct {
	Type  EventType
	State int32
	Path  string
}

// ReconfigRequest is a reconfig (ZooKeeperAdmin.reconfigure). Its three
// strings are jute ustrings that may be null, which matters: a null
// NewMembers makes the change incremental. nil is null.
type ReconfigRequest struct {
	JoiningServers []byte
	LeavingServers []byte
	NewMembers     []byte
	CurConfigID    int64
}
