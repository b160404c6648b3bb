package wire

// Encode appends the jute encoding of r.
func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int32(r.Flags)
}

// Decode reads r from d.
func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = decodeACLs(d)
	r.Flags = d.Int32()
}

// Encode appends the jute encoding of r.
func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int32(r.Flags)
	e.Int64(r.TTL)
}

// Decode reads r from d.
func (r *CreateTTLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = decodeACLs(d)
	r.Flags = d.Int32()
	r.TTL = d.Int64()
}

// Encode appends the jute encoding of r.
func (r *DeleteRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int32(r.Version)
}

// Decode reads r from d.
func (r *DeleteRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Version = d.Int32()
}

// Encode appends the jute encoding of r.
func (r *PathWatchRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Bool(r.Watch)
}

// Decode reads r from d.
func (r *PathWatchRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Watch = d.Bool()
}

// Encode appends the jute encoding of r.
func (r *SetDataRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	e.Int32(r.Version)
}

// Decode reads r from d.
func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int32()
}

// Encode appends the jute encoding of r.
func (r *PathRequest) Encode(e *Encoder) {
	e.String(r.Path)
}

// Decode reads r from d.
func (r *PathRequest) Decode(d *Decoder) {
	r.Path = d.String()
}

// Encode appends the jute encoding of r.
func (r *SetACLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	encodeACLs(e, r.ACL)
	e.Int32(r.Version)
}

// Decode reads r from d.
func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.ACL = decodeACLs(d)
	r.Version = d.Int32()
}

// Encode appends the jute encoding of r.
func (r *CheckVersionRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int32(r.Version)
}

// Decode reads r from d.
func (r *CheckVersionRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Version = d.Int32()
}

// Encode appends the jute encoding of r.
func (r *SetWatchesRequest) Encode(e *Encoder) {
	e.Int64(r.RelativeZxid)
	e.StringVector(r.DataWatches)
	e.StringVector(r.ExistWatches)
	e.StringVector(r.ChildWatches)
}

// Decode reads r from d.
func (r *SetWatchesRequest) Decode(d *Decoder) {
	r.RelativeZxid = d.Int64()
	r.DataWatches = d.StringVector()
	r.ExistWatches = d.StringVector()
	r.ChildWatches = d.StringVector()
}

// Encode appends the jute encoding of r.
func (r *SetWatches2Request) Encode(e *Encoder) {
	e.Int64(r.RelativeZxid)
	e.StringVector(r.DataWatches)
	e.StringVector(r.ExistWatches)
	e.StringVector(r.ChildWatches)
	e.StringVector(r.PersistentWatches)
	e.StringVector(r.PersistentRecursiveWatches)
}

// Decode reads r from d.
func (r *SetWatches2Request) Decode(d *Decoder) {
	r.RelativeZxid = d.Int64()
	r.DataWatches = d.StringVector()
	r.ExistWatches = d.StringVector()
	r.ChildWatches = d.StringVector()
	r.PersistentWatches = d.StringVector()
	r.PersistentRecursiveWatches = d.StringVector()
}

// Encode appends the jute encoding of r.
func (r *AddWatchRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int32(r.Mode)
}

// Decode reads r from d.
func (r *AddWatchRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Mode = d.Int32()
}

// Encode appends the jute encoding of r.
func (r *RemoveWatchesRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int32(r.Type)
}

// Decode reads r from d.
func (r *RemoveWatchesRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Type = d.Int32()
}

// Encode appends the jute encoding of r.
func (r *ReconfigRequest) Encode(e *Encoder) {
	e.Buffer(r.JoiningServers)
	e.Buffer(r.LeavingServers)
	e.Buffer(r.NewMembers)
	e.Int64(r.CurConfigID)
}

// Decode reads r from d.
func (r *ReconfigRequest) Decode(d *Decoder) {
	r.JoiningServers = d.Buffer()
	r.LeavingServers = d.Buffer()
	r.NewMembers = d.Buffer()
	r.CurConfigID = d.Int64()
}
