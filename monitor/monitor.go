package monitor

import (
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Monitor serves a Source's state to operators: four-letter words
// (Answer), AdminServer commands (AdminHandler) and metrics (Metrics,
// served by a MetricsProvider).
type Monitor struct {
	src Source
	cfg Config
	// words are the four-letter words answered (the resolved whitelist),
	// and enabled the same, sorted.
	words   map[string]bool
	enabled []string
	// byWord and byName index the registry.
	byWord map[string]*command
	byName map[string]*command
	// snaps are the live view's shared snapshots, hub its trace streams,
	// pages the panels it rendered.
	snaps sharedSnapshots
	hub   traceHub
	pages atomic.Int64
	// replayWin is the trace's window as replays read it (replay.go),
	// guarded by replayMu.
	replayMu  sync.Mutex
	replayWin *replayWindow
}

// DefaultFourLetterWords are the words answered by default on a client
// port reachable from other hosts: health and version checks that reveal
// no session, path or environment detail and cost nothing to answer.
var DefaultFourLetterWords = []string{"ruok", "srvr", "isro"}

// notServingText is ZooKeeper's answer to most words while the server
// cannot serve clients (here: an ensemble member that knows no leader).
const notServingText = "This ZooKeeper instance is not currently serving requests\n"

// Config is how a Monitor behaves; what it reports comes from its Source.
type Config struct {
	// FourLetterWords lists the words answered, as 4lw.commands.whitelist
	// does ("*" for all); srvr always answers, as in ZooKeeper, where
	// zkServer.sh relies on it. Nil takes the default: every word when
	// ListenAddr is loopback only, otherwise DefaultFourLetterWords.
	FourLetterWords []string
	// ListenAddr is the client port's configured address.
	ListenAddr string
	// AdminToken, when set, lets an admin request carrying
	// "Authorization: Bearer <token>" change the membership; without it
	// membership changes are refused. The live view and the trace on a
	// non-loopback address require it too (UIHandler).
	AdminToken string
	// AdminAddr is the admin port's configured address: AdminHandler
	// serves the live view there, as UIHandler(AdminAddr).
	AdminAddr string
	// MaxMemberID is the largest member id a membership change may name.
	MaxMemberID uint64
	// Logger receives the HTTP listeners' errors; slog.Default() when nil.
	Logger *slog.Logger
}

// New returns a Monitor of src.
func New(src Source, cfg Config) *Monitor {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Monitor{src: src, cfg: cfg, byWord: map[string]*command{}, byName: map[string]*command{}}
	for i := range registry {
		c := &registry[i]
		if c.word != "" {
			m.byWord[c.word] = c
		}
		if c.change == nil {
			for _, n := range c.names {
				m.byName[n] = c
			}
		}
	}
	m.words = m.whitelist()
	for w := range m.words {
		m.enabled = append(m.enabled, w)
	}
	slices.Sort(m.enabled)
	return m
}

// whitelist resolves the configured words: nil means every word on a
// loopback-only client port, DefaultFourLetterWords otherwise.
func (m *Monitor) whitelist() map[string]bool {
	list := m.cfg.FourLetterWords
	if list == nil {
		if loopbackOnly(m.cfg.ListenAddr) {
			list = []string{"*"}
		} else {
			list = DefaultFourLetterWords
		}
	}
	on := map[string]bool{"srvr": true} // zkServer.sh status relies on it
	for _, w := range list {
		w = strings.TrimSpace(w)
		if w == "*" {
			for word := range m.byWord {
				on[word] = true
			}
			continue
		}
		on[w] = true
	}
	return on
}

// loopbackOnly reports whether addr's host can be reached only from this
// machine.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsWord reports whether word is one of the four-letter words a raw
// connection may send instead of a handshake.
func (m *Monitor) IsWord(word string) bool { return m.byWord[word] != nil }

// Answer is the reply to a four-letter word: ZooKeeper's text, its
// refusal of a word left off the whitelist, or "" for no word at all.
func (m *Monitor) Answer(word string) string {
	cmd := m.byWord[word]
	if cmd == nil {
		return ""
	}
	if !m.words[word] {
		return word + " is not executed because it is not in the whitelist.\n"
	}
	v := m.take(cmd.needs)
	if cmd.serving && !v.Serving {
		if cmd.idleText != "" {
			return cmd.idleText
		}
		return notServingText
	}
	if cmd.do != nil {
		cmd.do(m.src)
	}
	var b strings.Builder
	cmd.text(&b, v)
	return b.String()
}

// take reads the snapshot one request renders from.
func (m *Monitor) take(parts Parts) *view {
	return &view{Snapshot: m.src.Snapshot(parts), words: m.enabled}
}
