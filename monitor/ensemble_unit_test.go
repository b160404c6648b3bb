package monitor

import "testing"

// TestMemberURL: a member's own view is linked at its UI address, else
// its admin port's; a wildcard host becomes the host its Raft address
// names, which the other members reach it at.
func TestMemberURL(t *testing.T) {
	for _, tc := range []struct {
		ui, admin, raft, want string
	}{
		{"127.0.0.1:8081", "127.0.0.1:8080", "127.0.0.1:7001", "http://127.0.0.1:8081"},
		{":8081", "", "10.0.0.5:2888", "http://10.0.0.5:8081"},
		{"", "[::]:8080", "[::1]:7001", "http://[::1]:8080"},
		{"0.0.0.0:8081", "", "zk2.example:2888", "http://zk2.example:8081"},
		{"", "", "127.0.0.1:7001", ""},
	} {
		if got := memberURL(&memberReport{UIAddr: tc.ui, AdminAddr: tc.admin}, tc.raft); got != tc.want {
			t.Errorf("ui %q admin %q raft %q: %q, want %q", tc.ui, tc.admin, tc.raft, got, tc.want)
		}
	}
}
