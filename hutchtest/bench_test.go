package hutchtest

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutchzk/hutch/internal/realzk"
	"github.com/hutchzk/hutch/server"
	"github.com/hutchzk/hutch/wire"
)

// Start-up costs, for docs/testing.md. Run them once, side by side:
//
//	go test ./hutchtest -run '^$' -bench 'Start|Servers|Ruok' -benchtime 20x
//
// (BenchmarkThousandServers does a thousand servers per op: -benchtime 1x.)
// The binary's start and its breakdown, for docs/performance.md, in
// rounds so that a load that comes and goes shows:
//
//	go test ./hutchtest -run '^$' -bench 'Binary' -benchtime 100x -count 5

var quiet = slog.New(slog.DiscardHandler)

// handshake opens an in-memory connection to s and completes a session
// handshake: the server has accepted its first client.
func handshake(tb testing.TB, s *server.Server) {
	nc, err := s.DialMemory()
	if err != nil {
		tb.Fatal(err)
	}
	defer nc.Close()
	var e wire.Encoder
	at := e.BeginFrame()
	(&wire.ConnectRequest{Timeout: 10000, Passwd: make([]byte, 16)}).Encode(&e)
	e.EndFrame(at)
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write(e.Bytes()); err != nil {
		tb.Fatal(err)
	}
	frame, err := wire.ReadFrame(bufio.NewReader(nc), 1<<20, nil)
	if err != nil {
		tb.Fatal(err)
	}
	var resp wire.ConnectResponse
	d := wire.NewDecoder(frame)
	resp.Decode(d)
	if d.Err() != nil || resp.SessionID == 0 {
		tb.Fatalf("handshake: %+v %v", resp, d.Err())
	}
}

// BenchmarkStartToFirstClient: an in-process server, from New to its
// first client's session established (in memory), then closed.
func BenchmarkStartToFirstClient(b *testing.B) {
	for b.Loop() {
		s := server.New(server.Config{NoClientPort: true, Logger: quiet})
		if err := s.Start(); err != nil {
			b.Fatal(err)
		}
		handshake(b, s)
		_ = s.Close()
	}
}

// BenchmarkThousandServers: a thousand in-process servers started (each
// with one client session) and then stopped, in one process; reported
// per server: time, heap in use while all run, goroutines while all run.
func BenchmarkThousandServers(b *testing.B) {
	const n = 1000
	var heap, goroutines float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		servers := make([]*server.Server, n)
		for i := range servers {
			servers[i] = server.New(server.Config{NoClientPort: true, Logger: quiet})
			if err := servers[i].Start(); err != nil {
				b.Fatal(err)
			}
			handshake(b, servers[i])
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapInuse-before.HeapInuse) / n
		goroutines = float64(runtime.NumGoroutine()-g0) / n
		for _, s := range servers {
			_ = s.Close()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e6, "ms/server")
	b.ReportMetric(heap, "heap-B/server")
	b.ReportMetric(goroutines, "goroutines/server")
}

// BenchmarkBinaryStartToRuok: the hutch binary, from exec to imok, as a
// harness in another language runs it: --listen 127.0.0.1:0, the first
// line of standard output, one ruok. Besides the mean (ns/op) it reports
// the median and 90th percentile, which a loaded machine's stragglers
// move less.
func BenchmarkBinaryStartToRuok(b *testing.B) {
	bin := realzk.BuildHutch(b)
	var took, cpu []time.Duration
	for b.Loop() {
		began := time.Now()
		cmd := exec.Command(bin, "--listen", "127.0.0.1:0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		addr, err := bufio.NewReader(out).ReadString('\n')
		if err == nil {
			var reply string
			reply, err = realzk.FourLetterWord(strings.TrimSpace(addr), "ruok", 30*time.Second)
			if err == nil && reply != "imok" {
				err = fmt.Errorf("ruok: %q", reply)
			}
		}
		took = append(took, time.Since(began))
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if err != nil {
			b.Fatal(err)
		}
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	reportQuantiles(b, took, cpu)
}

// BenchmarkBinaryInit: where BenchmarkBinaryStartToRuok's time goes
// before the server starts, each from exec to exit: true (the machine's
// own floor, a C program that does nothing: fork, exec and exit), an empty
// Go program (the runtime's own start and exit), and hutch --help (every package of
// the binary initialised, the flags parsed, no server). To imok minus
// hutch --help is the server's start and the first ruok.
func BenchmarkBinaryInit(b *testing.B) {
	empty := filepath.Join(b.TempDir(), "empty")
	src := empty + ".go"
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", empty, src).CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	hutch := realzk.BuildHutch(b)
	type startRun struct {
		name string
		argv []string
	}
	runs := []startRun{{"empty-program", []string{empty}}, {"hutch-help", []string{hutch, "--help"}}}
	if tru, err := exec.LookPath("true"); err == nil {
		runs = append([]startRun{{"true", []string{tru}}}, runs...)
	}
	for _, run := range runs {
		b.Run(run.name, func(b *testing.B) {
			var took, cpu []time.Duration
			for b.Loop() {
				began := time.Now()
				cmd := exec.Command(run.argv[0], run.argv[1:]...)
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(began))
				cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			}
			reportQuantiles(b, took, cpu)
		})
	}
}

// reportQuantiles reports the median and 90th percentile of took, the
// wall time of each start, in milliseconds, and the median CPU time the
// process used (user and system; to its kill, a little after imok), which
// a loaded machine inflates far less than the wall time.
func reportQuantiles(b *testing.B, took, cpu []time.Duration) {
	if len(took) == 0 {
		return
	}
	ms := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[int(q*float64(len(d)-1))].Nanoseconds()) / 1e6
	}
	b.ReportMetric(ms(took, 0.5), "median-ms")
	b.ReportMetric(ms(took, 0.9), "p90-ms")
	b.ReportMetric(ms(cpu, 0.5), "median-cpu-ms")
}

// BenchmarkZooKeeperStartToRuok: Debian's ZooKeeper 3.8 standalone (the
// JVM flags realzk uses for tests), from exec to imok, ruok polled every
// 5 ms: it has no way to say it is up.
func BenchmarkZooKeeperStartToRuok(b *testing.B) {
	base := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		port := realzk.FreePort(b)
		cmd := realzk.ZooKeeperCommand(b, filepath.Join(base, strconv.Itoa(i)), port)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		deadline := time.Now().Add(60 * time.Second)
		var err error
		for {
			var reply string
			reply, err = realzk.FourLetterWord(addr, "ruok", time.Second)
			if err == nil && reply == "imok" {
				break
			}
			if time.Now().After(deadline) {
				err = fmt.Errorf("no imok from %s after 60s: %q %v", addr, reply, err)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if err != nil {
			b.Fatal(err)
		}
	}
}
