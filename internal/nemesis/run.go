package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// runner is one run: the cluster, the workloads and what they saw.
type runner struct {
	c     Cluster
	cfg   Config
	addrs []string
	rng   *rand.Rand // the schedule's; used by its goroutine only
	rep   *Report

	leader atomic.Int32 // last leader seen, -1 if unknown; churn avoids it
	admin  *zkSession   // setup, probes and final reads
	bursts int          // churn bursts so far, for node names

	mu       sync.Mutex // guards sessions and problems
	sessions []*zkSession
	problems []string

	lock   *lockWorkload
	pipes  []*pipeWriter
	live   *liveWorkload
	churn  *churnWorkload
	reg    *registerWorkload
	fresh  *freshWorkload
	faults []faultRecord
}

// Run starts the workloads against c, injects cfg.Faults faults one at a
// time, stops the workloads and checks what they saw. The error is for a
// run that could not start (the cluster not answering, Root taken);
// invariants broken are in the Report (see Report.Err).
func Run(ctx context.Context, c Cluster, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	r := &runner{
		c:     c,
		cfg:   cfg,
		addrs: c.ClientAddrs(),
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x6e656d65)),
		rep: &Report{Seed: cfg.Seed, FaultsPlanned: cfg.Faults, Faults: map[Kind]int{},
			SessionsExpired: map[string]int{}, SessionsExpiredAllowed: map[string]int{}},
	}
	r.leader.Store(-1)
	start := time.Now()
	defer r.closeSessions()
	cfg.Logf("nemesis: seed %d, %d faults, nodes %v", cfg.Seed, cfg.Faults, r.addrs)
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	var wg sync.WaitGroup
	if err := r.startWorkloads(work, &wg); err != nil {
		stopWork()
		wg.Wait()
		return nil, err
	}
	r.warmUp(ctx)
	r.schedule(ctx)
	r.settle(ctx)
	r.logf("stopping the workloads")
	stopWork()
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(2*cfg.OpTimeout + 10*time.Second):
		r.problem("the workloads did not stop within %v", 2*cfg.OpTimeout+10*time.Second)
	}
	r.check(ctx)
	r.rep.Duration = time.Since(start)
	for _, d := range r.rep.Details {
		r.logf("%s", d)
	}
	return r.rep, nil
}

func (r *runner) logf(format string, args ...any) { r.cfg.Logf("nemesis: "+format, args...) }

// problem records a failure of the run or of liveness.
func (r *runner) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.logf("%s", msg)
	r.mu.Lock()
	r.problems = append(r.problems, msg)
	r.mu.Unlock()
}

// dial opens a go-zookeeper client on every node, remembered so its
// expiries are counted and it is closed at the end.
func (r *runner) dial(ctx context.Context, workload string) (*zkSession, error) {
	s, err := dialZK(ctx, workload, r.addrs, r.cfg.SessionTimeout, r.cfg.OpTimeout)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.sessions = append(r.sessions, s)
	r.mu.Unlock()
	return s, nil
}

func (r *runner) closeSessions() {
	r.mu.Lock()
	sessions := r.sessions
	r.sessions = nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(s.Close)
	}
	wg.Wait()
}

// setup creates the tree the workloads use under cfg.Root.
func (r *runner) setup(ctx context.Context) error {
	var err error
	if r.admin, err = r.dial(ctx, "admin"); err != nil {
		return err
	}
	root := r.cfg.Root
	var there bool
	if err := Call(ctx, r.cfg.OpTimeout, func() error {
		var err error
		there, _, err = r.admin.conn.Exists(root)
		return err
	}); err != nil {
		return fmt.Errorf("exists %s: %w", root, err)
	}
	if there {
		return fmt.Errorf("%s exists: each run needs a fresh root", root)
	}
	nodes := []struct {
		path string
		data string
	}{
		{root, ""}, {root + "/lock", ""}, {root + "/fence", "0"}, {root + "/order", ""},
		{root + "/live", ""}, {root + "/churn", ""}, {root + "/reg", ""}, {root + "/probe", ""},
		{root + "/disk", ""}, {root + "/fresh", "0"},
	}
	for k := range r.cfg.RegisterKeys {
		nodes = append(nodes, struct{ path, data string }{fmt.Sprintf("%s/reg/k%d", root, k), "init"})
	}
	for _, n := range nodes {
		if err := r.ensure(ctx, n.path, n.data); err != nil {
			return err
		}
	}
	return nil
}

// ensure creates a persistent node, retrying over lost answers (after
// which finding it there is success).
func (r *runner) ensure(ctx context.Context, p, data string) error {
	var err error
	for range 50 {
		err = Call(ctx, r.cfg.OpTimeout, func() error {
			_, err := r.admin.conn.Create(p, []byte(data), 0, openACL)
			return err
		})
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		if refused(err) || !pause(ctx, 100*time.Millisecond) {
			break
		}
	}
	return fmt.Errorf("create %s: %w", p, err)
}

// startWorkloads opens every client and starts its goroutine in wg.
func (r *runner) startWorkloads(ctx context.Context, wg *sync.WaitGroup) error {
	root := r.cfg.Root
	r.lock = &lockWorkload{dir: root + "/lock", fence: root + "/fence", cfg: r.cfg}
	for i := range r.cfg.LockClients {
		s, err := r.dial(ctx, "lock")
		if err != nil {
			return err
		}
		wg.Go(func() { r.lock.run(ctx, i, s) })
	}
	for i := range r.cfg.Pipelines {
		w := newPipeWriter(i+1, root+"/order", r.addrs, r.cfg)
		r.pipes = append(r.pipes, w)
		wg.Go(func() { w.run(ctx) })
	}
	r.live = &liveWorkload{dir: root + "/live"}
	if err := r.live.start(ctx, r, r.cfg.LiveSessions); err != nil {
		return err
	}
	r.churn = &churnWorkload{dir: root + "/churn", addrs: r.addrs, cfg: r.cfg, leader: &r.leader}
	for i := range r.cfg.ChurnClients {
		wg.Go(func() { r.churn.run(ctx, fmt.Sprintf("c%d", i), 200*time.Millisecond) })
	}
	r.reg = &registerWorkload{dir: root + "/reg", keys: r.cfg.RegisterKeys, cfg: r.cfg,
		h: NewSessionHistory(), counts: map[string]int{}}
	for i := range r.cfg.RegisterClients {
		s, err := r.dial(ctx, "register")
		if err != nil {
			return err
		}
		wg.Go(func() { r.reg.run(ctx, i, s, r.cfg.Seed) })
	}
	r.fresh = &freshWorkload{path: root + "/fresh", bound: r.cfg.FreshnessBound}
	if r.cfg.FreshReaders > 0 {
		ticker, err := r.dial(ctx, "fresh")
		if err != nil {
			return err
		}
		wg.Go(func() { r.fresh.tick(ctx, ticker, r.cfg.FreshEvery, r.cfg.OpTimeout) })
		for i := range r.cfg.FreshReaders {
			s, err := r.dial(ctx, "fresh")
			if err != nil {
				return err
			}
			wg.Go(func() { r.fresh.read(ctx, i, s, r.cfg.FreshEvery, r.cfg.OpTimeout) })
		}
	}
	// Keep the leader fresh for the churn, which avoids it.
	wg.Go(func() {
		for i := 0; i < 1_000_000 && ctx.Err() == nil; i++ {
			if l := r.c.Leader(); l >= 0 {
				r.leader.Store(int32(l))
			}
			pause(ctx, time.Second)
		}
	})
	return nil
}

// warmUp waits, for a bounded time, until every workload has done
// something, so the first fault meets them all at work.
func (r *runner) warmUp(ctx context.Context) {
	deadline := time.Now().Add(r.cfg.RecoverTimeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		r.lock.mu.Lock()
		locked := r.lock.acquisitions > 0
		r.lock.mu.Unlock()
		acked := true
		for _, w := range r.pipes {
			w.mu.Lock()
			acked = acked && slices.ContainsFunc(w.writes, func(pw *pwrite) bool { return pw.state == writeAcked })
			w.mu.Unlock()
		}
		if locked && acked && r.reg.Ops() > 0 && r.churn.Opened() > 0 {
			return
		}
		pause(ctx, 50*time.Millisecond)
	}
	r.logf("the workloads were not all at work after %v", r.cfg.RecoverTimeout)
}

// settle undoes anything a fault may have left and waits for a write.
func (r *runner) settle(ctx context.Context) {
	if err := r.c.Heal(); err != nil && !errors.Is(err, ErrUnsupported) {
		r.problem("heal: %v", err)
	}
	for i := range r.c.Size() {
		if err := r.c.Resume(i); err != nil && !errors.Is(err, ErrUnsupported) {
			r.problem("resume node %d: %v", i, err)
		}
	}
	if _, ok := r.waitWritable(ctx, r.cfg.RecoverTimeout); !ok {
		r.problem("no write succeeded within %v after the last fault", r.cfg.RecoverTimeout)
	}
	pause(ctx, time.Second) // the workloads see a whole cluster once more
}

// check reads the end state and fills the report.
func (r *runner) check(ctx context.Context) {
	rep := r.rep
	// Live sessions first, while they are still open.
	lr := r.live.check(ctx, r.admin, r.cfg.OpTimeout, r.expiryBound())
	rep.LiveSessions, rep.LiveWronglyExpired = lr.sessions, lr.wrong
	rep.Details = append(rep.Details, lr.details...)

	r.checkLock(ctx)
	r.checkPipelines(ctx)
	fr := r.fresh.check()
	rep.FreshReads, rep.FrozenReads, rep.WrongReads, rep.StalestRead = fr.reads, fr.frozen, fr.wrong, fr.worst
	rep.FreshnessBound = r.cfg.FreshnessBound
	rep.Details = append(rep.Details, fr.details...)

	r.mu.Lock()
	sessions := slices.Clone(r.sessions)
	r.mu.Unlock()
	var expiries []expiry
	for _, s := range sessions {
		expiries = append(expiries, s.Expiries()...)
	}
	for _, w := range r.pipes {
		w.mu.Lock()
		expiries = append(expiries, w.expiries...)
		w.mu.Unlock()
	}
	r.churn.mu.Lock()
	expiries = append(expiries, r.churn.expiries...)
	for _, e := range expiries {
		r.countExpiry(e, e.wrongful(r.expiryBound()))
	}
	rep.ChurnSessions = r.churn.opened
	r.churn.mu.Unlock()

	r.checkServerExpiries()
	r.closeSessions()
	r.checkDigests(ctx)

	r.logf("checking the register history")
	lin := r.reg.check(r.faults, r.cfg.ArtifactDir)
	rep.Linearizability, rep.RegisterOps, rep.RegisterUnknown, rep.Visualization = lin.verdict, lin.ops, lin.unknown, lin.visualization

	r.mu.Lock()
	rep.Problems = append(rep.Problems, r.problems...)
	r.mu.Unlock()
	if rep.LockAcquisitions == 0 || rep.PipelineWrites == 0 || rep.RegisterOps == 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("a workload made no progress: %d lock acquisitions, %d pipelined creates, %d register operations",
			rep.LockAcquisitions, rep.PipelineWrites, rep.RegisterOps))
	}
}

// expiryBound is the silence below which an expiry is surely wrong. It is
// half the session timeout, not all of it: a server may go on answering a
// client for a while after losing the leader (ZooKeeper's syncLimit,
// hutch's two election timeouts) and touches reach the leader up to a tick
// late, so a session can rightly expire somewhat less than a timeout after
// its client last heard from a server, but not half a timeout.
func (r *runner) expiryBound() time.Duration { return r.cfg.SessionTimeout / 2 }

// countExpiry puts an expiry in the report, as wrong or allowed.
func (r *runner) countExpiry(e expiry, wrong bool) {
	rep := r.rep
	m, how := rep.SessionsExpiredAllowed, "allowed"
	if wrong {
		m, how = rep.SessionsExpired, "wrong"
	}
	m[e.workload]++
	if len(rep.Details) < 60 {
		rep.Details = append(rep.Details, fmt.Sprintf("%s session 0x%x expired at %s, %v after it last heard from a server (%s)",
			e.workload, e.id, e.at.Format(clock), e.silent.Round(time.Millisecond), how))
	}
}

func (r *runner) checkLock(ctx context.Context) {
	rep, w := r.rep, r.lock
	f, err := CallValue(ctx, r.cfg.OpTimeout, func() (fence, error) { return syncReadFence(r.admin.conn, w.fence) })
	value := f.value
	if err != nil {
		r.problem("read the fence: %v", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	doubles := overlaps(w.holds)
	rep.LockAcquisitions, rep.DoubleHolders, rep.FenceConflicts = w.acquisitions, len(doubles), len(w.conflicts)
	for _, h := range w.holds {
		if h.lost {
			rep.LockHoldsLost++
			if len(rep.Details) < 60 {
				rep.Details = append(rep.Details, fmt.Sprintf("client %d's session 0x%x ended while it held the lock (%s, from %s to %s): the hold counts until then only",
					h.client, h.session, h.node, h.enter.Format(clock), h.exit.Format(clock)))
			}
		}
	}
	rep.FenceValue, rep.FenceAcked, rep.FenceUnknown = value, w.acked, w.unknown
	rep.AckedWrites += w.acked
	rep.UnknownWrites += w.unknown
	rep.AckedLost += max(0, w.acked-value)
	rep.Details = append(rep.Details, first(doubles, 5)...)
	rep.Details = append(rep.Details, first(w.conflicts, 5)...)
	for _, c := range first(w.excused, 5) {
		rep.Details = append(rep.Details, c+" (allowed: its session ended under the lock)")
	}
	rep.WorkloadErrors = append(rep.WorkloadErrors, w.errs...)
}

func first(xs []string, n int) []string { return xs[:min(n, len(xs))] }

func (r *runner) checkPipelines(ctx context.Context) {
	rep := r.rep
	for _, w := range r.pipes {
		w.mu.Lock()
		writes, gens, dirsAcked := slices.Clone(w.writes), w.gen, w.dirsAcked
		if n := len(w.abandoned); n > 0 {
			rep.SessionsExpired["pipeline (no node took it back)"] += n
			rep.Details = append(rep.Details, first(w.abandoned, 3)...)
		}
		rep.OrderViolations += len(w.disorder)
		rep.Details = append(rep.Details, first(w.disorder, 5)...)
		w.mu.Unlock()
		children := map[int][]string{}
		for gen := 0; gen <= gens; gen++ {
			p := w.dirPath(gen)
			var kids []string
			err := Call(ctx, r.cfg.OpTimeout, func() error {
				if _, err := r.admin.conn.Sync(p); err != nil {
					return err
				}
				var err error
				kids, _, err = r.admin.conn.Children(p)
				return err
			})
			switch {
			case errors.Is(err, zk.ErrNoNode):
				if dirsAcked[gen] {
					rep.AckedLost++
					rep.Details = append(rep.Details, fmt.Sprintf("pipeline %d: acknowledged directory %s is missing", w.id, p))
				}
			case err != nil:
				r.problem("list %s: %v", p, err)
			}
			children[gen] = kids
		}
		o := checkOrder(w.id, writes, children)
		rep.PipelineWrites += len(writes)
		rep.AckedWrites += o.acked
		rep.AckedLost += o.lost
		rep.UnknownWrites += o.unknown
		rep.OrderViolations += o.violations
		rep.Details = append(rep.Details, o.details...)
	}
}

// checkDigests waits until every node reports the same digest.
func (r *runner) checkDigests(ctx context.Context) {
	deadline := time.Now().Add(r.cfg.RecoverTimeout)
	for {
		ds, err := r.c.Digests()
		r.rep.Digests = ds
		if err == nil && len(ds) > 0 && !slices.ContainsFunc(ds, func(d string) bool { return d != ds[0] }) {
			r.rep.DigestsEqual = true
			return
		}
		if err != nil {
			r.rep.Digests = append(slices.Clone(ds), err.Error())
		}
		if time.Now().After(deadline) || !pause(ctx, 100*time.Millisecond) {
			return
		}
	}
}
