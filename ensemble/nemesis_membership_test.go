package ensemble

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hutchzk/hutch/internal/nemesis"
)

// procAdminToken is the admin token the nemesis's processes take.
const procAdminToken = "nemesis admin token for membership changes"

// SetRole changes node i's place in the membership through the admin
// port's members command (a reconfig with the operator's authority) on
// whichever running node belongs, until that node's members command says
// i holds role (nemesis.Reconfigurer): absent for Out, not voting for
// Observer, voting for Participant.
func (c *procCluster) SetRole(ctx context.Context, i int, role nemesis.Role) error {
	client := &http.Client{Timeout: 3 * time.Second}
	id := i + 1
	var last error
	for {
		for j, nd := range c.nodes {
			if nd.current() == nil || c.isPaused(j) {
				continue
			}
			voter, in, err := procMember(ctx, client, nd.adminAddr, id)
			if err != nil {
				last = err
				continue
			}
			if _, self, _ := procMember(ctx, client, nd.adminAddr, j+1); !self {
				continue // removed: it hears the membership no more
			}
			switch {
			case role == nemesis.Out && !in, role == nemesis.Observer && in && !voter, role == nemesis.Participant && in && voter:
				return nil
			}
			method, body := http.MethodPost, map[string]any{"id": id, "addr": c.sw.Front(strconv.Itoa(id)), "role": role.String()}
			if role == nemesis.Out {
				method, body = http.MethodDelete, map[string]any{"id": id}
			}
			last = procChange(ctx, client, method, nd.adminAddr, body)
			break
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

// procMember reads whether member id is in the membership at admin, and
// whether it votes.
func procMember(ctx context.Context, client *http.Client, admin string, id int) (voter, in bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/commands/members", nil)
	if err != nil {
		return false, false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	var out struct {
		Members []struct {
			ID    int  `json:"id"`
			Voter bool `json:"voter"`
		} `json:"members"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return false, false, err
	}
	for _, m := range out.Members {
		if m.ID == id {
			return m.Voter, true, nil
		}
	}
	return false, false, nil
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
