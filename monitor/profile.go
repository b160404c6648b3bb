package monitor

import (
	"net/http"
	"net/http/pprof"
)

// addProfiles serves Go's profiles under /debug/pprof/ beside the live
// view and behind its guard (loopback, or the admin token; read-only), so
// an operator can see where a running server spends its time:
//
//	go tool pprof 'http://127.0.0.1:8081/debug/pprof/profile?seconds=20'
func addProfiles(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
