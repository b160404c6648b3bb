package wire

// Message is implemented by every jute record in this package.
type Message interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// Minimum encoded sizes of vector elements, used to bound untrusted counts.
const (
	minACLSize        = 4 + 4 + 4 // perms, scheme length, id length
	minClientInfoSize = 4 + 4
)

// Encode appends the jute encoding of s.
func (s *Stat) Encode(e *Encoder) {
	e.Int64(s.Czxid)
	e.Int64(s.Mzxid)
	e.Int64(s.Ctime)
	e.Int64(s.Mtime)
	e.Int32(s.Version)
	e.Int32(s.Cversion)
	e.Int32(s.Aversion)
	e.Int64(s.EphemeralOwner)
	e.Int32(s.DataLength)
	e.Int32(s.NumChildren)
	e.Int64(s.Pzxid)
}

// Decode reads s from d.
func (s *Stat) Decode(d *Decoder) {
	s.Czxid = d.Int64()
	s.Mzxid = d.Int64()
	s.Ctime = d.Int64()
	s.Mtime = d.Int64()
	s.Version = d.Int32()
	s.Cversion = d.Int32()
	s.Aversion = d.Int32()
	s.EphemeralOwner = d.Int64()
	s.DataLength = d.Int32()
	s.NumChildren = d.Int32()
	s.Pzxid = d.Int64()
}

// Encode appends the jute encoding of id.
func (id *ID) Encode(e *Encoder) {
	e.String(id.Scheme)
	e.String(id.ID)
}

// Decode reads id from d.
func (id *ID) Decode(d *Decoder) {
	id.Scheme = d.String()
	id.ID = d.String()
}

// Encode appends the jute encoding of a.
func (a *ACL) Encode(e *Encoder) {
	e.Int32(a.Perms)
	a.ID.Encode(e)
}

// Decode reads a from d.
func (a *ACL) Decode(d *Decoder) {
	a.Perms = d.Int32()
	a.ID.Decode(d)
}

// encodeACLs appends a vector<ACL>; nil is written as Java's null (-1).
func encodeACLs(e *Encoder, acls []ACL) {
	if acls == nil {
		e.Int32(nullLength)
		return
	}
	encodeACLList(e, acls)
}

// encodeACLList appends a vector<ACL> that is never null, for replies.
func encodeACLList(e *Encoder, acls []ACL) {
	e.Int32(int32(len(acls)))
	for i := range acls {
		acls[i].Encode(e)
	}
}

// decodeACLs reads a vector<ACL>: -1 gives nil, 0 an empty non-nil slice.
func decodeACLs(d *Decoder) []ACL {
	n := d.vectorLen(minACLSize)
	if d.err != nil || n == nullLength {
		return nil
	}
	acls := make([]ACL, n)
	for i := range acls {
		acls[i].Decode(d)
	}
	if d.err != nil {
		return nil
	}
	return acls
}

// Encode appends the jute encoding of r, always including the trailing
// readOnly flag that clients since 3.4 send.
func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int32(r.ProtocolVersion)
	e.Int64(r.LastZxidSeen)
	e.Int32(r.Timeout)
	e.Int64(r.SessionID)
	e.Buffer(r.Passwd)
	e.Bool(r.ReadOnly)
}

// Decode reads r from d. The readOnly flag is not part of the jute record
// but appended by newer clients; when the frame ends before it, as with old
// clients and some third-party ones, ReadOnly is false and no error is set.
func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int32()
	r.LastZxidSeen = d.Int64()
	r.Timeout = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	r.ReadOnly = false
	if d.err == nil && d.Remaining() > 0 {
		r.ReadOnly = d.Bool()
	}
}

// Encode appends the jute encoding of r followed by the readOnly flag.
func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int32(r.ProtocolVersion)
	e.Int32(r.Timeout)
	e.Int64(r.SessionID)
	e.Buffer(r.Passwd)
	e.Bool(r.ReadOnly)
}

// Decode reads r from d; as with ConnectRequest the readOnly flag may be
// absent.
func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int32()
	r.Timeout = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	r.ReadOnly = false
	if d.err == nil && d.Remaining() > 0 {
		r.ReadOnly = d.Bool()
	}
}

// Encode appends the jute encoding of h.
func (h *RequestHeader) Encode(e *Encoder) {
	e.Int32(h.Xid)
	e.Int32(int32(h.Type))
}

// Decode reads h from d.
func (h *RequestHeader) Decode(d *Decoder) {
	h.Xid = d.Int32()
	h.Type = OpCode(d.Int32())
}

// Encode appends the jute encoding of h.
func (h *ReplyHeader) Encode(e *Encoder) {
	e.Int32(h.Xid)
	e.Int64(h.Zxid)
	e.Int32(int32(h.Err))
}

// Decode reads h from d.
func (h *ReplyHeader) Decode(d *Decoder) {
	h.Xid = d.Int32()
	h.Zxid = d.Int64()
	h.Err = Code(d.Int32())
}

// Encode appends the jute encoding of h.
func (h *MultiHeader) Encode(e *Encoder) {
	e.Int32(int32(h.Type))
	e.Bool(h.Done)
	e.Int32(int32(h.Err))
}

// Decode reads h from d.
func (h *MultiHeader) Decode(d *Decoder) {
	h.Type = OpCode(d.Int32())
	h.Done = d.Bool()
	h.Err = Code(d.Int32())
}

// Encode appends the jute encoding of r (ZooKeeper's ErrorResponse).
func (r *ErrorResult) Encode(e *Encoder) {
	e.Int32(int32(r.Err))
}

// Decode reads r from d.
func (r *ErrorResult) Decode(d *Decoder) {
	r.Err = Code(d.Int32())
}

// Encode appends the jute encoding of p.
func (p *AuthPacket) Encode(e *Encoder) {
	e.Int32(p.Type)
	e.String(p.Scheme)
	e.Buffer(p.Auth)
}

// Decode reads p from d.
func (p *AuthPacket) Decode(d *Decoder) {
	p.Type = d.Int32()
	p.Scheme = d.String()
	p.Auth = d.Buffer()
}

// Encode appends the jute encoding of ev.
func (ev *WatcherEvent) Encode(e *Encoder) {
	e.Int32(int32(ev.Type))
	e.Int32(ev.State)
	e.String(ev.Path)
}

// Decode reads ev from d.
func (ev *WatcherEvent) Decode(d *Decoder) {
	ev.Type = EventType(d.Int32())
	ev.State = d.Int32()
	ev.Path = d.String()
}
