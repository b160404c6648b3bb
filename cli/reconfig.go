package cli

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/hutchzk/hutch/javaprops"
	"github.com/hutchzk/hutch/membership"
	"github.com/hutchzk/hutch/zkclient"
)

const reconfigUsage = "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | " +
	"[-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]"

// runReconfig is zkCli's reconfig (ReconfigCommand): -add and -remove for
// an incremental change, -members or -file for a new configuration, -v
// the hexadecimal version it expects, -s to print the Stat. The values
// are lower-cased, as zkCli does; -file is parsed and sent as the
// configuration's text.
func runReconfig(s *session, usage string, words []string) error {
	opts := map[string]string{}
	takes := map[string]bool{"s": false, "v": true, "file": true, "members": true, "add": true, "remove": true}
	for i := 1; i < len(words); i++ {
		w := words[i]
		name, ok := strings.CutPrefix(w, "-")
		if !ok {
			continue // commons-cli keeps it as an argument; reconfig takes none
		}
		value, has := takes[name]
		if !has {
			return fail("Unrecognized option: " + w)
		}
		if value {
			if i+1 >= len(words) {
				return fail("Missing argument for option: " + name)
			}
			i++
			opts[name] = words[i]
		} else {
			opts[name] = ""
		}
	}
	_, file := opts["file"]
	_, members := opts["members"]
	_, add := opts["add"]
	_, remove := opts["remove"]
	switch {
	case !file && !members && !add && !remove:
		return fail(usage)
	case (file || members) && (add || remove):
		return fail("Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)")
	case file && members:
		return fail("Can't use -file and -members together (conflicting non-incremental modes)")
	}
	version := int64(-1)
	if v, ok := opts["v"]; ok {
		n, err := strconv.ParseInt(v, 16, 64)
		if err != nil {
			return fail("-v must be followed by a long (configuration version)")
		}
		version = n
	}
	field := func(name string) []byte {
		if v, ok := opts[name]; ok {
			return []byte(strings.ToLower(v))
		}
		return nil
	}
	joiningB, leavingB, membersB := field("add"), field("remove"), field("members")
	if file {
		text, err := configFile(opts["file"])
		if err != nil {
			return fail("Error processing " + opts["file"] + err.Error())
		}
		membersB = []byte(text)
	}
	data, st, err := s.zk.Reconfig(joiningB, leavingB, membersB, version)
	var ke *zkclient.Error
	if errors.As(err, &ke) {
		// ZooKeeperAdmin reports a refusal with an empty path, which
		// zkCli's wrapper prints as nothing, not as "null".
		if m, ok := wrapperMessages[ke.Code]; ok && strings.HasSuffix(m, " ") {
			return fail(m)
		}
	}
	if err != nil {
		return wrap(err)
	}
	s.printOut("Committed new configuration:\n" + javaString(data) + "\n")
	if _, ok := opts["s"]; ok {
		s.printStat(st)
	}
	return nil
}

// configFile parses a dynamic configuration file as zkCli does
// (QuorumPeerConfig.parseDynamicConfig) and returns it as ZooKeeper prints
// it.
func configFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	props, err := javaprops.Read(f)
	if err != nil {
		return "", err
	}
	var lines []string
	version := int64(0)
	for _, p := range props {
		if p.Key == "version" {
			if version, err = strconv.ParseInt(p.Value, 16, 64); err != nil {
				return "", err
			}
			continue
		}
		lines = append(lines, p.Key+"="+p.Value)
	}
	cfg, err := membership.Replace([]byte(strings.Join(lines, "\n")), true)
	if err != nil {
		return "", err
	}
	cfg.Version = version
	return cfg.Text(), nil
}
