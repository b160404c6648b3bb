package membership

import (
	"encoding/binary"
	"errors"

	"github.com/hutchzk/hutch/internal/record"
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
	r := record.NewSlice(b)
	c := Config{Version: r.Varint()}
	n := r.Count(minMemberSize)
	if r.Bad() {
		return Config{}, nil, ErrCorrupt
	}
	if n > 0 {
		c.Members = make([]Member, n)
	}
	for i := range c.Members {
		m := &c.Members[i]
		m.ID = r.Uvarint()
		m.Host = r.String()
		m.QuorumPort = port(r)
		m.ElectionPort = port(r)
		role := r.Byte()
		m.ClientHost = r.String()
		m.ClientPort = port(r)
		if role > byte(Observer) {
			r.Fail()
		}
		m.Role = Role(role)
	}
	if r.Bad() {
		return Config{}, nil, ErrCorrupt
	}
	return c, r.Rest(), nil
}

// port reads a port number.
func port(r *record.Slice) int {
	v := r.Uvarint()
	if v > 65535 {
		r.Fail()
	}
	return int(v)
}
