package monitor_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hutchzk/hutch/hutchtest"
	"github.com/hutchzk/hutch/monitor"
)

// TestEnsembleWideView: a follower's view of a lock whose contenders are
// connected through each of the three members shows every waiter's
// watch, gathered from the other members over their authenticated
// channel; the same view of that member alone cannot; and once a member
// stops answering, the view names it and says its waiter's watch is
// unknown.
func TestEnsembleWideView(t *testing.T) {
	e := hutchtest.StartEnsemble(t, 3)
	li := e.Leader()
	viewer, other := li%3+1, (li+1)%3+1 // members are numbered from 1
	view := httptest.NewServer(monitor.New(e.Member(viewer).Server(), monitor.Config{}).UIHandler("127.0.0.1:0"))
	t.Cleanup(view.Close)

	admin, _ := e.Member(li).Connect(10 * time.Second)
	if _, err := admin.Create("/q", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var prev string
	for _, i := range []int{li, other, viewer} {
		c, _ := e.Member(i).Connect(10 * time.Second)
		p, err := c.Create("/q/n-", []byte("via member"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		if prev != "" {
			if _, _, _, err := c.ExistsW(prev); err != nil {
				t.Fatal(err)
			}
		}
		prev = p
	}
	waits := func(query string) ([]string, string) {
		t.Helper()
		resp, err := http.Get(view.URL + "/ui/locks?fragment=1" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var got []string
		for _, m := range regexp.MustCompile(`data-wait="([a-z]+)"`).FindAllStringSubmatch(string(body), -1) {
			got = append(got, m[1])
		}
		return got, string(body)
	}
	eventually(t, "every waiter's watch, from every member", func() bool {
		got, body := waits("")
		return slices.Equal(got, []string{"none", "predecessor", "predecessor"}) && !strings.Contains(body, "did not answer")
	})
	if got, _ := waits("&scope=member"); !slices.Equal(got, []string{"elsewhere", "elsewhere", "predecessor"}) {
		t.Errorf("this member alone: %v, want the holder and the waiter through the others unknown", got)
	}

	// The other follower stops: the view says it did not answer, and
	// what only it knew is unknown.
	e.Kill(other)
	eventually(t, "the silent member named", func() bool {
		got, body := waits("")
		return slices.Equal(got, []string{"none", "elsewhere", "predecessor"}) && strings.Contains(body, "did not answer")
	})
}

// eventually polls cond until it holds, failing after 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 20s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
