package server

import (
	"context"
	"fmt"
	"time"

	"github.com/hutchzk/hutch/internal/nemesis"
	"github.com/hutchzk/hutch/membership"
)

// SetRole changes node i's place in the membership by the operator's
// reconfig, through whichever running node belongs, until the membership
// applied there says i holds role (nemesis.Reconfigurer).
func (c *inprocCluster) SetRole(ctx context.Context, i int, role nemesis.Role) error {
	id := uint64(i + 1)
	var last error
	for {
		for j := range c.nodes {
			s := c.server(j)
			if s == nil {
				continue
			}
			members := s.Replication().Members
			if _, in := members.Member(uint64(j + 1)); !in {
				continue // removed: it hears the membership no more
			}
			m, in := members.Member(id)
			switch {
			case role == nemesis.Out && !in,
				role == nemesis.Observer && in && m.Role == membership.Observer,
				role == nemesis.Participant && in && m.Role == membership.Participant:
				return nil
			}
			attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
			if role == nemesis.Out {
				_, last = s.RemoveMembers(attempt, id)
			} else {
				line := fmt.Sprintf("server.%d=%s:0:%s", id, c.nodes[i].cfg.Raft.RaftAddr, role)
				_, last = s.Reconfigure(attempt, []string{line}, nil)
			}
			cancel()
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d still not %s: %w (last reconfig: %v)", i+1, role, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond): // between tries, and for the change to apply
		}
	}
}
