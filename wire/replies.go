package wire

// Replies write nil lists as empty vectors rather than jute null: the real
// server never sends null there and Java clients hand the list to user code
// unchecked. Decoding still maps -1 to nil, as ZooKeeper does.

// Encode appends the jute encoding of r.
func (r *CreateResponse) Encode(e *Encoder) {
	e.String(r.Path)
}

// Decode reads r from d.
func (r *CreateResponse) Decode(d *Decoder) {
	r.Path = d.String()
}

// Encode appends the jute encoding of r.
func (r *Create2Response) Encode(e *Encoder) {
	e.String(r.Path)
	r.Stat.Encode(e)
}

// Decode reads r from d.
func (r *Create2Response) Decode(d *Decoder) {
	r.Path = d.String()
	r.Stat.Decode(d)
}

// Encode appends the jute encoding of r.
func (r *StatResponse) Encode(e *Encoder) {
	r.Stat.Encode(e)
}

// Decode reads r from d.
func (r *StatResponse) Decode(d *Decoder) {
	r.Stat.Decode(d)
}

// Encode appends the jute encoding of r. Nil Data stays null (-1) because
// ZooKeeper keeps a node created with null data null.
func (r *GetDataResponse) Encode(e *Encoder) {
	e.Buffer(r.Data)
	r.Stat.Encode(e)
}

// Decode reads r from d.
func (r *GetDataResponse) Decode(d *Decoder) {
	r.Data = d.Buffer()
	r.Stat.Decode(d)
}

// Encode appends the jute encoding of r.
func (r *PathResponse) Encode(e *Encoder) {
	e.String(r.Path)
}

// Decode reads r from d.
func (r *PathResponse) Decode(d *Decoder) {
	r.Path = d.String()
}

// Encode appends the jute encoding of r; a nil ACL is sent as empty.
func (r *GetACLResponse) Encode(e *Encoder) {
	encodeACLList(e, r.ACL)
	r.Stat.Encode(e)
}

// Decode reads r from d.
func (r *GetACLResponse) Decode(d *Decoder) {
	r.ACL = decodeACLs(d)
	r.Stat.Decode(d)
}

// Encode appends the jute encoding of r; nil Children is sent as empty.
func (r *GetChildrenResponse) Encode(e *Encoder) {
	e.stringList(r.Children)
}

// Decode reads r from d.
func (r *GetChildrenResponse) Decode(d *Decoder) {
	r.Children = d.StringVector()
}

// Encode appends the jute encoding of r; nil Children is sent as empty.
func (r *GetChildren2Response) Encode(e *Encoder) {
	e.stringList(r.Children)
	r.Stat.Encode(e)
}

// Decode reads r from d.
func (r *GetChildren2Response) Decode(d *Decoder) {
	r.Children = d.StringVector()
	r.Stat.Decode(d)
}

// Encode appends the jute encoding of r; nil Paths is sent as empty.
func (r *GetEphemeralsResponse) Encode(e *Encoder) {
	e.stringList(r.Paths)
}

// Decode reads r from d.
func (r *GetEphemeralsResponse) Decode(d *Decoder) {
	r.Paths = d.StringVector()
}

// Encode appends the jute encoding of r.
func (r *GetAllChildrenNumberResponse) Encode(e *Encoder) {
	e.Int32(r.Total)
}

// Decode reads r from d.
func (r *GetAllChildrenNumberResponse) Decode(d *Decoder) {
	r.Total = d.Int32()
}

// Encode appends the jute encoding of c.
func (c *ClientInfo) Encode(e *Encoder) {
	e.String(c.AuthScheme)
	e.String(c.User)
}

// Decode reads c from d.
func (c *ClientInfo) Decode(d *Decoder) {
	c.AuthScheme = d.String()
	c.User = d.String()
}

// Encode appends the jute encoding of r; nil Infos is sent as empty.
func (r *WhoAmIResponse) Encode(e *Encoder) {
	e.Int32(int32(len(r.Infos)))
	for i := range r.Infos {
		r.Infos[i].Encode(e)
	}
}

// Decode reads r from d.
func (r *WhoAmIResponse) Decode(d *Decoder) {
	n := d.vectorLen(minClientInfoSize)
	if d.err != nil || n == nullLength {
		r.Infos = nil
		return
	}
	infos := make([]ClientInfo, n)
	for i := range infos {
		infos[i].Decode(d)
	}
	if d.err != nil {
		infos = nil
	}
	r.Infos = infos
}
