package zkformat

import (
	"errors"
	"fmt"

	"github.com/hutchzk/hutch/wire"
)

// TxnHeader is a logged transaction's header.
type TxnHeader struct {
	Session int64 // clientId
	Cxid    int32
	Zxid    int64
	Time    int64 // ms since the epoch, the leader's clock
	Type    wire.OpCode
}

// The records a transaction carries, by header type (SerializeUtils
// .deserializeTxn). Data is nil when the log holds jute's null.
type (
	// CreateTxn: create and create2 (3.4+; before 3.3 without
	// ParentCVersion, read as -1).
	CreateTxn struct {
		Path           string
		Data           []byte
		ACL            []wire.ACL
		Ephemeral      bool
		ParentCVersion int32
	}
	// CreateTTLTxn: createTTL (3.5.3+).
	CreateTTLTxn struct {
		Path           string
		Data           []byte
		ACL            []wire.ACL
		ParentCVersion int32
		TTL            int64
	}
	// CreateContainerTxn: createContainer (3.5.1+).
	CreateContainerTxn struct {
		Path           string
		Data           []byte
		ACL            []wire.ACL
		ParentCVersion int32
	}
	// DeleteTxn: delete and deleteContainer.
	DeleteTxn struct{ Path string }
	// SetDataTxn: setData, and reconfig (the new /zookeeper/config).
	SetDataTxn struct {
		Path    string
		Data    []byte
		Version int32
	}
	// SetACLTxn: setACL.
	SetACLTxn struct {
		Path    string
		ACL     []wire.ACL
		Version int32
	}
	// CheckVersionTxn: check, inside a multi.
	CheckVersionTxn struct {
		Path    string
		Version int32
	}
	// CreateSessionTxn: createSession.
	CreateSessionTxn struct{ Timeout int32 }
	// CloseSessionTxn: closeSession. Listed says whether the log lists
	// the paths to delete (3.6+, zookeeper.closeSessionTxn.enabled); older
	// logs carry no record and the server deletes what it finds.
	CloseSessionTxn struct {
		Listed bool
		Paths  []string
	}
	// ErrorTxn: a request refused after it took a zxid.
	ErrorTxn struct{ Err int32 }
	// MultiTxn: multi, one sub-transaction per op. A failed multi is
	// logged with every op an ErrorTxn.
	MultiTxn struct{ Ops []SubTxn }
	// SubTxn is one op of a multi: its type and record.
	SubTxn struct {
		Type wire.OpCode
		Txn  any
	}
)

// TxnDigest is the tree digest a 3.6+ log entry carries: ZooKeeper's
// digest right after the transaction.
type TxnDigest struct {
	Version int32
	Digest  int64
}

func decodeACLList(d *wire.Decoder) []wire.ACL {
	n := d.Int32()
	if d.Err() != nil || n < 0 {
		if n < -1 {
			d.Fail(wire.ErrBadLength)
		}
		return nil
	}
	if int(n) > d.Remaining()/12 {
		d.Fail(wire.ErrShortBuffer)
		return nil
	}
	acl := make([]wire.ACL, n)
	for i := range acl {
		acl[i].Decode(d)
	}
	return acl
}

// decodeRecord reads the record of a transaction of type t. For the types
// whose record changed shape between versions it is told whether to read
// the older shape.
func decodeRecord(d *wire.Decoder, t wire.OpCode, old bool) (any, error) {
	switch t {
	case wire.OpCreate, wire.OpCreate2:
		c := &CreateTxn{Path: d.String(), Data: d.Buffer(), ACL: decodeACLList(d), Ephemeral: d.Bool(), ParentCVersion: -1}
		if !old {
			c.ParentCVersion = d.Int32()
		}
		return c, nil
	case wire.OpCreateTTL:
		return &CreateTTLTxn{Path: d.String(), Data: d.Buffer(), ACL: decodeACLList(d), ParentCVersion: d.Int32(), TTL: d.Int64()}, nil
	case wire.OpCreateContainer:
		return &CreateContainerTxn{Path: d.String(), Data: d.Buffer(), ACL: decodeACLList(d), ParentCVersion: d.Int32()}, nil
	case wire.OpDelete, wire.OpDeleteContainer:
		return &DeleteTxn{Path: d.String()}, nil
	case wire.OpSetData, wire.OpReconfig:
		return &SetDataTxn{Path: d.String(), Data: d.Buffer(), Version: d.Int32()}, nil
	case wire.OpSetACL:
		return &SetACLTxn{Path: d.String(), ACL: decodeACLList(d), Version: d.Int32()}, nil
	case wire.OpCheck:
		return &CheckVersionTxn{Path: d.String(), Version: d.Int32()}, nil
	case wire.OpCreateSession:
		return &CreateSessionTxn{Timeout: d.Int32()}, nil
	case wire.OpCloseSession:
		if old {
			return &CloseSessionTxn{}, nil
		}
		paths := d.StringVector()
		return &CloseSessionTxn{Listed: paths != nil, Paths: paths}, nil
	case wire.OpError:
		return &ErrorTxn{Err: d.Int32()}, nil
	case wire.OpMulti:
		return decodeMulti(d)
	}
	return nil, fmt.Errorf("%w %d", ErrUnknownTxn, t)
}

// subTypes are the types a multi may hold (DataTree.processTxn).
func subTypeKnown(t wire.OpCode) bool {
	switch t {
	case wire.OpCreate, wire.OpCreate2, wire.OpCreateTTL, wire.OpCreateContainer, wire.OpDelete,
		wire.OpDeleteContainer, wire.OpSetData, wire.OpError, wire.OpCheck:
		return true
	}
	return false
}

func decodeMulti(d *wire.Decoder) (*MultiTxn, error) {
	n := d.Int32()
	if d.Err() != nil {
		return nil, nil
	}
	if n < 0 || int(n) > d.Remaining()/8 {
		d.Fail(wire.ErrBadLength)
		return nil, nil
	}
	m := &MultiTxn{Ops: make([]SubTxn, n)}
	for i := range m.Ops {
		t := wire.OpCode(d.Int32())
		data := d.Buffer()
		if d.Err() != nil {
			return nil, nil
		}
		if !subTypeKnown(t) {
			return nil, fmt.Errorf("multi op %d: %w %d", i, ErrUnknownTxn, t)
		}
		sd := wire.NewDecoder(data)
		rec, err := decodeRecord(sd, t, false)
		if err == nil && sd.Err() != nil {
			err = sd.Err()
		}
		if err == nil && sd.Remaining() != 0 {
			err = fmt.Errorf("%d bytes after the record", sd.Remaining())
		}
		if err != nil {
			return nil, fmt.Errorf("multi op %d (type %d): %w", i, t, err)
		}
		m.Ops[i] = SubTxn{Type: t, Txn: rec}
	}
	return m, nil
}

// DecodeEntry decodes one log entry's bytes (after its checksum was
// checked): header, record, and the digest when there is one. Records
// whose shape changed between versions are read in whichever shape
// accounts for every byte, as ZooKeeper falls back to the older one.
func DecodeEntry(b []byte) (TxnHeader, any, *TxnDigest, error) {
	d := wire.NewDecoder(b)
	h := TxnHeader{Session: d.Int64(), Cxid: d.Int32(), Zxid: d.Int64(), Time: d.Int64(), Type: wire.OpCode(d.Int32())}
	if d.Err() != nil {
		return h, nil, nil, errors.New("transaction header: " + d.Err().Error())
	}
	rest := b[d.Offset():]
	var firstErr error
	for _, old := range []bool{false, true} {
		rd := wire.NewDecoder(rest)
		rec, err := decodeRecord(rd, h.Type, old)
		if err == nil && rd.Err() != nil {
			err = rd.Err()
		}
		if errors.Is(err, ErrUnknownTxn) {
			return h, nil, nil, err
		}
		if err == nil {
			switch rd.Remaining() {
			case 0:
				return h, rec, nil, nil
			case 12: // version int, digest long
				dig := &TxnDigest{Version: rd.Int32(), Digest: rd.Int64()}
				return h, rec, dig, nil
			}
			err = fmt.Errorf("%d bytes after the record", rd.Remaining())
		}
		if firstErr == nil {
			firstErr = err
		}
		if !hasOldShape(h.Type) {
			break
		}
	}
	return h, nil, nil, fmt.Errorf("%s record: %w", h.Type, firstErr)
}

// hasOldShape: types whose record older versions wrote otherwise
// (CreateTxnV0; closeSession without a record).
func hasOldShape(t wire.OpCode) bool { return t == wire.OpCreate || t == wire.OpCloseSession }
