package realzk

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listensOn reports whether process pid holds the listening TCP socket on
// loopback port. FreePort cannot reserve a port, so another server may bind
// it before ours does; without this check that server's imok would pass
// for ours. It reads Linux's /proc and reports true when /proc cannot tell.
func listensOn(pid, port int) bool {
	inodes, ok := listenInodes(port)
	if !ok {
		return true
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return true
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true
		}
	}
	return false
}

// listenInodes returns the socket inodes listening on port, from
// /proc/net/tcp and tcp6.
func listenInodes(port int) (map[string]bool, bool) {
	inodes := make(map[string]bool)
	readAny := false
	suffix := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		readAny = true
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			const listen = "0A"
			if len(fields) > 9 && strings.HasSuffix(fields[1], suffix) && fields[3] == listen {
				inodes[fields[9]] = true
			}
		}
		f.Close()
	}
	return inodes, readAny
}
