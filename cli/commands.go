package cli

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
)

// command is one command of the shell. run is nil for the shell's own
// commands (quit, history, redo, printwatches, connect), which process
// handles itself; it gets the command's usage line and its words.
type command struct {
	usage  string // zkCli's option summary
	run    func(s *session, usage string, words []string) error
	hidden bool // a zkCli command hutch cli does not offer, left out of usage
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"addWatch":             {usage: "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE", run: runAddWatch},
		"addauth":              {usage: "scheme auth", run: runAddAuth},
		"close":                {usage: "", run: runClose},
		"config":               {usage: "[-c] [-w] [-s]", run: runConfig},
		"connect":              {usage: "host:port"},
		"create":               {usage: "[-s] [-e] [-c] [-t ttl] path [data] [acl]", run: runCreate},
		"delete":               {usage: "[-v version] path", run: runDelete},
		"deleteall":            {usage: "path [-b batch size]", run: runDeleteAll},
		"dump":                 {usage: dumpUsage, run: runDump},
		"delquota":             {usage: "[-n|-b|-N|-B] path", run: runDelQuota},
		"get":                  {usage: "[-s] [-w] path", run: runGet},
		"getAcl":               {usage: "[-s] path", run: runGetACL},
		"getAllChildrenNumber": {usage: "path", run: runAllChildrenNumber},
		"getEphemerals":        {usage: "path", run: runEphemerals},
		"history":              {usage: ""},
		"load":                 {usage: loadUsage, run: runLoad},
		"listquota":            {usage: "path", run: runListQuota},
		"ls":                   {usage: "[-s] [-w] [-R] path", run: runLs},
		"printwatches":         {usage: "on|off"},
		"quit":                 {usage: ""},
		"reconfig":             {usage: reconfigUsage, run: runReconfig},
		"redo":                 {usage: "cmdno"},
		"set":                  {usage: "[-s] [-v version] path data", run: runSet},
		"setAcl":               {usage: "[-s] [-v version] [-R] path acl", run: runSetACL},
		"setquota":             {usage: "-n|-b|-N|-B val path", run: runSetQuota},
		"stat":                 {usage: "[-w] path", run: runStat},
		"sync":                 {usage: "path", run: runSync},
		"version":              {usage: "", run: runVersion},
		"watch":                {usage: "[-R] [-n count] path # stream the events of a persistent (-R: recursive) watch until interrupted, stdin ends, or count events", run: runWatch},
		"whoami":               {usage: "", run: runWhoAmI},
	}
	for _, name := range []string{"removewatches"} {
		name := name
		commands[name] = command{hidden: true, run: func(*session, string, []string) error {
			return fail(name + " is not supported by hutch cli")
		}}
	}
}

// options parses words for spec, turning a parse error into zkCli's
// message for it.
func options(spec string, words []string) (*cmdLine, error) {
	cl, err := parseOptions(spec, words)
	if err != nil {
		return nil, fail(err.Error())
	}
	return cl, nil
}

// parseArgs is options for a command that needs at least min words, its
// name included; with fewer it fails with the command's usage, as zkCli's
// CliParseException.
func parseArgs(spec string, words []string, min int, usage string) (*cmdLine, error) {
	cl, err := options(spec, words)
	if err == nil && len(cl.args) < min {
		err = fail(usage)
	}
	return cl, err
}

// printStat prints st alone.
func (s *session) printStat(st wire.Stat) {
	var b strings.Builder
	printStat(&b, st, time.Local)
	s.printOut(b.String())
}

// deprecatedWatch handles zkCli's old "cmd path watch" form: with a third
// word, zkCli warns, replaces the third word of the command line (not of
// its arguments) with -w and parses again.
func deprecatedWatch(s *session, spec, warning string, words []string, cl *cmdLine) (*cmdLine, error) {
	if len(cl.args) <= 2 {
		return cl, nil
	}
	words = append([]string(nil), words...)
	words[2] = "-w"
	s.printErr(warning + "\n")
	return options(spec, words)
}

// intValue parses a version or count as Java's Integer.parseInt.
func intValue(s string) (int32, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil
}

// version reads a -v value. zkCli dies of the NumberFormatException; hutch
// cli reports it.
func version(cl *cmdLine) (int32, error) {
	if !cl.has('v') {
		return -1, nil
	}
	v, ok := intValue(cl.value('v'))
	if !ok {
		return 0, fail("-v argument must be an int value")
	}
	return v, nil
}

const lsHelp = "usage: ls [options] path\n -?   help\n -R   recurse\n -s   stat\n -w   watch\n"

func runLs(s *session, usage string, words []string) error {
	const spec = "?swR"
	cl, err := options(spec, words)
	if err != nil {
		return err
	}
	if cl.has('?') {
		s.printOut(lsHelp)
	}
	if cl, err = deprecatedWatch(s, spec, "'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead.", words, cl); err != nil {
		return err
	}
	if len(cl.args) < 2 {
		return fail(usage)
	}
	path, watch := cl.args[1], cl.has('w')
	if cl.has('R') {
		return s.visit(path, watch, func(p string) { s.printOut(p + "\n") })
	}
	var children []string
	var st wire.Stat
	if cl.has('s') {
		children, st, err = s.zk.ChildrenStat(path, watch)
	} else {
		children, err = s.zk.Children(path, watch)
	}
	if err != nil {
		return wrap(err)
	}
	sort.Strings(children)
	var b strings.Builder
	b.WriteString(javaList(children) + "\n")
	if cl.has('s') {
		printStat(&b, st, time.Local)
	}
	s.printOut(b.String())
	return nil
}

// visit calls fn with path and then every node below it, depth first with
// each node's children sorted and listed before their own subtrees, as
// ZKUtil.visitSubTreeDFS (ls -R, setAcl -R). A node deleted meanwhile is
// skipped.
func (s *session) visit(path string, watch bool, fn func(string)) error {
	if _, _, err := s.zk.Get(path, watch); err != nil {
		return wrap(err)
	}
	fn(path)
	var below func(p string) error
	below = func(p string) error {
		children, err := s.zk.Children(p, watch)
		if zkclient.IsCode(err, wire.CodeNoNode) {
			return nil
		}
		if err != nil {
			return wrap(err)
		}
		sort.Strings(children)
		prefix := p + "/"
		if p == "/" {
			prefix = "/"
		}
		for _, c := range children {
			fn(prefix + c)
		}
		for _, c := range children {
			if err := below(prefix + c); err != nil {
				return err
			}
		}
		return nil
	}
	return below(path)
}

func runGet(s *session, usage string, words []string) error {
	const spec = "sw"
	cl, err := parseArgs(spec, words, 2, usage)
	if err != nil {
		return err
	}
	if cl, err = deprecatedWatch(s, spec, "'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead.", words, cl); err != nil {
		return err
	}
	data, st, err := s.zk.Get(cl.args[1], cl.has('w'))
	if err != nil {
		return wrap(err)
	}
	s.printData(data, st, cl.has('s'))
	return nil
}

// printData prints data as zkCli's get: "null" for none, then the Stat
// if asked for.
func (s *session) printData(data []byte, st wire.Stat, withStat bool) {
	var b strings.Builder
	if data == nil {
		b.WriteString("null\n")
	} else {
		b.WriteString(javaString(data) + "\n")
	}
	if withStat {
		printStat(&b, st, time.Local)
	}
	s.printOut(b.String())
}

func runStat(s *session, usage string, words []string) error {
	const spec = "w"
	cl, err := parseArgs(spec, words, 2, usage)
	if err != nil {
		return err
	}
	if cl, err = deprecatedWatch(s, spec, "'stat path [watch]' has been deprecated. Please use 'stat [-w] path' instead.", words, cl); err != nil {
		return err
	}
	st, err := s.zk.Exists(cl.args[1], cl.has('w'))
	if err != nil {
		return wrap(err)
	}
	s.printStat(st)
	return nil
}

// openACL is ZooDefs.Ids.OPEN_ACL_UNSAFE, the ACL of a create without one.
var openACL = []wire.ACL{{Perms: wire.PermAll, ID: wire.ID{Scheme: "world", ID: "anyone"}}}

func runCreate(s *session, usage string, words []string) error {
	cl, err := parseArgs("esct:", words, 2, usage)
	if err != nil {
		return err
	}
	e, seq, container, withTTL := cl.has('e'), cl.has('s'), cl.has('c'), cl.has('t')
	if container && (e || seq) {
		return fail("-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.")
	}
	var ttl int64
	if withTTL {
		if ttl, err = strconv.ParseInt(cl.value('t'), 10, 64); err != nil {
			return fail("-t argument must be a long value")
		}
	}
	if withTTL && e {
		return fail("TTLs cannot be used with Ephemeral znodes")
	}
	if withTTL && container {
		return fail("TTLs cannot be used with Container znodes")
	}
	var flags int32
	switch {
	case e && seq:
		flags = wire.ModeEphemeralSequential
	case e:
		flags = wire.ModeEphemeral
	case seq && withTTL:
		flags = wire.ModePersistentSequentialWithTTL
	case seq:
		flags = wire.ModePersistentSequential
	case container:
		flags = wire.ModeContainer
	case withTTL:
		flags = wire.ModePersistentWithTTL
	}
	if withTTL {
		if err := zkclient.ValidateTTL(ttl); err != nil {
			return fail(err.Error())
		}
	}
	path := cl.args[1]
	var data []byte
	if len(cl.args) > 2 {
		data = []byte(cl.args[2])
	}
	acl := openACL
	if len(cl.args) > 3 {
		acl = parseACL(cl.args[3], func(m string) { s.printErr(m + "\n") })
	}
	created, err := s.zk.Create(path, data, acl, flags, ttl)
	if err != nil {
		var ke *zkclient.Error
		if zkclient.IsCode(err, wire.CodeEphemeralOnLocalSession) {
			s.printErr("Unable to create ephemeral node on a local session\n")
		} else if zkclient.IsCode(err, wire.CodeInvalidACL) && errors.As(err, &ke) {
			s.printErr(keeperMessage(ke) + "\n")
		}
		return wrap(err)
	}
	s.printErr("Created " + created + "\n")
	return nil
}

func runSet(s *session, usage string, words []string) error {
	cl, err := parseArgs("sv:", words, 3, usage)
	if err != nil {
		return err
	}
	v, err := version(cl)
	if err != nil {
		return err
	}
	st, err := s.zk.Set(cl.args[1], []byte(cl.args[2]), v)
	if err != nil {
		return wrap(err)
	}
	if cl.has('s') {
		s.printStat(st)
	}
	return nil
}

func runDelete(s *session, usage string, words []string) error {
	cl, err := parseArgs("v:", words, 2, usage)
	if err != nil {
		return err
	}
	if len(cl.args) > 2 {
		s.printErr("'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.\n")
	}
	v, err := version(cl)
	if err != nil {
		return err
	}
	if err := s.zk.Delete(cl.args[1], v); err != nil {
		return wrap(err)
	}
	return nil
}

func runDeleteAll(s *session, usage string, words []string) error {
	cl, err := parseArgs("b:", words, 2, usage)
	if err != nil {
		return err
	}
	batch := int32(1000)
	if cl.has('b') {
		var ok bool
		if batch, ok = intValue(cl.value('b')); !ok {
			return fail("-b argument must be an int value")
		}
	}
	root := cl.args[1]
	if err := zkclient.ValidatePath(root, false); err != nil {
		return wrap(err)
	}
	// Breadth first in the server's order, then deleted from the end in
	// multis of batch ops, as ZKUtil.deleteRecursive.
	tree := []string{root}
	for i := 0; i < len(tree); i++ {
		children, err := s.zk.Children(tree[i], false)
		if err != nil {
			return wrap(err)
		}
		prefix := tree[i] + "/"
		if tree[i] == "/" {
			prefix = "/"
		}
		for _, c := range children {
			tree = append(tree, prefix+c)
		}
	}
	var ops []zkclient.Op
	for i := len(tree) - 1; i >= 0; i-- {
		ops = append(ops, zkclient.DeleteOp(tree[i], -1))
		if len(ops) == int(batch) || i == 0 {
			if _, err := s.zk.Multi(ops...); err != nil {
				// zkCli reports this and carries on with status 0.
				return fail("Failed to delete some node(s) in the subtree!")
			}
			ops = nil
		}
	}
	return nil
}

func runSetACL(s *session, usage string, words []string) error {
	cl, err := parseArgs("sv:R", words, 3, usage)
	if err != nil {
		return err
	}
	path := cl.args[1]
	acl := parseACL(cl.args[2], func(m string) { s.printErr(m + "\n") })
	v, err := version(cl)
	if err != nil {
		return err
	}
	if cl.has('R') {
		// zkCli prints each node's failure with no newline after it.
		return s.visit(path, false, func(p string) {
			if _, err := s.zk.SetACL(p, acl, v); err != nil {
				var ke *zkclient.Error
				if errors.As(err, &ke) {
					s.printOut(keeperMessage(ke))
				} else {
					s.printOut(err.Error())
				}
			}
		})
	}
	st, err := s.zk.SetACL(path, acl, v)
	if err != nil {
		return wrap(err)
	}
	if cl.has('s') {
		s.printStat(st)
	}
	return nil
}

func runGetACL(s *session, usage string, words []string) error {
	cl, err := parseArgs("s", words, 2, usage)
	if err != nil {
		return err
	}
	acl, st, err := s.zk.GetACL(cl.args[1])
	if err != nil {
		return wrap(err)
	}
	var b strings.Builder
	for _, a := range acl {
		b.WriteString(aclLine(a) + "\n")
	}
	if cl.has('s') {
		printStat(&b, st, time.Local)
	}
	s.printOut(b.String())
	return nil
}

func runAddAuth(s *session, usage string, words []string) error {
	cl, err := parseArgs("", words, 2, usage)
	if err != nil {
		return err
	}
	var auth []byte
	if len(cl.args) >= 3 {
		auth = []byte(cl.args[2])
	}
	err = s.zk.AddAuth(cl.args[1], auth)
	if zkclient.IsCode(err, wire.CodeAuthFailed) {
		// The AuthFailed event says it; zkCli prints nothing more (and
		// does not wait for the answer at all).
		return &failure{code: exitFailure}
	}
	if err != nil {
		return wrap(err)
	}
	return nil
}

func runSync(s *session, usage string, words []string) error {
	cl, err := parseArgs("", words, 2, usage)
	if err != nil {
		return err
	}
	err = s.zk.Sync(cl.args[1])
	if code, ok := zkclient.Code(err); ok {
		// zkCli prints the code's number here; hutch cli its name.
		s.printOut("Sync has failed. rc=" + code.String() + "\n")
		return &failure{code: exitFailure}
	}
	if err != nil {
		return wrap(err)
	}
	s.printOut("Sync is OK\n")
	return nil
}

func runEphemerals(s *session, usage string, words []string) error {
	cl, err := options("", words)
	if err != nil {
		return err
	}
	prefix := "/"
	if len(cl.args) >= 2 {
		prefix = cl.args[1]
	}
	paths, err := s.zk.Ephemerals(prefix)
	if err != nil {
		return wrap(err)
	}
	s.printOut(javaList(paths) + "\n")
	return nil
}

func runAllChildrenNumber(s *session, usage string, words []string) error {
	cl, err := parseArgs("", words, 2, usage)
	if err != nil {
		return err
	}
	n, err := s.zk.AllChildrenNumber(cl.args[1])
	if err != nil {
		return wrap(err)
	}
	s.printOut(strconv.Itoa(int(n)) + "\n")
	return nil
}

// configNode is where a server keeps its dynamic configuration.
const configNode = "/zookeeper/config"

func runConfig(s *session, usage string, words []string) error {
	cl, err := options("swc", words)
	if err != nil {
		return err
	}
	data, st, err := s.zk.Get(configNode, cl.has('w'))
	if err != nil {
		return wrap(err)
	}
	if cl.has('c') && data != nil {
		data = []byte(clientConfig(javaString(data)))
	}
	s.printData(data, st, cl.has('s'))
	return nil
}

// clientConfig is ConfigUtils.getClientConfigStr: the config's version,
// a space, and the client addresses of its server.N lines, joined by
// commas. Java walks a Properties hash table; hutch cli keeps the lines'
// order.
func clientConfig(cfg string) string {
	version := ""
	var addrs []string
	for _, line := range strings.Split(cfg, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "version" {
			version = v
		}
		if !strings.HasPrefix(k, "server.") {
			continue
		}
		_, client, ok := strings.Cut(v, ";")
		if !ok {
			continue
		}
		if !strings.Contains(client, ":") {
			client = "0.0.0.0:" + client
		}
		addrs = append(addrs, client)
	}
	return version + " " + strings.Join(addrs, ",")
}

func runWhoAmI(s *session, usage string, words []string) error {
	infos, err := s.zk.WhoAmI()
	if err != nil {
		return wrap(err)
	}
	var b strings.Builder
	b.WriteString("Auth scheme: User\n")
	for _, i := range infos {
		b.WriteString(i.AuthScheme + ": " + i.User + "\n")
	}
	s.printOut(b.String())
	return nil
}

func runAddWatch(s *session, usage string, words []string) error {
	cl, err := options("m:", words)
	if err != nil {
		return err
	}
	if len(cl.args) != 2 {
		return fail(usage)
	}
	recursive := true
	if cl.has('m') {
		switch strings.ToUpper(cl.value('m')) {
		case "PERSISTENT":
			recursive = false
		case "PERSISTENT_RECURSIVE":
		default:
			return fail(usage)
		}
	}
	if err := s.zk.AddWatch(cl.args[1], recursive); err != nil {
		return wrap(err)
	}
	return nil
}

func runClose(s *session, usage string, words []string) error {
	s.zk.Close()
	return nil
}

func runVersion(s *session, usage string, words []string) error {
	s.printOut("hutch cli, speaking ZooKeeper 3.8's client protocol\n")
	return nil
}

// runWatch adds a persistent watch (recursive with -R) and lets its
// events print until SIGINT, count events (-n), the end of a script's
// input (without -n) or of the session; then it removes the watch.
func runWatch(s *session, usage string, words []string) error {
	cl, err := options("Rn:", words)
	if err != nil {
		return err
	}
	if len(cl.args) != 2 {
		return fail(usage)
	}
	w := &watchState{path: cl.args[1], recursive: cl.has('R'), done: make(chan struct{})}
	if cl.has('n') {
		n, ok := intValue(cl.value('n'))
		if !ok || n <= 0 {
			return fail("-n argument must be a positive int value")
		}
		w.want = int(n)
	}
	s.watchMu.Lock()
	s.active = w
	s.watchMu.Unlock()
	defer func() {
		s.watchMu.Lock()
		s.active = nil
		s.watchMu.Unlock()
	}()
	if err := s.zk.AddWatch(w.path, w.recursive); err != nil {
		return wrap(err)
	}
	var inputDone <-chan struct{}
	if w.want == 0 {
		inputDone = s.inputDone
	}
	select {
	case <-w.done:
	case <-inputDone:
	case <-s.zk.Ended():
		return fail(keeperMessage(&zkclient.Error{Code: wire.CodeSessionExpired, Path: w.path}))
	}
	// Done watching: a SIGINT from now on is for hutch cli itself.
	s.watchMu.Lock()
	s.active = nil
	s.watchMu.Unlock()
	err = s.zk.RemoveWatches(w.path, wire.WatcherTypeAny)
	if err != nil && !zkclient.IsCode(err, wire.CodeNoWatcher) {
		return wrap(err)
	}
	return nil
}
