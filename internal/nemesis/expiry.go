package nemesis

import (
	"errors"
	"fmt"
	"time"
)

// heardLog is, for every session a workload held, the last time its
// client heard from a server while it had that session.
type heardLog map[int64]time.Time

func (h heardLog) note(id int64, at time.Time) {
	if id != 0 && !at.IsZero() && at.After(h[id]) {
		h[id] = at
	}
}

// noteExpiries records the sessions a client was told had expired, as
// last heard at their silence before the telling.
func (h heardLog) noteExpiries(es []expiry) {
	for _, e := range es {
		if e.heard {
			h.note(e.id, e.at.Add(-e.silent))
		}
	}
}

// heardLog gathers, once the workloads have stopped, when each session's
// client last heard from a server.
func (r *runner) heardLog() heardLog {
	h := heardLog{}
	r.mu.Lock()
	for _, s := range r.sessions {
		h.noteExpiries(s.Expiries())
		id, at := s.LastHeard()
		h.note(id, at)
	}
	r.mu.Unlock()
	for _, w := range r.pipes {
		w.mu.Lock()
		h.noteExpiries(w.expiries)
		w.mu.Unlock()
		h.note(w.sess.id, time.Unix(0, w.heard.Load()))
	}
	r.churn.mu.Lock()
	h.noteExpiries(r.churn.expiries)
	for id, at := range r.churn.closed {
		h.note(id, at)
	}
	r.churn.mu.Unlock()
	return h
}

// answeredBound is how soon before a node expired a session its client
// may last have been answered. A follower vouches for a client only until
// a third of its timeout has passed without a report reaching the leader,
// which gives the session a whole timeout from the last report: an
// expiry less than a third of a timeout after the client's last answer
// means some server answered a client that the leader no longer heard,
// whatever the client did after (and however long it then took to be
// told). Such a client may hold a lock another has been given.
func (r *runner) answeredBound() time.Duration { return r.cfg.SessionTimeout / 3 }

// checkServerExpiries sets every session a node expired against the last
// time its client was answered.
func (r *runner) checkServerExpiries() {
	rep := r.rep
	exps, err := r.c.Expiries()
	if errors.Is(err, ErrUnsupported) {
		return
	}
	rep.ServerExpiriesChecked = true
	if err != nil {
		r.problem("read the nodes' expiries: %v", err)
		return
	}
	heard := r.heardLog()
	bound := r.answeredBound()
	for _, e := range exps {
		last, ours := heard[e.Session]
		if !ours {
			continue // a probe's, or a session whose client heard nothing
		}
		rep.ServerExpiries++
		if gap := e.At.Sub(last); gap < bound {
			rep.ExpiredWhileAnswered++
			if len(rep.Details) < 60 {
				rep.Details = append(rep.Details, fmt.Sprintf("session 0x%x expired by node %d at %s; its client was last answered at %s (%v before)",
					e.Session, e.Node, e.At.Format(clock), last.Format(clock), gap.Round(time.Millisecond)))
			}
		}
	}
}
