//go:build unix

package raftstore

import (
	"io"
	"net"
	"syscall"
)

// peek copies into buf the bytes c has received and nobody has read,
// without consuming them or waiting: 0 when there are none, the peer
// closed, or c is not a socket. Through Control, not Read: a goroutine
// may be blocked reading c and holds its read lock.
func peek(c net.Conn, buf []byte) int {
	rc := rawConn(c)
	if rc == nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		k, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err == nil && k > 0 {
			n = k
		}
	})
	return n
}

// waitPeek waits, within c's read deadline, until len(buf) bytes have
// arrived on c, and copies them into buf without consuming them. Its
// callback runs with a reference held on the descriptor, which a Close
// waits for, so it takes no locks: a caller that claims the connection
// does so after it returns, while the bytes are still unread.
func waitPeek(c net.Conn, buf []byte) error {
	rc := rawConn(c)
	if rc == nil {
		return errNoPeek
	}
	var err error
	rerr := rc.Read(func(fd uintptr) bool {
		k, _, perr := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case perr == syscall.EAGAIN:
			return false // nothing yet: wait for it
		case perr != nil:
			err = perr
		case k == 0:
			err = io.EOF
		case k < len(buf):
			return false // part of it: wait for the rest
		}
		return true
	})
	if rerr != nil {
		return rerr
	}
	return err
}

func rawConn(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
