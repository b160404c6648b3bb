// Package freeport picks loopback TCP ports that are free a moment ago and
// that it has not handed out before in this process, for servers that
// must know their port before they bind it (a Raft member whose peers are
// told its address). Another process may take a port before the caller
// binds it: callers retry.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// handedOut remembers the ports Pick has returned in this process, so
// that a caller asking for several at once (an ensemble's client, peer and
// admin ports) never gets one twice: the kernel may offer a port again as
// soon as it is released.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// Pick returns a TCP port free a moment ago on ip (a loopback address such
// as 127.0.0.1 or a node's own 127.0.0.3: a port free on one address may
// be taken on another) that it has not returned before.
//
// The port lies below the kernel's ephemeral range when there is room: a
// server killed and restarted must bind the same port again, and any
// outgoing connection on the machine may take a port of that range as its
// source in between ("address already in use" on restart).
func Pick(ip string) (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = make(map[int]bool)
	}
	if lo, _ := ephemeralPorts(); lo-lowestPort >= 1000 {
		for range 1000 {
			port := lowestPort + rand.IntN(lo-lowestPort)
			if handedOut.ports[port] || !bindable(ip, port) {
				continue
			}
			handedOut.ports[port] = true
			return port, nil
		}
	}
	for range 1000 {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return 0, fmt.Errorf("free port on %s: %w", ip, err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("free port: every port offered was handed out before")
}

// lowestPort keeps Pick clear of the well-known and common service ports.
const lowestPort = 16384

// ephemeralPorts is the kernel's range of source ports for outgoing
// connections (Linux's default when it cannot be read).
func ephemeralPorts() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || l > h {
		return lo, hi
	}
	return l, h
}

// bindable reports whether a listener can bind ip:port right now.
func bindable(ip string, port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
