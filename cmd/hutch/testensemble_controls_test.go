package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestTestEnsembleControls: the controls TestTestEnsemble does not use,
// each shown by its effect, with --clock fake: /members lists each
// member at its connect-string address with its role and the leader it
// names; a paused member answers nothing until resumed; a member's
// shaped link slows its clients; /drop?member=N disconnects its clients,
// who come back with their sessions; the leader cut off one way from
// both followers loses its place; /advance moves the fake clock past a
// connected client's session timeout, which expires it.
func TestTestEnsembleControls(t *testing.T) {
	e := startTestEnsemble(t, "--nodes", "3", "--listen", "127.0.0.1:0", "--election-timeout", "500ms", "--clock", "fake")
	lead := e.leader()
	type member struct {
		Member          float64
		Address, Role   string
		Running, Paused bool
		Leader          float64
	}
	members := func() []member {
		var out []member
		for _, m := range e.ok("GET", "/members")["members"].([]any) {
			m := m.(map[string]any)
			out = append(out, member{m["member"].(float64), m["address"].(string), m["role"].(string),
				m["running"].(bool), m["paused"].(bool), m["leader"].(float64)})
		}
		return out
	}
	waitFor(t, "every member to name the leader", func() bool {
		for _, m := range members() {
			if int(m.Leader) != lead {
				return false
			}
		}
		return true
	})
	for i, m := range members() {
		if int(m.Member) != i+1 || m.Address != e.addrs[i] || !m.Running || m.Paused ||
			(m.Role == "leader") != (i+1 == lead) {
			t.Fatalf("/members[%d] = %+v; the leader is %d, the connect string %v", i, m, lead, e.addrs)
		}
	}

	// A client of one follower alone.
	f := lead%3 + 1
	c, events, err := zk.Connect([]string{e.addrs[f-1]}, 4*time.Second, zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "a session on member "+itoa(f), func() bool { return c.State() == zk.StateHasSession })
	id := c.SessionID()

	e.ok("POST", "/pause?member="+itoa(f))
	if m := members()[f-1]; !m.Paused {
		t.Fatalf("/members after /pause: %+v", m)
	}
	read := make(chan error, 1)
	go func() { _, _, err := c.Exists("/"); read <- err }()
	select {
	case err := <-read:
		t.Fatalf("a paused member answered: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	e.ok("POST", "/resume?member="+itoa(f))
	if err := <-read; err != nil {
		t.Fatalf("the read after /resume: %v", err)
	}

	e.ok("POST", "/link?member="+itoa(f)+"&delay=150ms")
	start := time.Now()
	if _, _, err := c.Exists("/"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("a read through member %d, its link delayed 150ms each way, took %v", f, took)
	}
	e.ok("POST", "/link?member="+itoa(f))

	drain := func() {
		for {
			select {
			case <-events:
			default:
				return
			}
		}
	}
	drain()
	if n := e.ok("POST", "/drop?member="+itoa(f))["dropped"].(float64); n < 1 {
		t.Fatalf("/drop?member=%d dropped %v connections", f, n)
	}
	for disconnected := false; ; {
		select {
		case ev := <-events:
			disconnected = disconnected || ev.State == zk.StateDisconnected
			if disconnected && ev.State == zk.StateHasSession {
				goto back
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no disconnect and reconnect after /drop")
		}
	}
back:
	if c.SessionID() != id {
		t.Fatalf("session %x after /drop, was %x", c.SessionID(), id)
	}

	others := []int{f, (lead+1)%3 + 1}
	for _, o := range others {
		e.ok("POST", "/cut?from="+itoa(lead)+"&to="+itoa(o))
	}
	if next := e.leader(); next == lead {
		t.Fatalf("/leader = %d, cut off from both followers", lead)
	}
	e.ok("POST", "/heal")
	e.ok("GET", "/leader?wait=30s")

	drain()
	before := e.ok("GET", "/members")
	adv := e.ok("POST", "/advance?by=1m")
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateExpired {
				return
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no expiry after /advance?by=1m past a 4s session timeout: %v; /sessions %v; before %v; after %v", adv, e.ok("GET", "/sessions"), before, e.ok("GET", "/members"))
		}
	}
}

// TestTestEnsembleMembership: /add-member starts a fourth member with a
// client port of its own and adds it as an observer, through which a
// client writes; a fifth joins as a participant; /remove-member takes the
// fourth out of the configuration again (it keeps running). /members
// lists every member at its address with its role.
func TestTestEnsembleMembership(t *testing.T) {
	e := startTestEnsemble(t, "--nodes", "3", "--listen", "127.0.0.1:0", "--election-timeout", "500ms")
	roles := func() []string {
		var out []string
		for i, m := range e.ok("GET", "/members")["members"].([]any) {
			m := m.(map[string]any)
			if int(m["member"].(float64)) != i+1 {
				t.Fatalf("/members[%d] is member %v", i, m["member"])
			}
			out = append(out, m["role"].(string)+" at "+m["address"].(string))
		}
		return out
	}

	added := e.ok("POST", "/add-member?observer=true")
	addr, _ := added["address"].(string)
	if added["added"] != 4.0 || !strings.HasPrefix(addr, "127.0.0.1:") || !strings.Contains(added["config"].(string), "server.4=") {
		t.Fatalf("/add-member?observer=true: %v", added)
	}
	waitFor(t, "member 4 to observe", func() bool {
		r := roles()
		return len(r) == 4 && r[3] == "observer at "+addr
	})
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	retry(t, "a write through the observer", func() error {
		_, err := c.Create("/via-observer", nil, 0, zk.WorldACL(zk.PermAll))
		if err == zk.ErrNodeExists {
			return nil
		}
		return err
	})

	if five := e.ok("POST", "/add-member"); five["added"] != 5.0 || five["observer"] != false {
		t.Fatalf("/add-member: %v", five)
	}
	waitFor(t, "member 5 to follow", func() bool {
		r := roles()
		return len(r) == 5 && (strings.HasPrefix(r[4], "follower at ") || strings.HasPrefix(r[4], "leader at "))
	})

	removed := e.ok("POST", "/remove-member?member=4")
	if removed["removed"] != 4.0 || strings.Contains(removed["config"].(string), "server.4=") ||
		!strings.Contains(removed["config"].(string), "server.5=") {
		t.Fatalf("/remove-member?member=4: %v", removed)
	}
	if status, body := e.call("POST", "/remove-member?member=9"); status != http.StatusNotFound {
		t.Fatalf("/remove-member?member=9: %d %v", status, body)
	}
}
