// Package controlhttp serves test controls over HTTP as JSON: each
// control is a route (method and path) whose handler returns a value or
// an error, and every answer is a JSON object, the refusals of unknown
// paths (404) and wrong methods (405) too, so a harness in any language
// reads every answer the same way. The hutch command serves a single
// server's controls (--test-controls) and an in-process ensemble's
// (hutch test-ensemble) through it.
package controlhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/hutchzk/hutch/internal/httpserve"
)

// Route is one control.
type Route struct {
	Method, Path string
	// Doc says what it does, for the index at GET /.
	Doc string
	// Handle does it and returns the answer, a value encoded as JSON, or
	// an error.
	Handle func(r *http.Request) (any, error)
}

// Handler serves routes, to programs on this machine only
// (httpserve.LocalOnly refuses web pages). An error's status is
// status(err), or 400 for a BadRequest and 500 for what status leaves at
// 0; its body is {"error": "..."}. GET / lists the routes.
func Handler(routes []Route, status func(error) int) http.Handler {
	byPath := map[string][]Route{}
	for _, r := range routes {
		byPath[r.Path] = append(byPath[r.Path], r)
	}
	index := make([]map[string]string, 0, len(routes))
	for _, r := range routes {
		index = append(index, map[string]string{"method": r.Method, "path": r.Path, "does": r.Doc})
	}
	return httpserve.LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/" && req.Method == http.MethodGet {
			WriteJSON(w, http.StatusOK, map[string]any{"controls": index})
			return
		}
		candidates, ok := byPath[req.URL.Path]
		if !ok {
			WriteError(w, http.StatusNotFound, fmt.Errorf("no control %s (GET / lists them)", req.URL.Path))
			return
		}
		i := slices.IndexFunc(candidates, func(r Route) bool { return r.Method == req.Method })
		if i < 0 {
			var allowed []string
			for _, r := range candidates {
				allowed = append(allowed, r.Method)
			}
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			WriteError(w, http.StatusMethodNotAllowed, fmt.Errorf("%s takes %s, not %s", req.URL.Path, strings.Join(allowed, " or "), req.Method))
			return
		}
		body, err := candidates[i].Handle(req)
		if err != nil {
			code := 0
			var bad badRequest
			if errors.As(err, &bad) {
				code = http.StatusBadRequest
			} else if status != nil {
				code = status(err)
			}
			if code == 0 {
				code = http.StatusInternalServerError
			}
			WriteError(w, code, err)
			return
		}
		WriteJSON(w, http.StatusOK, body)
	}))
}

// badRequest is a request the caller got wrong: 400.
type badRequest struct{ error }

// BadRequest is an error answered with 400.
func BadRequest(format string, args ...any) error { return badRequest{fmt.Errorf(format, args...)} }

// WriteJSON answers body as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// WriteError answers {"error": err} with status.
func WriteError(w http.ResponseWriter, status int, err error) {
	WriteJSON(w, status, map[string]string{"error": err.Error()})
}
