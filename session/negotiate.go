package session

import (
	"fmt"
	"io"
	"time"
)

// PasswordLen is the length of a session password, as ZooKeeper issues them.
const PasswordLen = 16

// NegotiateTimeout clamps a client's requested session timeout into
// [min, max], the server's minSessionTimeout and maxSessionTimeout (by
// ZooKeeper's defaults 2 and 20 ticks). The lower bound is applied first, so
// if a misconfiguration makes min exceed max, max wins, as in ZooKeeper's
// processConnectRequest.
func NegotiateTimeout(requested, min, max time.Duration) time.Duration {
	t := requested
	if t < min {
		t = min
	}
	if t > max {
		t = max
	}
	return t
}

// NewPassword returns a fresh 16-byte session password read from r, which
// should be a cryptographic source such as crypto/rand.Reader. ZooKeeper
// derives the password from the session id and a fixed secret; random bytes
// are indistinguishable to clients and cannot be forged from the id.
func NewPassword(r io.Reader) ([]byte, error) {
	pw := make([]byte, PasswordLen)
	if _, err := io.ReadFull(r, pw); err != nil {
		return nil, fmt.Errorf("session password: %w", err)
	}
	return pw, nil
}
