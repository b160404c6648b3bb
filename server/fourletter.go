package server

import (
	"fmt"
	"strings"
)

// fourLetterWords are the commands a raw connection may send instead of a
// handshake. Only ruok and srvr are served for now.
var fourLetterWords = map[string]func(s *Server) string{
	"ruok": func(*Server) string { return "imok" },
	"srvr": srvr,
	"stat": nil, "conf": nil, "cons": nil, "crst": nil, "dump": nil, "envi": nil,
	"gtmk": nil, "isro": nil, "mntr": nil, "reqs": nil, "rqst": nil, "srst": nil,
	"stmk": nil, "wchc": nil, "wchp": nil, "wchs": nil, "dirs": nil, "hash": nil,
}

func (c *conn) fourLetterWord(word string, cmd func(*Server) string) {
	c.srv.log.Debug("four-letter word", "cmd", word, "ip", c.ip)
	var out string
	if cmd == nil {
		// ZooKeeper's answer for a command left out of 4lw.commands.whitelist.
		out = word + " is not executed because it is not in the whitelist.\n"
	} else {
		out = cmd(c.srv)
	}
	c.out.sendRaw([]byte(out))
}

func srvr(s *Server) string {
	st := s.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: 3.8.0-hutch\n")
	fmt.Fprintf(&b, "Latency min/avg/max: 0/0.0/0\n")
	fmt.Fprintf(&b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: 0\n", st.PacketsReceived, st.PacketsSent, st.Connections)
	fmt.Fprintf(&b, "Zxid: 0x%x\nMode: %s\nNode count: %d\n", st.LastZxid, s.Mode(), st.Nodes)
	return b.String()
}
