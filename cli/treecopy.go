package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hutchzk/hutch/treejson"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
)

// dump and load are hutch cli's own (zkCli has neither): a subtree as JSON
// (package treejson) out of any ZooKeeper-compatible server and into any
// other, for fixtures and partial copies.

const (
	dumpUsage = "[-s] path [file] # write the subtree at path as JSON (-s: with each node's Stat) to file, or print it"
	loadUsage = "file [path] # create the nodes of a JSON dump, under path if given (in place of the dump's root)"
)

func runDump(s *session, usage string, words []string) error {
	cl, err := parseArgs("s", words, 2, usage)
	if err != nil {
		return err
	}
	t, err := treejson.Dump(cliClient{s.zk}, cl.args[1], cl.has('s'))
	if err != nil {
		return fail(err.Error())
	}
	if len(cl.args) >= 3 {
		if err := t.WriteFile(cl.args[2]); err != nil {
			return fail(err.Error())
		}
		s.printOut(fmt.Sprintf("dumped %d nodes to %s\n", len(t.Nodes), cl.args[2]))
		return nil
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fail(err.Error())
	}
	s.printOut(string(b) + "\n")
	return nil
}

func runLoad(s *session, usage string, words []string) error {
	cl, err := parseArgs("", words, 2, usage)
	if err != nil {
		return err
	}
	t, err := treejson.ReadFile(cl.args[1])
	if err != nil {
		return fail(err.Error())
	}
	at := ""
	if len(cl.args) >= 3 {
		at = cl.args[2]
	}
	n, err := treejson.Load(cliClient{s.zk}, t, at)
	if err != nil {
		return fail(fmt.Sprintf("%v (%d nodes created before it)", err, n))
	}
	s.printOut(fmt.Sprintf("created %d nodes\n", n))
	return nil
}

// cliClient adapts hutch's client to treejson.Client.
type cliClient struct{ c *zkclient.Client }

func (c cliClient) Get(p string) ([]byte, wire.Stat, error) { return c.c.Get(p, false) }

func (c cliClient) GetACL(p string) ([]wire.ACL, error) {
	acl, _, err := c.c.GetACL(p)
	return acl, err
}

func (c cliClient) Children(p string) ([]string, error) { return c.c.Children(p, false) }

func (c cliClient) Create(p string, data []byte, acl []wire.ACL, flags int32, ttl time.Duration) error {
	t := int64(-1)
	if flags == wire.ModePersistentWithTTL {
		t = ttl.Milliseconds()
	}
	_, err := c.c.Create(p, data, acl, flags, t)
	return err
}

func (cliClient) IsNoNode(err error) bool { return zkclient.IsCode(err, wire.CodeNoNode) }
