package monitor

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hutchzk/hutch/wire"
)

// What the live view's templates call. Every string from the tree (a
// path, a name, data) goes through show or text before html/template
// escapes it: bytes that are not UTF-8 and control characters become
// visible escapes (\xff, \n), so a page is always valid UTF-8 and a path
// reads as what it is. Links carry paths percent-encoded byte for byte,
// so a click reaches exactly the node shown.
var uiFuncs = template.FuncMap{
	"show":           show,
	"sid":            func(id int64) string { return "0x" + strconv.FormatInt(id, 16) },
	"zxid":           func(z int64) string { return "0x" + strconv.FormatInt(z, 16) },
	"ms":             unixMillis,
	"dur":            humanDuration,
	"epoch":          func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z") },
	"perms":          wire.PermString,
	"treeURL":        treeURL,
	"sessionURL":     sessionURL,
	"watchURL":       func(path string) string { return "/ui/watches?" + url.Values{"prefix": {path}}.Encode() },
	"add":            func(a, b int) int { return a + b },
	"bytes":          humanBytes,
	"ms2dur":         func(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond },
	"clock":          func(t time.Time) string { return t.Format("15:04:05") },
	"clip":           clip,
	"fitLabel":       fitLabel,
	"fitNodeName":    fitNodeName,
	"maxReplayNodes": func() int { return maxReplayNodes },
}

// show makes s readable as one line: valid UTF-8 printable text as it
// is, anything else as Go escapes (\x00, \n, \xff).
func show(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// dataText shows data as text: lines kept, other control characters and
// bytes that are not UTF-8 escaped.
func dataText(data []byte) string {
	var b strings.Builder
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, data[0])
		case r == '\n' || r == '\t' || unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		data = data[n:]
	}
	return b.String()
}

// dataFormats are the ways a node's data can be shown.
var dataFormats = []string{"text", "json", "hex"}

// dataFormat picks how to show data: as asked, or JSON if it parses,
// text if it is UTF-8, hex otherwise.
func dataFormat(asked string, data []byte) string {
	for _, f := range dataFormats {
		if f == asked {
			return f
		}
	}
	switch {
	case len(data) > 0 && json.Valid(data):
		return "json"
	case utf8.Valid(data):
		return "text"
	}
	return "hex"
}

// renderData shows data in format: JSON indented (or said not to be
// JSON), text, or a hex dump.
func renderData(format string, data []byte) string {
	switch format {
	case "json":
		var out bytes.Buffer
		if err := json.Indent(&out, data, "", "  "); err != nil {
			return "(not JSON: " + err.Error() + ")"
		}
		return dataText(out.Bytes())
	case "hex":
		return hex.Dump(data)
	}
	return dataText(data)
}

func unixMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// humanDuration rounds d for a person: 1.2s, 340ms, 3m20s.
func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + humanDuration(-d)
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// treeURL links to a node in the tree panel.
func treeURL(path string) string { return "/ui/tree?" + url.Values{"path": {path}}.Encode() }

// sessionURL links to a session in the sessions panel.
func sessionURL(id int64) string {
	return "/ui/sessions?" + url.Values{"session": {"0x" + strconv.FormatInt(id, 16)}}.Encode()
}

// parseSession reads a session id as written in the view (0x...) or in
// decimal; 0 for none or nonsense.
func parseSession(s string) int64 {
	s = strings.TrimSpace(s)
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		n, _ := strconv.ParseUint(h, 16, 64)
		return int64(n)
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// pageNumber reads the page parameter, from 0.
func pageNumber(q *uiRequest) int {
	n, err := strconv.Atoi(q.param("page"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// listPage is one page of a longer list.
type listPage[T any] struct {
	Items             []T
	Page, Pages       int
	Total             int
	Prev, Next        string // URLs; "" at either end
	FirstRow, LastRow int
}

// pageOf cuts page n (from 0) of size from items; link makes a page's URL.
func pageOf[T any](items []T, n, size int, link func(page int) string) listPage[T] {
	pages := max((len(items)+size-1)/size, 1)
	n = min(n, pages-1)
	from, to := n*size, min((n+1)*size, len(items))
	p := listPage[T]{Items: items[from:to], Page: n + 1, Pages: pages, Total: len(items), FirstRow: from + 1, LastRow: to}
	if n > 0 {
		p.Prev = link(n - 1)
	}
	if n+1 < pages {
		p.Next = link(n + 1)
	}
	return p
}

// mapPage turns a page's items into others.
func mapPage[T, U any](p listPage[T], f func(T) U) listPage[U] {
	out := listPage[U]{Items: make([]U, len(p.Items)), Page: p.Page, Pages: p.Pages, Total: p.Total,
		Prev: p.Prev, Next: p.Next, FirstRow: p.FirstRow, LastRow: p.LastRow}
	for i, x := range p.Items {
		out.Items[i] = f(x)
	}
	return out
}

// pageLink is the request's URL with another page number.
func pageLink(q *uiRequest) func(int) string {
	return func(n int) string {
		v := q.r.URL.Query()
		v.Del("fragment")
		v.Set("page", strconv.Itoa(n))
		return q.r.URL.Path + "?" + v.Encode()
	}
}

// humanBytes rounds a size for a person: 812 B, 3.4 KiB, 8.0 MiB.
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}
