package zkclient

import (
	"io"
	"time"
)

// How often a client served read-only looks for a read-write server, as
// ClientCnxn's pingRwServer: after 100 ms, then twice as long each time, up
// to a minute.
const (
	minRWSearch = 100 * time.Millisecond
	maxRWSearch = time.Minute
)

// searchRW asks the other servers, one at a time, whether they serve
// read-write (the isro word) while cn is a read-only connection from
// addr. The first that answers rw becomes the next server the client
// connects to, and cn is closed, as the Java client leaves a read-only
// server once it finds a majority.
func (c *Client) searchRW(cn *conn, addr string) {
	wait := minRWSearch
	next := 0
	for {
		t := time.NewTimer(wait)
		select {
		case <-cn.dead:
			t.Stop()
			return
		case <-c.stop:
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, maxRWSearch)
		server := c.servers[next%len(c.servers)]
		next++
		if server == addr {
			continue
		}
		if c.servesRW(server) {
			c.mu.Lock()
			c.rwServer = server
			c.mu.Unlock()
			c.log.Debug("read-write server found; leaving the read-only one", "server", server, "readOnly", addr)
			cn.nc.Close()
			return
		}
	}
}

// servesRW reports whether server answers isro with rw.
func (c *Client) servesRW(server string) bool {
	nc, err := c.cfg.Dial(server, time.Second)
	if err != nil {
		return false
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	if _, err := nc.Write([]byte("isro")); err != nil {
		return false
	}
	var b [2]byte
	_, err = io.ReadFull(nc, b[:])
	return err == nil && string(b[:]) == "rw"
}
