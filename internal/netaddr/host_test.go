package netaddr

import (
	"net"
	"testing"
)

type strAddr string

func (a strAddr) Network() string { return "test" }
func (a strAddr) String() string  { return string(a) }

func TestHost(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 7001}, "127.0.0.2"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 7001}, "::1"},
		{strAddr("10.0.0.5:2181"), "10.0.0.5"},
		{strAddr("[::1]:2181"), "::1"},
		{strAddr("pipe"), "pipe"},
	}
	for _, tc := range tests {
		if got := Host(tc.addr); got != tc.want {
			t.Errorf("Host(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
