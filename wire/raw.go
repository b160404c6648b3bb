package wire

// Raw appends bytes that are already encoded, such as a pre-built frame.
func (e *Encoder) Raw(b []byte) { e.buf = append(e.buf, b...) }
