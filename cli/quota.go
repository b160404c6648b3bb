package cli

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/hutchzk/hutch/quota"
	"github.com/hutchzk/hutch/wire"
	"github.com/hutchzk/hutch/zkclient"
)

// setquota, listquota and delquota work as zkCli's SetQuotaCommand,
// ListQuotaCommand and DelQuotaCommand: on the nodes under
// /zookeeper/quota, whose stats the server keeps. Where zkCli prints a
// refusal and carries on with status 0, hutch cli exits 1; where zkCli
// dies of an exception (limits or stats that do not parse), hutch cli
// prints Java's message and exits 1.

// quotaGroup is the option group of setquota (required) and delquota.
func quotaGroup(required bool) *optionGroup {
	return &optionGroup{letters: "nbNB", required: required,
		desc: "[-n num soft quota, -b bytes soft quota, -N num hard quota, -B bytes hard quota]"}
}

func runSetQuota(s *session, usage string, words []string) error {
	cl, err := parseGroupOptions("n:b:N:B:", quotaGroup(true), words)
	if err != nil {
		return fail(err.Error())
	}
	if len(cl.args) < 2 {
		return fail(usage)
	}
	path := cl.args[1]
	if strings.HasPrefix(path, quota.Root) {
		return fail("cannot set a quota under the path: " + quota.Root)
	}
	limits := quota.Stats{quota.Count: -1, quota.Bytes: -1, quota.CountHardLimit: -1, quota.ByteHardLimit: -1}
	for _, o := range []struct {
		opt   byte
		key   string
		count bool
	}{{'n', quota.Count, true}, {'b', quota.Bytes, false}, {'N', quota.CountHardLimit, true}, {'B', quota.ByteHardLimit, false}} {
		if !cl.has(o.opt) {
			continue
		}
		bits := 64
		if o.count {
			bits = 32 // Integer.parseInt
		}
		v, err := strconv.ParseInt(cl.value(o.opt), 10, bits)
		switch {
		case err != nil:
			return fail("NumberFormatException happens when parsing the option value")
		case o.count && v <= 0:
			return fail("the num quota must be greater than zero")
		case !o.count && v < 0:
			return fail("the bytes quota must be greater than or equal to zero")
		}
		limits.Set(o.key, v)
	}
	return quotaFailure(s.createQuota(path, limits))
}

// quotaFailure turns what a quota command ran into zkCli's message: an
// IllegalArgumentException's (a path refused, a quota above or below, a
// value that is not a number) as is, a KeeperException's as
// CliWrapperException words it.
func quotaFailure(err error) error {
	var f *failure
	var pe *quota.ParseError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &f):
		return f
	case errors.As(err, &pe):
		return fail(pe.Msg)
	}
	return wrap(err)
}

// createQuota is SetQuotaCommand.createQuota: the path must exist and have
// no quota above or below it; then the nodes under /zookeeper/quota are
// made (limits first, then the stats, which the server counts afresh) or
// the limits given are merged into the existing ones. A limit below what
// the subtree already holds is warned about.
func (s *session) createQuota(path string, limits quota.Stats) error {
	if _, err := s.zk.Exists(path, false); err != nil {
		if zkclient.IsCode(err, wire.CodeNoNode) {
			return fail(path + " does not exist.")
		}
		return err
	}
	if err := s.checkChildQuota(path); err != nil {
		return err
	}
	if err := s.checkParentQuota(path); err != nil {
		return err
	}
	if _, err := s.zk.Exists(quota.Root, false); zkclient.IsCode(err, wire.CodeNoNode) {
		for _, p := range []string{"/zookeeper", quota.Root} {
			if _, err := s.zk.Create(p, nil, openACL, 0, 0); err != nil && !zkclient.IsCode(err, wire.CodeNodeExists) {
				return err
			}
		}
	}
	quotaPath := quota.Root
	splits := javaSplit(path, "/")
	for i := 1; i < len(splits); i++ {
		quotaPath += "/" + splits[i]
		if _, err := s.zk.Exists(quotaPath, false); zkclient.IsCode(err, wire.CodeNoNode) {
			if _, err := s.zk.Create(quotaPath, nil, openACL, 0, 0); err != nil && !zkclient.IsCode(err, wire.CodeNodeExists) {
				return err
			}
		} else if err != nil {
			return err
		}
	}
	statPath := quotaPath + "/" + quota.StatNode
	limitPath := quotaPath + "/" + quota.LimitNode
	_, err := s.zk.Exists(limitPath, false)
	if zkclient.IsCode(err, wire.CodeNoNode) {
		if _, err := s.zk.Create(limitPath, []byte(limits.String()), openACL, 0, 0); err != nil {
			return err
		}
		if _, err := s.zk.Create(statPath, []byte("count=0,bytes=0"), openACL, 0, 0); err != nil {
			return err
		}
		set, err := s.readStats(limitPath)
		if err != nil {
			return err
		}
		used, err := s.readStats(statPath)
		if err != nil {
			return err
		}
		s.warnBelowUsage(set, used)
		return nil
	}
	if err != nil {
		return err
	}
	set, err := s.readStats(limitPath)
	if err != nil {
		return err
	}
	for _, k := range []string{quota.Count, quota.Bytes, quota.CountHardLimit, quota.ByteHardLimit} {
		if v := limits.Get(k); v > -1 {
			set.Set(k, v)
		}
	}
	used, err := s.readStats(statPath)
	if err != nil {
		return err
	}
	s.warnBelowUsage(set, used)
	_, err = s.zk.Set(limitPath, []byte(set.String()), -1)
	return err
}

// readStats reads the StatsTrack at path.
func (s *session) readStats(path string) (quota.Stats, error) {
	data, _, err := s.zk.Get(path, false)
	if err != nil {
		return nil, err
	}
	return quota.Parse(data)
}

// warnBelowUsage is SetQuotaCommand.checkQuota: on stdout, a warning for
// each limit already passed.
func (s *session) warnBelowUsage(limits, used quota.Stats) {
	below := func(soft, hard, now int64) bool { return (soft > -1 && soft < now) || (hard > -1 && hard < now) }
	if n := used.Get(quota.Count); below(limits.Get(quota.Count), limits.Get(quota.CountHardLimit), n) {
		s.printOut("[Warning]: the count quota you create is less than the existing count:" + strconv.FormatInt(n, 10) + "\n")
	}
	if n := used.Get(quota.Bytes); below(limits.Get(quota.Bytes), limits.Get(quota.ByteHardLimit), n) {
		s.printOut("[Warning]: the bytes quota you create is less than the existing bytes:" + strconv.FormatInt(n, 10) + "\n")
	}
}

// checkChildQuota is SetQuotaCommand.checkIfChildQuota: it walks the
// quota nodes below path's, depth first with sorted children
// (ZKUtil.visitSubTreeDFS), and refuses path if one of them holds limits.
func (s *session) checkChildQuota(path string) error {
	root := quota.Root + path
	if err := zkclient.ValidatePath(root, false); err != nil {
		return err
	}
	if _, _, err := s.zk.Get(root, false); err != nil {
		if zkclient.IsCode(err, wire.CodeNoNode) {
			return nil
		}
		return err
	}
	// visit looks at one node's children; a node gone or unreadable is
	// skipped, as zkCli's callback does.
	visit := func(p string) error {
		children, err := s.zk.Children(p, false)
		if err != nil {
			return nil
		}
		for _, c := range children {
			if p != root && c == quota.LimitNode {
				return fail(path + " has a child " + strings.TrimPrefix(p, quota.Root) + " which has a quota")
			}
		}
		return nil
	}
	if err := visit(root); err != nil {
		return err
	}
	var below func(p string) error
	below = func(p string) error {
		children, err := s.zk.Children(p, false)
		if zkclient.IsCode(err, wire.CodeNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		sort.Strings(children)
		for _, c := range children {
			if err := visit(p + "/" + c); err != nil {
				return err
			}
		}
		for _, c := range children {
			if err := below(p + "/" + c); err != nil {
				return err
			}
		}
		return nil
	}
	return below(root)
}

// checkParentQuota is SetQuotaCommand.checkIfParentQuota: it refuses path
// if a quota node above path's holds limits. It stops at the first level
// that has no quota node or an empty one.
func (s *session) checkParentQuota(path string) error {
	splits := javaSplit(path, "/")
	quotaPath := quota.Root
	for i := 1; i < len(splits)-1; i++ {
		quotaPath += "/" + splits[i]
		children, err := s.zk.Children(quotaPath, false)
		if zkclient.IsCode(err, wire.CodeNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(children) == 0 {
			return nil
		}
		for _, c := range children {
			if quotaPath != quota.Root+path && c == quota.LimitNode {
				return fail(path + " has a parent " + strings.TrimPrefix(quotaPath, quota.Root) + " which has a quota")
			}
		}
	}
	return nil
}

func runListQuota(s *session, usage string, words []string) error {
	cl, err := parseArgs("", words, 2, usage)
	if err != nil {
		return err
	}
	path := cl.args[1]
	s.printErr("absolute path is " + quota.LimitPath(path) + "\n")
	limits, err := s.readStats(quota.LimitPath(path))
	var used quota.Stats
	if err == nil {
		used, err = s.readStats(quota.StatPath(path))
	}
	if zkclient.IsCode(err, wire.CodeNoNode) {
		return fail("quota for " + path + " does not exist.")
	}
	if err != nil {
		return quotaFailure(err)
	}
	s.printOut("Output quota for " + path + " " + limits.String() + "\n" +
		"Output stat for " + path + " " + used.String() + "\n")
	return nil
}

func runDelQuota(s *session, usage string, words []string) error {
	cl, err := parseGroupOptions("nbNB", quotaGroup(false), words)
	if err != nil {
		return fail(err.Error())
	}
	if len(cl.args) < 2 {
		return fail(usage)
	}
	path := cl.args[1]
	err = s.delQuota(path, cl)
	if zkclient.IsCode(err, wire.CodeNoNode) {
		return fail("quota for " + path + " does not exist.")
	}
	return quotaFailure(err)
}

// delQuota is DelQuotaCommand.delQuota: without an option it deletes the
// quota's nodes and then every quota node above them left empty; with
// options it sets those limits to -1.
func (s *session) delQuota(path string, cl *cmdLine) error {
	parentPath, limitPath := quota.Root+path, quota.LimitPath(path)
	if _, err := s.zk.Exists(limitPath, false); zkclient.IsCode(err, wire.CodeNoNode) {
		s.printOut("Quota does not exist for " + path + "\n")
		return &failure{code: exitFailure}
	} else if err != nil {
		return err
	}
	limits, err := s.readStats(limitPath)
	if err != nil {
		return err
	}
	if !cl.has('n') && !cl.has('b') && !cl.has('N') && !cl.has('B') {
		children, err := s.zk.Children(parentPath, false)
		if err != nil {
			return err
		}
		for _, c := range children {
			if err := s.zk.Delete(parentPath+"/"+c, -1); err != nil {
				return err
			}
		}
		// Cut the empty quota nodes above it, up to /zookeeper/quota.
		for p := parentPath; p != quota.Root; p = p[:strings.LastIndexByte(p, '/')] {
			children, err := s.zk.Children(p, false)
			if err != nil {
				return err
			}
			if len(children) > 0 {
				break
			}
			if err := s.zk.Delete(p, -1); err != nil {
				return err
			}
		}
		return nil
	}
	for opt, key := range map[byte]string{'n': quota.Count, 'b': quota.Bytes, 'N': quota.CountHardLimit, 'B': quota.ByteHardLimit} {
		if cl.has(opt) {
			limits.Set(key, -1)
		}
	}
	_, err = s.zk.Set(limitPath, []byte(limits.String()), -1)
	return err
}
