package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
)

// javaDate formats milliseconds since the epoch as java.util.Date's
// toString in loc (zkCli's is the local zone): "Mon Nov 23 19:07:00 UTC 2026".
func javaDate(ms int64, loc *time.Location) string {
	return time.UnixMilli(ms).In(loc).Format("Mon Jan 02 15:04:05 MST 2006")
}

// hex is Long.toHexString: two's complement for negative values.
func hex(v int64) string { return strconv.FormatUint(uint64(v), 16) }

// printStat writes st as zkCli's StatPrinter, with times in loc.
func printStat(w io.Writer, st wire.Stat, loc *time.Location) {
	fmt.Fprintf(w, "cZxid = 0x%s\nctime = %s\nmZxid = 0x%s\nmtime = %s\npZxid = 0x%s\n"+
		"cversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%s\ndataLength = %d\nnumChildren = %d\n",
		hex(st.Czxid), javaDate(st.Ctime, loc), hex(st.Mzxid), javaDate(st.Mtime, loc), hex(st.Pzxid),
		st.Cversion, st.Version, st.Aversion, hex(st.EphemeralOwner), st.DataLength, st.NumChildren)
}

// javaString decodes data as Java's new String(data, UTF_8): each invalid
// byte becomes U+FFFD.
func javaString(data []byte) string {
	if utf8.Valid(data) {
		return string(data)
	}
	var b strings.Builder
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		b.WriteRune(r) // RuneError for an invalid byte, as Java's replacement
		data = data[n:]
	}
	return b.String()
}

// juteString is how a jute record's toString writes a string field
// (ToStringOutputArchive): quoted with ', and \0 \n \r , } % escaped.
func juteString(s string) string {
	r := strings.NewReplacer("\x00", "%00", "\n", "%0A", "\r", "%0D", ",", "%2C", "}", "%7D", "%", "%25")
	return "'" + r.Replace(s)
}

// aclLine is one line group of getAcl: the Id record's toString, which
// ends in a newline, then ": " and the permissions.
func aclLine(a wire.ACL) string {
	return juteString(a.ID.Scheme) + "," + juteString(a.ID.ID) + "\n: " + wire.PermString(a.Perms)
}

// javaList is java.util.List's toString: "[a, b]".
func javaList(items []string) string { return "[" + strings.Join(items, ", ") + "]" }

// codeMessages are KeeperException.getCodeMessage's words for each code.
var codeMessages = map[wire.Code]string{
	wire.CodeOK:                           "ok",
	wire.CodeSystemError:                  "SystemError",
	wire.CodeRuntimeInconsistency:         "RuntimeInconsistency",
	wire.CodeDataInconsistency:            "DataInconsistency",
	wire.CodeConnectionLoss:               "ConnectionLoss",
	wire.CodeMarshallingError:             "MarshallingError",
	wire.CodeNewConfigNoQuorum:            "NewConfigNoQuorum",
	wire.CodeReconfigInProgress:           "ReconfigInProgress",
	wire.CodeUnimplemented:                "Unimplemented",
	wire.CodeOperationTimeout:             "OperationTimeout",
	wire.CodeBadArguments:                 "BadArguments",
	wire.CodeAPIError:                     "APIError",
	wire.CodeNoNode:                       "NoNode",
	wire.CodeNoAuth:                       "NoAuth",
	wire.CodeBadVersion:                   "BadVersion",
	wire.CodeNoChildrenForEphemerals:      "NoChildrenForEphemerals",
	wire.CodeNodeExists:                   "NodeExists",
	wire.CodeInvalidACL:                   "InvalidACL",
	wire.CodeAuthFailed:                   "AuthFailed",
	wire.CodeNotEmpty:                     "Directory not empty",
	wire.CodeSessionExpired:               "Session expired",
	wire.CodeInvalidCallback:              "Invalid callback",
	wire.CodeSessionMoved:                 "Session moved",
	wire.CodeNotReadOnly:                  "Not a read-only call",
	wire.CodeEphemeralOnLocalSession:      "Ephemeral node on local session",
	wire.CodeNoWatcher:                    "No such watcher",
	wire.CodeReconfigDisabled:             "Reconfig is disabled",
	wire.CodeSessionClosedRequireSASLAuth: "Session closed because client failed to authenticate",
	wire.CodeQuotaExceeded:                "Quota has exceeded",
	wire.CodeThrottledOp:                  "Op throttled due to high load",
}

// codeMessage is KeeperException.getCodeMessage. The Java client cannot
// even build an exception for a code it does not know; hutch names it.
func codeMessage(c wire.Code) string {
	if m, ok := codeMessages[c]; ok {
		return m
	}
	return "Unknown error " + c.String()
}

// keeperMessage is KeeperException.getMessage: "KeeperErrorCode = NoNode
// for /a", without " for" when the exception names no path.
func keeperMessage(e *zkclient.Error) string {
	if e.Path == "" {
		return "KeeperErrorCode = " + codeMessage(e.Code)
	}
	return "KeeperErrorCode = " + codeMessage(e.Code) + " for " + e.Path
}

// javaPath is how Java prints a KeeperException's path: "null" for none.
func javaPath(p string) string {
	if p == "" {
		return "null"
	}
	return p
}

// wrapperMessages are the words of zkCli's CliWrapperException for the
// codes it words itself; one ending in a space is followed by the path.
var wrapperMessages = map[wire.Code]string{
	wire.CodeNoNode:                  "Node does not exist: ",
	wire.CodeNoChildrenForEphemerals: "Ephemerals cannot have children: ",
	wire.CodeNodeExists:              "Node already exists: ",
	wire.CodeNotEmpty:                "Node not empty: ",
	wire.CodeNotReadOnly:             "Not a read-only call: ",
	wire.CodeInvalidACL:              "Acl is not valid : ",
	wire.CodeNoAuth:                  "Insufficient permission : ",
	wire.CodeBadArguments:            "Arguments are not valid : ",
	wire.CodeBadVersion:              "version No is not valid : ",
	wire.CodeReconfigInProgress:      "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)",
	wire.CodeNewConfigNoQuorum:       "No quorum of new config is connected and up-to-date with the leader of last commmitted config - try invoking reconfiguration after new servers are connected and synced",
	wire.CodeQuotaExceeded:           "Quota has exceeded : ",
}

// failure is a command that failed: msg is printed on stderr (unless
// empty) and code becomes the exit status, as zkCli's CliException.
type failure struct {
	msg  string
	code int
}

func (f *failure) Error() string { return f.msg }

// fail is a failure with exit status 1.
func fail(msg string) *failure { return &failure{msg: msg, code: exitFailure} }

// wrap turns a client error into zkCli's message for it: a path the
// client refused gives its reason (MalformedPathException), a ZooKeeper
// code the words of CliWrapperException.
func wrap(err error) error {
	var pe *zkclient.PathError
	if errors.As(err, &pe) {
		return fail(pe.Reason)
	}
	var te *zkclient.TTLError
	if errors.As(err, &te) {
		return fail(te.Error())
	}
	var ke *zkclient.Error
	if !errors.As(err, &ke) {
		return fail(err.Error())
	}
	if m, ok := wrapperMessages[ke.Code]; ok {
		if strings.HasSuffix(m, " ") {
			m += javaPath(ke.Path)
		}
		return fail(m)
	}
	return fail(keeperMessage(ke))
}
