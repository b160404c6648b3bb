package ensemble

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/nemesis"
)

// procAdminToken is the admin token the nemesis's processes take.
const procAdminToken = "nemesis admin token for membership changes"

// SetRole changes node i's place in the membership through the admin
// port's members command (a reconfig with the operator's authority) until
// the newest membership a running member has applied says i holds role
// (nemesis.Reconfigurer): absent for Out, an observer that does not vote
// for Observer, a participant that votes for Participant. The newest, not
// the first member's: a member restarted from an old snapshot shows that
// snapshot's membership until it hears a leader, and taking its word let a
// promotion lost with its leader pass for made (seed 49: a later removal
// was then refused as leaving one voter). A change found not made, lost or
// never sent, is asked for again, each time against the version it was
// found at.
func (c *procCluster) SetRole(ctx context.Context, i int, role nemesis.Role) error {
	client := &http.Client{Timeout: 3 * time.Second}
	id := i + 1
	var last error
	for {
		admin, view, err := c.newestMembership(ctx, client)
		switch {
		case err != nil:
			last = err
		case view.holds(id, role):
			return nil
		default:
			// Against the version found, so a try that outlives its
			// client's timeout cannot undo a later step's change.
			method, body := http.MethodPost, map[string]any{"id": id, "addr": c.sw.Front(strconv.Itoa(id)), "role": role.String(), "version": view.Version}
			if role == nemesis.Out {
				method, body = http.MethodDelete, map[string]any{"id": id, "version": view.Version}
			}
			last = procChange(ctx, client, method, admin, body)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d still not %s: %w (last: %v)", id, role, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond): // between tries, and for the change to apply
		}
	}
}

func (c *procCluster) isPaused(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused[i]
}

// membersView is a member's answer to the members command: the
// membership it has applied, its version, and whom Raft counts for quorum.
type membersView struct {
	Version string       `json:"version"` // hex, as /zookeeper/config's version line
	Members []viewMember `json:"members"`
}

// viewMember is one member in a members view.
type viewMember struct {
	ID    int    `json:"id"`
	Role  string `json:"role"`  // participant or observer, as the membership says
	Voter bool   `json:"voter"` // Raft counts it for quorum
}

// holds reports whether the view says member id holds role.
func (v membersView) holds(id int, role nemesis.Role) bool {
	for _, m := range v.Members {
		if m.ID == id {
			switch role {
			case nemesis.Observer:
				return m.Role == "observer" && !m.Voter
			case nemesis.Participant:
				return m.Role == "participant" && m.Voter
			}
			return false
		}
	}
	return role == nemesis.Out
}

// lists reports whether the view names member id.
func (v membersView) lists(id int) bool { return !v.holds(id, nemesis.Out) }

// newestMembership asks every running member for its members view and
// returns the newest (newestView).
func (c *procCluster) newestMembership(ctx context.Context, client *http.Client) (string, membersView, error) {
	var views []adminView
	var lastErr error
	for j, nd := range c.nodes {
		if nd.current() == nil || c.isPaused(j) {
			continue
		}
		v, err := procMembers(ctx, client, nd.adminAddr)
		if err != nil {
			lastErr = err
			continue
		}
		views = append(views, adminView{node: j + 1, admin: nd.adminAddr, view: v})
	}
	best, err := newestView(views)
	if err != nil && lastErr != nil {
		err = fmt.Errorf("%w (and %v)", err, lastErr)
	}
	return best.admin, best.view, err
}

// adminView is one node's members view, and where it was read.
type adminView struct {
	node  int
	admin string
	view  membersView
}

// newestView returns the view whose membership is the newest (the
// highest version: each is a reconfig's zxid). A node whose view does not
// name it is left out: removed, it hears the membership no more.
func newestView(views []adminView) (adminView, error) {
	var best adminView
	var newest uint64
	found := false
	for _, v := range views {
		version, err := strconv.ParseUint(v.view.Version, 16, 64)
		if err != nil || !v.view.lists(v.node) {
			continue
		}
		if !found || version > newest {
			best, newest, found = v, version, true
		}
	}
	if !found {
		return adminView{}, errors.New("no running node is a member with a readable membership")
	}
	return best, nil
}

// procMembers reads the members view at admin.
func procMembers(ctx context.Context, client *http.Client, admin string) (membersView, error) {
	var v membersView
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/commands/members", nil)
	if err != nil {
		return v, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&v)
	return v, err
}

// procChange sends a membership change to admin with the token.
func procChange(ctx context.Context, client *http.Client, method, admin string, body map[string]any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, "http://"+admin+"/commands/members", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+procAdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var msg bytes.Buffer
		_, _ = msg.ReadFrom(resp.Body)
		return fmt.Errorf("%s /commands/members: %s %s", method, resp.Status, msg.String())
	}
	return nil
}

// TestNewestMembershipView: SetRole judges by the newest membership a
// member has applied, not the first member's. The seed-49 case: node 1,
// just restarted from an old snapshot, says node 3 is a voting
// participant; node 2 has applied the reconfig that made it an observer.
func TestNewestMembershipView(t *testing.T) {
	view := func(version string, role3 string, voter3 bool, ids ...int) membersView {
		var v membersView
		v.Version = version
		for _, id := range ids {
			m := viewMember{ID: id, Role: "participant", Voter: true}
			if id == 3 {
				m.Role, m.Voter = role3, voter3
			}
			v.Members = append(v.Members, m)
		}
		return v
	}
	staleNode1 := adminView{node: 1, admin: "a1", view: view("1", "participant", true, 1, 2, 3)}
	node2 := adminView{node: 2, admin: "a2", view: view("2a63f", "observer", false, 1, 2, 3)}
	removedNode2 := adminView{node: 2, admin: "a2", view: view("2a700", "participant", true, 1, 3)}
	for _, tc := range []struct {
		name      string
		views     []adminView
		admin     string
		holds     nemesis.Role
		holdsNot  nemesis.Role
		wantError bool
	}{
		{"a stale member first", []adminView{staleNode1, node2}, "a2", nemesis.Observer, nemesis.Participant, false},
		{"a stale member last", []adminView{node2, staleNode1}, "a2", nemesis.Observer, nemesis.Participant, false},
		{"a removed member is left out", []adminView{staleNode1, removedNode2}, "a1", nemesis.Participant, nemesis.Out, false},
		{"no member", []adminView{removedNode2}, "", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newestView(tc.views)
			if (err != nil) != tc.wantError {
				t.Fatalf("error %v, want one: %v", err, tc.wantError)
			}
			if err != nil {
				return
			}
			if got.admin != tc.admin || !got.view.holds(3, tc.holds) || got.view.holds(3, tc.holdsNot) {
				t.Errorf("chose %s (version %s): node 3 %s %v, %s %v; want %s, %s and not %s",
					got.admin, got.view.Version, tc.holds, got.view.holds(3, tc.holds), tc.holdsNot, got.view.holds(3, tc.holdsNot), tc.admin, tc.holds, tc.holdsNot)
			}
		})
	}
}
