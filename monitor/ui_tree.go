package monitor

import (
	"net/url"
	"strings"
	"time"
)

// The tree panel: one node (Stat, kind, ACL, data as text, JSON or hex)
// and a page of its children, read from the source as an anonymous
// client would, a node and a page at a time, so a node with 100,000
// children costs a page.

// childrenPerPage is how many children the tree panel lists at once.
const childrenPerPage = 100

// dataShown is how much of a node's data the tree panel shows.
const dataShown = 64 << 10

var _ = addPanel(panel{
	name: "tree", title: "Tree", order: 10, refresh: 2 * time.Second,
	data: treeData,
	tmpl: `{{define "tree.controls"}}<form class="controls" method="get" action="/ui/tree">
<label>Path <input name="path" value="{{show .Path}}" size="40"></label>
<label>Children starting with <input name="find" value="{{show .Find}}" size="16"></label>
<button>Go</button></form>{{end}}
{{define "tree"}}<p class="crumbs">{{range $i, $c := .Crumbs}}{{if $i}} / {{end}}<a href="{{treeURL $c.Path}}">{{show $c.Name}}</a>{{end}}</p>
{{if .Replayed}}<p class="note">Replayed: the node, its data and owner and its children as they were; the Stat is not kept.{{if .Partial}} The replay tracked the first {{maxReplayNodes}} nodes under this path only.{{end}}</p>{{end}}
{{if .Missing}}<p class="warn">No node at {{show .Path}}{{if .Replayed}} at that point{{end}}.</p>{{else}}
<section class="node">
<h2>{{show .Path}} <span class="kind">{{.Kind}}</span></h2>
{{if .Replayed}}{{with .Node.Stat}}{{if .EphemeralOwner}}<p>ephemeralOwner <a href="{{sessionURL .EphemeralOwner}}">{{sid .EphemeralOwner}}</a></p>{{end}}{{end}}
{{else}}{{with .Node.Stat}}<table class="stat">
<tr><th>czxid</th><td>{{zxid .Czxid}}</td><th>ctime</th><td>{{epoch .Ctime}}</td></tr>
<tr><th>mzxid</th><td>{{zxid .Mzxid}}</td><th>mtime</th><td>{{epoch .Mtime}}</td></tr>
<tr><th>pzxid</th><td>{{zxid .Pzxid}}</td><th>version</th><td>{{.Version}}</td></tr>
<tr><th>cversion</th><td>{{.Cversion}}</td><th>aversion</th><td>{{.Aversion}}</td></tr>
<tr><th>dataLength</th><td>{{.DataLength}}</td><th>numChildren</th><td>{{.NumChildren}}</td></tr>
<tr><th>ephemeralOwner</th><td colspan="3">{{if .EphemeralOwner}}<a href="{{sessionURL .EphemeralOwner}}">{{sid .EphemeralOwner}}</a>{{else}}0x0{{end}}</td></tr>
</table>{{end}}{{end}}
{{if .Node.TTL}}<p>TTL {{dur .Node.TTL}}: deleted, once childless, <span data-deadline="{{ms .TTLDue}}">in {{dur .TTLLeft}}</span> unless it changes.</p>{{end}}
{{if .Node.Container}}<p>Container: deleted once its last child goes.</p>{{end}}
<p><a href="{{watchURL .Path}}">Watches on and below this node</a></p>
{{if .Node.Readable}}
<h3>ACL</h3><ul class="acl">{{range .Node.ACL}}<li>{{show .ID.Scheme}}:{{show .ID.ID}} <code>{{perms .Perms}}</code></li>{{end}}</ul>
<h3>Data <span class="formats">{{range .Formats}}{{if .Here}}<b>{{.Name}}</b>{{else}}<a href="{{.URL}}">{{.Name}}</a>{{end}} {{end}}</span></h3>
{{if .Truncated}}<p class="note">The first {{.Shown}} bytes of {{.Node.Stat.DataLength}}.</p>{{end}}
{{if .Node.Data}}<pre class="data">{{.Data}}</pre>{{else}}<p class="note">No data.</p>{{end}}
{{else}}<p class="note">The world may not read this node: its data and ACL are not shown.</p>{{end}}
</section>
<section class="children">
<h3>Children ({{.Node.Stat.NumChildren}}){{if .Find}} starting with “{{show .Find}}”{{end}}</h3>
{{if .ChildErr}}<p class="note">{{.ChildErr}}</p>{{end}}
<ul class="children">{{range .Children}}<li><a href="{{treeURL .Path}}" title="{{show .Name}}">{{show .Name}}</a></li>{{end}}</ul>
<p class="pager">{{if .First}}<a href="{{.First}}">first page</a> {{end}}{{if .Next}}<a href="{{.Next}}" rel="next">next page</a>{{end}}</p>
</section>{{end}}{{end}}`,
})

// treeView is what the tree panel shows.
type treeView struct {
	// Replayed is set for the tree as a replay shows it: names, data and
	// owners, no Stat.
	Replayed   bool
	Partial    bool // the replay tracked only part of the subtree
	Path, Find string
	Crumbs     []pathLink
	Missing    bool
	Node       Node
	Kind       string
	TTLDue     time.Time
	TTLLeft    time.Duration
	Formats    []formatLink
	Data       string
	Truncated  bool
	Shown      int
	Children   []pathLink
	ChildErr   string
	First      string // URL of the first page, when past it
	Next       string // URL of the next page, if any
}

type pathLink struct{ Name, Path string }

type formatLink struct {
	Name, URL string
	Here      bool
}

func treeData(q *uiRequest) (any, error) {
	path := q.param("path")
	if path == "" {
		path = "/"
	}
	tv := &treeView{Path: path, Find: q.param("find"), Crumbs: crumbs(path)}
	if q.replay != nil {
		return replayedTree(q, tv), nil
	}
	n, err := q.src.Node(path)
	if err != nil {
		tv.Missing = true
		return tv, nil
	}
	tv.Node = n
	tv.Kind = nodeKind(n)
	if n.TTL > 0 {
		tv.TTLDue = time.UnixMilli(n.Stat.Mtime).Add(n.TTL)
		tv.TTLLeft = tv.TTLDue.Sub(q.v.Taken)
	}
	if n.Readable {
		data := n.Data
		if len(data) > dataShown {
			data, tv.Truncated, tv.Shown = data[:dataShown], true, dataShown
		}
		format := dataFormat(q.param("format"), data)
		for _, f := range dataFormats {
			v := q.r.URL.Query()
			v.Del("fragment")
			v.Set("format", f)
			tv.Formats = append(tv.Formats, formatLink{Name: f, URL: "/ui/tree?" + v.Encode(), Here: f == format})
		}
		tv.Data = renderData(format, data)
	}
	tv.Children, tv.Next, err = childPage(q.src, path, tv.Find, q.param("after"), func(after string) string {
		v := url.Values{"path": {path}, "after": {after}}
		if tv.Find != "" {
			v.Set("find", tv.Find)
		}
		return "/ui/tree?" + v.Encode()
	})
	if err != nil {
		tv.ChildErr = "The world may not list this node's children."
	}
	if q.param("after") != "" {
		v := url.Values{"path": {path}}
		if tv.Find != "" {
			v.Set("find", tv.Find)
		}
		tv.First = "/ui/tree?" + v.Encode()
	}
	return tv, nil
}

// replayedTree is the tree panel at a replay point: the node's data and
// owner and its children, as they were.
func replayedTree(q *uiRequest, tv *treeView) *treeView {
	tv.Replayed = true
	st := q.state(tv.Path)
	tv.Partial = st.truncated
	n := st.nodes[tv.Path]
	if n == nil {
		tv.Missing = true
		return tv
	}
	tv.Node = Node{Path: tv.Path, Readable: true, Data: n.data}
	tv.Node.Stat.EphemeralOwner = n.owner
	tv.Kind = nodeKind(tv.Node)
	tv.Data = renderData(dataFormat(q.param("format"), n.data), n.data)
	for _, name := range st.children(tv.Path) {
		if strings.HasPrefix(name, tv.Find) {
			tv.Children = append(tv.Children, pathLink{Name: name, Path: joinPath(tv.Path, name)})
		}
	}
	tv.Node.Stat.NumChildren = int32(len(tv.Children))
	return tv
}

// childPage reads a page of path's children after after, only those
// whose names start with find if it is set, and the next page's URL.
func childPage(src Source, path, find, after string, next func(after string) string) ([]pathLink, string, error) {
	var names []string
	if find != "" && after == "" {
		// Children lists names after a given one: find itself comes
		// first if it exists, then those sorting after it.
		if _, err := src.Node(joinPath(path, find)); err == nil {
			names = append(names, find)
		}
		after = find
	}
	page, err := src.Children(path, after, childrenPerPage+1-len(names))
	if err != nil {
		return nil, "", err
	}
	names = append(names, page...)
	more := len(names) > childrenPerPage
	if find != "" {
		for i, name := range names {
			if !strings.HasPrefix(name, find) {
				names, more = names[:i], false
				break
			}
		}
	}
	names = names[:min(len(names), childrenPerPage)]
	out := make([]pathLink, len(names))
	for i, name := range names {
		out[i] = pathLink{Name: name, Path: joinPath(path, name)}
	}
	nextURL := ""
	if more {
		nextURL = next(names[len(names)-1])
	}
	return out, nextURL, nil
}

// crumbs are the links to path and each of its ancestors.
func crumbs(path string) []pathLink {
	out := []pathLink{{Name: "/", Path: "/"}}
	if path == "/" || !strings.HasPrefix(path, "/") {
		return out
	}
	for i := 1; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			out = append(out, pathLink{Name: path[strings.LastIndexByte(path[:i], '/')+1 : i], Path: path[:i]})
		}
	}
	return out
}

// nodeKind names a node's kind, and sequential if its name ends as a
// sequential node's does.
func nodeKind(n Node) string {
	kind := "persistent"
	switch {
	case n.Stat.EphemeralOwner != 0:
		kind = "ephemeral"
	case n.Container:
		kind = "container"
	case n.TTL > 0:
		kind = "TTL"
	}
	if _, name := splitPath(n.Path); n.Path != "/" {
		if _, ok := sequenceOf(name); ok {
			kind += " sequential"
		}
	}
	return kind
}
