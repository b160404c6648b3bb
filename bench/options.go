package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Options are what a run of hutch bench was asked to do.
type Options struct {
	Target, Against Target
	AllowRemote     bool
	Workloads       []*workload
	Rounds          int  // measured rounds per target
	WarmUp          bool // one discarded round per target first
	MaxTime         time.Duration
	JSON            bool
	SessionTimeout  time.Duration // of the benchmark's own sessions
	ConnectTimeout  time.Duration // bound on establishing one session
	Size            Size
	againstSet      bool
}

// Size is how large each workload is. A zero field takes the workload's
// default; a field applies to every workload that uses it.
type Size struct {
	Sessions      int           // client sessions (every workload)
	Acquisitions  int           // lock: acquisitions per session
	Stock         int           // stock: the starting stock
	Ops           int           // read-*, write-*: operations per run
	Window        int           // *-pipelined, memory: requests outstanding per session
	Bytes         int           // read-*, write-*, memory: data size
	Watchers      int           // fanout: watching sessions
	Fanouts       int           // fanout: setData rounds per run
	Churn         int           // sessions: sessions created and closed per run
	Expire        int           // sessions: sessions left to expire per run (-1: none)
	ExpireTimeout time.Duration // sessions: the timeout those ask for
	Znodes        int           // memory: znodes created
}

// Target is a server to measure: its connect string split into servers,
// and optionally its process ids (one per member of an ensemble), for its
// CPU time and memory, summed over them.
type Target struct {
	Connect string   `json:"connect"`
	Servers []string `json:"-"`
	PIDs    []int    `json:"pids,omitempty"`
}

// Limits the argument checks enforce, so that no flag can make a loop
// unbounded or a buffer huge.
const (
	maxSessions = 10_000
	maxCount    = 100_000_000
	maxWindow   = 10_000
	maxBytes    = 1_000_000 // under jute.maxbuffer (1 MiB) with the request's header
	maxRounds   = 100
	maxMaxTime  = 24 * time.Hour
	defaultPort = "2181"
)

// errHelp is returned by parseArgs when --help was asked for; the usage has
// been printed.
var errHelp = errors.New("help requested")

// parseArgs reads hutch bench's command line and checks it: sizes within
// bounds, known workloads, and targets that resolve to loopback addresses
// unless --allow-remote. usage receives --help's text.
func parseArgs(ctx context.Context, args []string, usage io.Writer) (*Options, error) {
	o := &Options{}
	fs := pflag.NewFlagSet("hutch bench", pflag.ContinueOnError)
	fs.SetOutput(usage)
	var target, against string
	var warmUp bool
	fs.StringVar(&target, "target", "127.0.0.1:"+defaultPort, "connect string of the server measured: host:port[,host:port...]; sessions are spread over the hosts in turn")
	fs.StringVar(&against, "against", "", "connect string of a second server: rounds alternate between the two and each figure's ratio (target / against) is printed")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "allow targets that do not resolve to loopback addresses")
	fs.IntSliceVar(&o.Target.PIDs, "pid", nil, "process id of the target server, or of each member of an ensemble (comma-separated): every workload reports the server's CPU time per operation, memory its VmRSS (from /proc), summed over the processes")
	fs.IntSliceVar(&o.Against.PIDs, "against-pid", nil, "process id(s) of the --against server, likewise")
	fs.IntVar(&o.Rounds, "rounds", 3, "measured rounds per target; each figure is the median of its rounds")
	fs.BoolVar(&warmUp, "warmup", true, "run one discarded warm-up round per target before the measured ones")
	fs.DurationVar(&o.MaxTime, "max-time", 5*time.Minute, "bound on one run of one workload against one server, setup included; its cleanup gets as long again")
	fs.BoolVar(&o.JSON, "json", false, "print the results as JSON instead of tables")
	fs.DurationVar(&o.SessionTimeout, "session-timeout", 10*time.Second, "session timeout the benchmark's sessions ask for")
	fs.DurationVar(&o.ConnectTimeout, "connect-timeout", 15*time.Second, "bound on establishing one session")
	s := &o.Size
	fs.IntVar(&s.Sessions, "sessions", 0, "client sessions (default: lock 100, stock 100, read/write-sync 16, read/write-pipelined 4, sessions 8 at a time, memory 4)")
	fs.IntVar(&s.Acquisitions, "acquisitions", 0, "lock: acquisitions per session (default 50)")
	fs.IntVar(&s.Stock, "stock", 0, "stock: the starting stock, shared out among the sessions (default 5000)")
	fs.IntVar(&s.Ops, "ops", 0, "read-*/write-*: operations per run (default: read-sync 50000, write-sync 20000, read-pipelined 200000, write-pipelined 100000)")
	fs.IntVar(&s.Window, "window", 0, "read-pipelined, write-pipelined, memory: requests outstanding per session (default 64)")
	fs.IntVar(&s.Bytes, "size", 0, "read-*, write-*, memory: bytes of data per znode (default 100)")
	fs.IntVar(&s.Watchers, "watchers", 0, "fanout: sessions watching the znode (default 200)")
	fs.IntVar(&s.Fanouts, "fanouts", 0, "fanout: setData rounds per run (default 20)")
	fs.IntVar(&s.Churn, "churn", 0, "sessions: sessions created and closed per run (default 1000)")
	fs.IntVar(&s.Expire, "expire", 0, "sessions: sessions that stop pinging and must expire, per run (default 4; -1 for none)")
	fs.DurationVar(&s.ExpireTimeout, "expire-timeout", 0, "sessions: session timeout those ask for (default 4s; the server may raise it to its minimum)")
	fs.IntVar(&s.Znodes, "znodes", 0, "memory: znodes created (default 1000000)")
	fs.Usage = func() {
		fmt.Fprint(usage, usageText)
		for _, w := range workloads {
			fmt.Fprintf(usage, "  %-16s %s\n", w.name, w.about)
		}
		fmt.Fprint(usage, "\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, errHelp
		}
		return nil, err
	}
	o.WarmUp = warmUp
	o.againstSet = against != ""
	var err error
	if o.Workloads, err = selectWorkloads(fs.Args()); err != nil {
		return nil, err
	}
	if err := o.checkSizes(); err != nil {
		return nil, err
	}
	if o.Target.Servers, err = o.resolve(ctx, "--target", target); err != nil {
		return nil, err
	}
	o.Target.Connect = target
	if o.againstSet {
		if o.Against.Servers, err = o.resolve(ctx, "--against", against); err != nil {
			return nil, err
		}
		o.Against.Connect = against
	} else if len(o.Against.PIDs) != 0 {
		return nil, errors.New("--against-pid needs --against")
	}
	for _, p := range []struct {
		flag string
		pids []int
	}{{"--pid", o.Target.PIDs}, {"--against-pid", o.Against.PIDs}} {
		for _, pid := range p.pids {
			if pid <= 0 {
				return nil, fmt.Errorf("%s %d: not a process id", p.flag, pid)
			}
		}
		if _, err := readRSS(p.pids...); err != nil {
			return nil, fmt.Errorf("%s: %w", p.flag, err)
		}
	}
	return o, nil
}

const usageText = `Usage: hutch bench [flags] [workload...]

Runs workloads through the go-zookeeper client against any
ZooKeeper-compatible server and prints throughput and latency percentiles.
With --against, rounds alternate between the two servers (A B A B ...) and
each figure is printed as the median of its rounds for both, with the ratio
target / against. Every workload works under a fresh root znode
(/hutch-bench-<random>) and deletes it afterwards. Targets must be loopback
addresses unless --allow-remote. No workload named: all of them, in order.

Workloads:
`

// selectWorkloads returns the named workloads in the order given, or every
// workload when none (or "all") is named.
func selectWorkloads(names []string) ([]*workload, error) {
	if len(names) == 0 || (len(names) == 1 && names[0] == "all") {
		return workloads, nil
	}
	var out []*workload
	for _, n := range names {
		i := slices.IndexFunc(workloads, func(w *workload) bool { return w.name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown workload %q; workloads are %s", n, workloadNames())
		}
		if slices.Contains(out, workloads[i]) {
			return nil, fmt.Errorf("workload %q named twice", n)
		}
		out = append(out, workloads[i])
	}
	return out, nil
}

func workloadNames() string {
	names := make([]string, len(workloads))
	for i, w := range workloads {
		names[i] = w.name
	}
	return strings.Join(names, ", ")
}

// checkSizes keeps every flag within bounds: a count or a time that could
// make a loop unbounded is refused, not clamped.
func (o *Options) checkSizes() error {
	s := o.Size
	ints := []struct {
		flag      string
		v, lo, hi int
	}{
		{"--rounds", o.Rounds, 1, maxRounds},
		{"--sessions", s.Sessions, 0, maxSessions},
		{"--acquisitions", s.Acquisitions, 0, maxCount},
		{"--stock", s.Stock, 0, maxCount},
		{"--ops", s.Ops, 0, maxCount},
		{"--window", s.Window, 0, maxWindow},
		{"--size", s.Bytes, 0, maxBytes},
		{"--watchers", s.Watchers, 0, maxSessions},
		{"--fanouts", s.Fanouts, 0, maxCount},
		{"--churn", s.Churn, 0, maxCount},
		{"--expire", s.Expire, -1, maxSessions},
		{"--znodes", s.Znodes, 0, maxCount},
	}
	for _, c := range ints {
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("%s %d: out of range %d to %d", c.flag, c.v, c.lo, c.hi)
		}
	}
	durations := []struct {
		flag   string
		v, min time.Duration
	}{
		{"--max-time", o.MaxTime, time.Millisecond},
		{"--session-timeout", o.SessionTimeout, time.Millisecond},
		{"--connect-timeout", o.ConnectTimeout, time.Millisecond},
		{"--expire-timeout", s.ExpireTimeout, 0},
	}
	for _, d := range durations {
		if d.v < d.min || d.v > maxMaxTime {
			return fmt.Errorf("%s %v: out of range %v to %v", d.flag, d.v, d.min, maxMaxTime)
		}
	}
	return nil
}

// resolve splits a connect string into host:port servers (port 2181 when
// left out) and checks that every address each host resolves to is a
// loopback one, unless remote targets are allowed.
func (o *Options) resolve(ctx context.Context, flag, connect string) ([]string, error) {
	if strings.Contains(connect, "/") {
		return nil, fmt.Errorf("%s %q: a chroot suffix is not supported", flag, connect)
	}
	var servers []string
	for part := range strings.SplitSeq(connect, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		host, port, err := net.SplitHostPort(part)
		if err != nil {
			// No port: the whole part is the host, brackets and all.
			host, port = strings.Trim(part, "[]"), defaultPort
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%s: %q has no valid port", flag, part)
		}
		if host == "" {
			return nil, fmt.Errorf("%s: %q has no host", flag, part)
		}
		if !o.AllowRemote {
			if err := checkLoopback(ctx, host); err != nil {
				return nil, fmt.Errorf("%s: %w", flag, err)
			}
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%s %q: no server", flag, connect)
	}
	return servers, nil
}

// checkLoopback resolves host and refuses it unless every address is a
// loopback one: a benchmark aimed elsewhere by mistake would load a
// server someone else depends on.
func checkLoopback(ctx context.Context, host string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("%s resolves to no address", host)
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() {
			return fmt.Errorf("%s resolves to %s, not a loopback address (give --allow-remote to benchmark it anyway)", host, a.IP)
		}
	}
	return nil
}

// readRSS returns the resident set sizes of the processes pids, summed.
func readRSS(pids ...int) (int64, error) { return sumOver(pids, processRSS) }

// sumOver adds up read's figure for each of the processes pids (an
// ensemble's members).
func sumOver[T int64 | time.Duration](pids []int, read func(pid int) (T, error)) (T, error) {
	var sum T
	for _, pid := range pids {
		v, err := read(pid)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// processRSS returns the resident set size of process pid, from VmRSS in
// /proc/pid/status.
func processRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("read the memory of process %d: %w", pid, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			break
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("process %d: no VmRSS in /proc/%d/status", pid, pid)
}
