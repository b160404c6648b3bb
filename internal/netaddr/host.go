package netaddr

import "net"

// Host is the host part of a remote address: the IP of a TCP address,
// the host of any other "host:port", or the whole string when it has no
// port (an in-memory pipe's address).
func Host(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
