package zkformat

// ZooKeeper stores no session passwords: it derives a session's password
// from its id and a constant the server calls its secret
// (ZooKeeperServer.generatePasswd: java.util.Random seeded with
// id ^ 0xB3415C00, 16 bytes of nextBytes), and checks a re-attaching
// client's password by deriving it again. A session imported with the
// same password lets a client that was connected to ZooKeeper re-attach.

const (
	zkSecret     = 0xB3415C00
	randMult     = 0x5DEECE66D // java.util.Random's LCG, as its documentation specifies
	randAdd      = 0xB
	randMask     = 1<<48 - 1
	passwordSize = 16
)

// SessionPassword returns the password ZooKeeper gives session id.
func SessionPassword(id int64) []byte {
	seed := (uint64(id^zkSecret) ^ randMult) & randMask
	next := func() int32 { // Random.next(32)
		seed = (seed*randMult + randAdd) & randMask
		return int32(seed >> 16)
	}
	out := make([]byte, passwordSize)
	for i := 0; i < len(out); {
		r := next()
		for k := 0; k < 4 && i < len(out); k++ {
			out[i] = byte(r)
			r >>= 8
			i++
		}
	}
	return out
}
