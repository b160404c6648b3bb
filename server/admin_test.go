package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestAdminMembershipNeedsToken: membership changes need the admin token
// as a bearer token and a JSON body, so neither a stranger nor a page in a
// browser (a form post cannot set either) can change the ensemble.
func TestAdminMembershipNeedsToken(t *testing.T) {
	const token = "admin-token-0123456789"
	withToken := startServer(t, Config{AdminAddr: "127.0.0.1:0", AdminToken: token})
	noToken := startServer(t, Config{AdminAddr: "127.0.0.1:0"})
	tests := []struct {
		name        string
		s           *Server
		method      string
		auth, ctype string
		body        string
		want        int
	}{
		{"no token configured", noToken, http.MethodPost, "Bearer " + token, "application/json", `{"id":4,"addr":"127.0.0.1:1"}`, http.StatusForbidden},
		{"no Authorization", withToken, http.MethodPost, "", "application/json", `{"id":4,"addr":"127.0.0.1:1"}`, http.StatusUnauthorized},
		{"wrong token", withToken, http.MethodDelete, "Bearer nope", "application/json", `{"id":4}`, http.StatusUnauthorized},
		{"a browser form", withToken, http.MethodPost, "", "application/x-www-form-urlencoded", "id=4&addr=127.0.0.1:1", http.StatusUnauthorized},
		{"a form with the token", withToken, http.MethodPost, "Bearer " + token, "application/x-www-form-urlencoded", "id=4&addr=127.0.0.1:1", http.StatusUnsupportedMediaType},
		{"bad JSON", withToken, http.MethodPost, "Bearer " + token, "application/json", `{"id":"four"}`, http.StatusBadRequest},
		{"id out of range", withToken, http.MethodPost, "Bearer " + token, "application/json", `{"id":255,"addr":"127.0.0.1:1"}`, http.StatusBadRequest},
		// Authorized and well-formed: refused only because this node has
		// no Raft group to change.
		{"authorized on a single node", withToken, http.MethodPost, "Bearer " + token, "application/json", `{"id":4,"addr":"127.0.0.1:1"}`, http.StatusConflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://"+tc.s.AdminAddr().String()+"/commands/members", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", tc.ctype)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
