package membership

import (
	"encoding/binary"
	"errors"
)

// Binary layout of a Config, as the replicated log and snapshots carry it
// (integers varint-encoded, strings length-prefixed):
//
//	varint(version) uvarint(count) member*
//	member = uvarint(id) str(host) uvarint(quorumPort) uvarint(electionPort)
//	         byte(role) str(clientHost) uvarint(clientPort)
//
// Members keep their order (ZooKeeper's printing order).

// ErrCorrupt means bytes do not decode as a Config.
var ErrCorrupt = errors.New("membership: corrupt encoding")

// minMemberSize is the fewest bytes a member takes; it bounds the count a
// Config may claim.
const minMemberSize = 7

// AppendConfig appends the encoding of c to dst.
func AppendConfig(dst []byte, c Config) []byte {
	dst = binary.AppendVarint(dst, c.Version)
	dst = binary.AppendUvarint(dst, uint64(len(c.Members)))
	for _, m := range c.Members {
		dst = binary.AppendUvarint(dst, m.ID)
		dst = appendStr(dst, m.Host)
		dst = binary.AppendUvarint(dst, uint64(m.QuorumPort))
		dst = binary.AppendUvarint(dst, uint64(m.ElectionPort))
		dst = append(dst, byte(m.Role))
		dst = appendStr(dst, m.ClientHost)
		dst = binary.AppendUvarint(dst, uint64(m.ClientPort))
	}
	return dst
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// DecodeConfig decodes a Config from the front of b and returns the bytes
// after it. It never panics, and allocates no more than b's size
// justifies.
func DecodeConfig(b []byte) (Config, []byte, error) {
	r := reader{b: b}
	c := Config{Version: r.varint()}
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b))/minMemberSize {
		return Config{}, nil, ErrCorrupt
	}
	if n > 0 {
		c.Members = make([]Member, n)
	}
	for i := range c.Members {
		m := &c.Members[i]
		m.ID = r.uvarint()
		m.Host = r.str()
		m.QuorumPort = r.port()
		m.ElectionPort = r.port()
		role := r.byte()
		m.ClientHost = r.str()
		m.ClientPort = r.port()
		if role > byte(Observer) {
			r.bad = true
		}
		m.Role = Role(role)
	}
	if r.bad {
		return Config{}, nil, ErrCorrupt
	}
	return c, r.b, nil
}

// reader walks encoded bytes; the first failure sticks.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.bad {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if r.bad || len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) port() int {
	v := r.uvarint()
	if v > 65535 {
		r.bad = true
	}
	return int(v)
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
