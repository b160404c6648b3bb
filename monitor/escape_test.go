package monitor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
	"golang.org/x/net/html"

	"github.com/hutchzk/hutch/hutchtest"
	"github.com/hutchzk/hutch/monitor"
	"github.com/hutchzk/hutch/wire"
)

// Hostile names and data: markup, quotes of both kinds, an entity, a
// right-to-left override; data adds bytes that are not UTF-8 and control
// characters. ZooKeeper's paths cannot hold invalid UTF-8 (PathUtils
// refuses U+FFFD), so that comes in the view's own query parameters.
const (
	evilName = `"><img src=x onerror=alert(1)>'&amp;` + "\u202e"
	evilSeq  = `<script>alert(2)<-`
	evilData = "<script>alert(3)</script>\"'&\xff\xfe\x00\x1b[31m"
	// evilLabel is a contender's name in its node's data.
	evilLabel = `"></text><svg onload=alert(6)><text>`
	// evilShown is evilName as the view shows it: the override escaped.
	evilShown = `"><img src=x onerror=alert(1)>'&amp;\u202e`
)

// TestViewEscapes puts hostile paths, names and data in a real server's
// tree, sessions, watches, lock queues and trace, and asks every panel
// for them, with hostile query parameters too: every page is valid UTF-8;
// its only script is the view's own file, no element carries an event
// handler or a javascript: URL; the hostile text reads as text.
func TestViewEscapes(t *testing.T) {
	srv := hutchtest.Start(t)
	s := srv.Server()
	world := []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}
	parent := "/" + evilName
	for _, p := range []string{parent, parent + "/q"} {
		if err := s.CreateNode(p, []byte(evilData), world, wire.ModePersistent, 0); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := srv.Connect(10 * time.Second)
	if err := c.AddAuth("digest", []byte(`<b>"user":pw`)); err != nil {
		t.Fatal(err)
	}
	seq, err := c.Create(parent+"/q/"+evilSeq, []byte(evilData), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	// A contender whose data names it with markup: the lock diagram shows
	// names from the data.
	if _, err := c.Create(parent+"/q/"+evilSeq, []byte(evilLabel), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	w, _ := srv.Connect(10 * time.Second)
	if _, _, _, err := w.GetW(seq); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := w.ExistsW(parent + "/<gone>"); err != nil {
		t.Fatal(err)
	}
	view := monitor.New(s, monitor.Config{})
	h := view.UIHandler("127.0.0.1:0")

	hostile := []string{parent, seq, parent + "/q", "/\xff\xfe<script>", `"><svg onload=alert(4)>`}
	var pages []string
	for _, p := range []string{"tree", "sessions", "watches", "locks", "ensemble", "trace", "sequence"} {
		pages = append(pages, "/ui/"+p, "/ui/"+p+"?at=start", "/ui/"+p+"?at=3&rpath="+url.QueryEscape(parent))
		for _, v := range hostile {
			for _, param := range []string{"path", "find", "prefix", "session", "format", "after", "by", "rpath", "parent", "last"} {
				pages = append(pages, "/ui/"+p+"?"+url.Values{param: {v}}.Encode())
				// The same in a replay: the header's links carry them.
				pages = append(pages, "/ui/"+p+"?"+url.Values{param: {v}, "at": {"4"}}.Encode())
			}
		}
	}
	pages = append(pages, "/ui/sessions?session=0x"+strconv.FormatInt(c.SessionID(), 16),
		"/ui/tree?format=hex&path="+url.QueryEscape(seq), "/ui/tree?format=json&path="+url.QueryEscape(seq))
	seen := map[string]bool{}
	for _, page := range pages {
		req := httptest.NewRequest("GET", page, nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", page, rec.Code, body)
		}
		checkPage(t, page, body)
		text := pageText(body)
		for _, want := range []string{evilShown, evilSeq, `\xff\xfe`, `"user"`, evilLabel} {
			if strings.Contains(text, want) {
				seen[want] = true
			}
		}
	}
	for _, want := range []string{evilShown, evilSeq, `\xff\xfe`, `"user"`, evilLabel} {
		if !seen[want] {
			t.Errorf("no page shows %q as text", want)
		}
	}

	// The trace's JSON lines stay JSON and UTF-8 whatever the paths.
	live := httptest.NewServer(h)
	defer live.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", live.URL+"/trace?path="+url.QueryEscape(parent), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	// The stream's subscription begins a moment after its headers: write
	// until a line comes.
	var got atomic.Bool
	go func() {
		for ctx.Err() == nil && !got.Load() {
			if _, err := c.Set(parent, []byte(evilData), -1); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	line, err := lines.ReadBytes('\n')
	got.Store(true)
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if !utf8.Valid(line) || json.Unmarshal(line, &ev) != nil || ev["path"] != parent {
		t.Fatalf("trace line %q", line)
	}
}

// checkPage fails the test if a page is not valid UTF-8 or holds any
// script but the view's own, an event handler attribute or a script URL.
func checkPage(t *testing.T, page, body string) {
	t.Helper()
	if !utf8.ValidString(body) {
		t.Errorf("%s: not valid UTF-8", page)
	}
	z := html.NewTokenizer(strings.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Errorf("%s: %v", page, z.Err())
			}
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		switch tok.Data {
		case "script":
			if len(tok.Attr) != 2 || attr(tok, "src") != "/ui/static/app.js" || attr(tok, "defer") != "" {
				t.Errorf("%s: a script other than the view's: %v", page, tok)
			}
		case "img", "iframe", "object", "embed", "style", "base", "meta", "foreignobject", "use", "image", "animate", "set",
			"animatetransform", "animatemotion", "feimage", "handler", "listener":
			if tok.Data != "meta" || (attr(tok, "charset") == "" && attr(tok, "name") != "viewport") {
				t.Errorf("%s: unexpected element %v", page, tok)
			}
		case "svg":
			// The view's own pictures: each names its purpose.
			if attr(tok, "role") != "img" || attr(tok, "aria-label") == "" {
				t.Errorf("%s: an svg that is not one of the view's pictures: %v", page, tok)
			}
		}
		for _, a := range tok.Attr {
			key := strings.ToLower(a.Key)
			if strings.HasPrefix(key, "on") || key == "style" {
				t.Errorf("%s: event handler or style attribute %v", page, tok)
			}
			if v := strings.ToLower(strings.TrimSpace(a.Val)); strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "data:") {
				t.Errorf("%s: script URL in %v", page, tok)
			}
			if (key == "href" || key == "xlink:href") && !strings.HasPrefix(a.Val, "/") && !strings.HasPrefix(a.Val, "#") &&
				!strings.HasPrefix(a.Val, "http://127.0.0.1") && !strings.HasPrefix(a.Val, "?") {
				t.Errorf("%s: a link off the view: %v", page, tok)
			}
		}
	}
}

func attr(tok html.Token, key string) string {
	for _, a := range tok.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// pageText is the text a browser would show, entities decoded.
func pageText(body string) string {
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(body))
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		switch tt {
		case html.TextToken:
			b.Write(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			// Values of inputs count as shown text.
			tok := z.Token()
			if tok.Data == "input" {
				b.WriteString(attr(tok, "value"))
			}
		}
	}
	return b.String()
}
