package httpserve

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// LocalOnly wraps h, a handler for programs on this machine (the test
// controls, which expire sessions and pause the server without any
// credential), so that no web page a browser shows can drive it:
//
//   - the Host header must name a loopback address or localhost, which
//     refuses DNS rebinding (a page whose own name now points at
//     127.0.0.1 still sends its own name);
//   - a request that carries an Origin (every browser sends one with a
//     POST, and with any cross-origin fetch) must come from this very
//     origin, and one whose Sec-Fetch-Site says cross-site or same-site
//     is refused.
//
// Programs (curl, Go's, Python's and Java's HTTP clients) send no Origin
// and pass. A refusal is 403 with {"error": "..."} saying why: JSON, as
// every answer of the controls.
func LocalOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := foreign(r); why != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": why})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// foreign says why r may come from a page rather than a local program,
// or "" when it may not.
func foreign(r *http.Request) string {
	if !loopbackHost(r.Host) {
		return "refused: the Host header must name a loopback address (this port serves programs on this machine, not web pages)"
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return "refused: a request from another site (Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site") + ")"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || origin == "null" || !strings.EqualFold(u.Host, r.Host) {
		return "refused: a request from another origin (" + origin + ")"
	}
	return ""
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
