package prometheus

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/hutchzk/hutch/monitor"
)

// The Go runtime's and the process's metrics, under the names, types and
// help texts of the Prometheus Go client's Go and process collectors, so
// that dashboards and alerts written for any Go program's /metrics (and
// for hutch's, which served them through that client until it cost every
// start of the binary 2 ms of package initialisation) read them as
// before. TestRuntimeFamiliesMatchTheGoClient holds them to the client's.

// runtimeSource is one go_ gauge or counter read from runtime/metrics:
// the sum of the named samples.
type runtimeSource struct {
	name, help string
	typ        monitor.MetricType
	keys       []string
}

var memstats = []runtimeSource{
	{"go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", monitor.CounterMetric,
		[]string{"/gc/heap/allocs:bytes"}},
	{"go_memstats_buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/profiling/buckets:bytes"}},
	{"go_memstats_frees_total", "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", monitor.CounterMetric,
		[]string{"/gc/heap/frees:objects", "/gc/heap/tiny/allocs:objects"}},
	{"go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/metadata/other:bytes"}},
	{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/heap/released:bytes", "/memory/classes/heap/free:bytes"}},
	{"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", monitor.GaugeMetric,
		[]string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"}},
	{"go_memstats_heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", monitor.GaugeMetric,
		[]string{"/gc/heap/objects:objects"}},
	{"go_memstats_heap_released_bytes", "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/heap/released:bytes"}},
	{"go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes", "/memory/classes/heap/released:bytes", "/memory/classes/heap/free:bytes"}},
	{"go_memstats_mallocs_total", "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", monitor.CounterMetric,
		[]string{"/gc/heap/allocs:objects", "/gc/heap/tiny/allocs:objects"}},
	{"go_memstats_mcache_inuse_bytes", "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/metadata/mcache/inuse:bytes"}},
	{"go_memstats_mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/metadata/mcache/inuse:bytes", "/memory/classes/metadata/mcache/free:bytes"}},
	{"go_memstats_mspan_inuse_bytes", "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/metadata/mspan/inuse:bytes"}},
	{"go_memstats_mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/metadata/mspan/inuse:bytes", "/memory/classes/metadata/mspan/free:bytes"}},
	{"go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", monitor.GaugeMetric,
		[]string{"/gc/heap/goal:bytes"}},
	{"go_memstats_other_sys_bytes", "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/other:bytes"}},
	{"go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/heap/stacks:bytes"}},
	{"go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", monitor.GaugeMetric,
		[]string{"/memory/classes/heap/stacks:bytes", "/memory/classes/os-stacks:bytes"}},
	{"go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", monitor.GaugeMetric,
		[]string{"/memory/classes/total:bytes"}},
	{"go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.", monitor.GaugeMetric,
		[]string{"/gc/gogc:percent"}},
	{"go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", monitor.GaugeMetric,
		[]string{"/gc/gomemlimit:bytes"}},
	{"go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.", monitor.GaugeMetric,
		[]string{"/sched/gomaxprocs:threads"}},
}

// gcQuantiles are go_gc_duration_seconds's quantiles.
var gcQuantiles = []float64{0, 0.25, 0.5, 0.75, 1}

// goMetrics reads the Go runtime's metrics.
func goMetrics() []monitor.Metric {
	var keys []string
	index := map[string]int{}
	for _, s := range memstats {
		for _, k := range s.keys {
			if _, ok := index[k]; !ok {
				index[k] = len(keys)
				keys = append(keys, k)
			}
		}
	}
	samples := make([]metrics.Sample, len(keys))
	for i, k := range keys {
		samples[i].Name = k
	}
	metrics.Read(samples)
	value := func(k string) float64 {
		switch v := samples[index[k]].Value; v.Kind() {
		case metrics.KindUint64:
			return float64(v.Uint64())
		case metrics.KindFloat64:
			return v.Float64()
		}
		return 0
	}
	var out []monitor.Metric
	for _, s := range memstats {
		sum := 0.0
		for _, k := range s.keys {
			sum += value(k)
		}
		out = append(out, monitor.Metric{Name: s.name, Help: s.help, Type: s.typ, Value: sum})
	}

	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, len(gcQuantiles))
	debug.ReadGCStats(&gc)
	qs := make([]monitor.Quantile, len(gcQuantiles))
	for i, q := range gcQuantiles {
		qs[i] = monitor.Quantile{Q: q, Value: gc.PauseQuantiles[i].Seconds()}
	}
	lastGC := 0.0
	if !gc.LastGC.IsZero() {
		lastGC = float64(gc.LastGC.UnixNano()) / 1e9
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	return append(out,
		monitor.Metric{Name: "go_gc_duration_seconds", Help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.",
			Type: monitor.SummaryMetric, Count: uint64(gc.NumGC), Sum: gc.PauseTotal.Seconds(), Quantiles: qs},
		monitor.Metric{Name: "go_goroutines", Help: "Number of goroutines that currently exist.", Type: monitor.GaugeMetric, Value: float64(runtime.NumGoroutine())},
		monitor.Metric{Name: "go_info", Help: "Information about the Go environment.", Type: monitor.GaugeMetric, Value: 1,
			Labels: []string{"version", runtime.Version()}},
		monitor.Metric{Name: "go_memstats_last_gc_time_seconds", Help: "Number of seconds since 1970 of last garbage collection.", Type: monitor.GaugeMetric, Value: lastGC},
		monitor.Metric{Name: "go_threads", Help: "Number of OS threads created.", Type: monitor.GaugeMetric, Value: float64(threads)},
	)
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times:
// 100 on every Linux Go supports.
const clockTicks = 100

// processMetrics reads the process's metrics from /proc; what cannot be
// read (another system, a locked-down /proc) is left out, and err says
// why.
func processMetrics() (out []monitor.Metric, err error) {
	add := func(name, help string, t monitor.MetricType, v float64) {
		out = append(out, monitor.Metric{Name: name, Help: help, Type: t, Value: v})
	}
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15, starttime 22,
	// vsize 23, rss 24.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	field := func(n int) float64 {
		if n-3 >= len(fields) {
			return 0
		}
		v, _ := strconv.ParseFloat(fields[n-3], 64)
		return v
	}
	add("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", monitor.CounterMetric, (field(14)+field(15))/clockTicks)
	if limit, ok := procLimit("Max open files"); ok {
		add("process_max_fds", "Maximum number of open file descriptors.", monitor.GaugeMetric, limit)
	}
	if rx, tx, ok := netDev(); ok {
		add("process_network_receive_bytes_total", "Number of bytes received by the process over the network.", monitor.CounterMetric, rx)
		add("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", monitor.CounterMetric, tx)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		add("process_open_fds", "Number of open file descriptors.", monitor.GaugeMetric, float64(len(fds)))
	}
	add("process_resident_memory_bytes", "Resident memory size in bytes.", monitor.GaugeMetric, field(24)*float64(os.Getpagesize()))
	if boot, ok := bootTime(); ok {
		add("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", monitor.GaugeMetric, boot+field(22)/clockTicks)
	}
	add("process_virtual_memory_bytes", "Virtual memory size in bytes.", monitor.GaugeMetric, field(23))
	if limit, ok := procLimit("Max address space"); ok {
		add("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", monitor.GaugeMetric, limit)
	}
	return out, nil
}

// procLimit reads a soft limit from /proc/self/limits; unlimited is the
// largest 64-bit number.
func procLimit(name string) (float64, bool) {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, name))
		if len(f) == 0 {
			return 0, false
		}
		if f[0] == "unlimited" {
			return math.MaxUint64, true
		}
		v, err := strconv.ParseFloat(f[0], 64)
		return v, err == nil
	}
	return 0, false
}

// netDev sums the bytes received and sent over every interface of the
// process's network namespace (/proc/self/net/dev).
func netDev() (rx, tx float64, ok bool) {
	f, err := os.Open("/proc/self/net/dev")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, counts, found := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(counts)
		if !found || len(fields) < 9 {
			continue // the two header lines
		}
		r, err1 := strconv.ParseFloat(fields[0], 64)
		t, err2 := strconv.ParseFloat(fields[8], 64)
		if err1 == nil && err2 == nil {
			rx, tx = rx+r, tx+t
		}
	}
	return rx, tx, sc.Err() == nil
}

// bootTime is the system's boot time in seconds since the epoch
// (/proc/stat's btime).
func bootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
