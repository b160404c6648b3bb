package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main is hutch bench: it runs Run on the process's standard output and
// error. The first interrupt stops the workloads and lets them delete
// their znodes; a second one ends the process at once.
func Main(args []string) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		select {
		case s := <-sig:
			signal.Stop(sig) // the next interrupt kills
			fmt.Fprintln(os.Stderr, "\nhutch bench: interrupted; deleting the benchmark's znodes (interrupt again to leave them)")
			cancel(fmt.Errorf("stopped by signal %v", s))
		case <-ctx.Done():
		}
	}()
	return Run(ctx, args, os.Stdout, os.Stderr, isTerminal(os.Stderr))
}

// isTerminal reports whether f is a character device, where the progress
// line is rewritten in place.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Run parses args (the words after "hutch bench"), runs the workloads
// they name and prints a table per workload to stdout (or, with --json,
// one JSON document at the end), with a progress line on stderr (rewritten
// in place when tty). It returns an error if any workload failed; the
// tables say which and why.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool) error {
	opt, err := parseArgs(ctx, args, stderr)
	if errors.Is(err, errHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	rep := &Report{Target: opt.Target, Rounds: opt.Rounds, WarmUp: opt.WarmUp}
	if opt.againstSet {
		rep.Against = &opt.Against
	}
	every := plainEvery
	if tty {
		every = ttyEvery
	}
	prog := newProgress(stderr, tty, every)
	defer prog.close()
	if !opt.JSON {
		writeHeader(stdout, rep)
	}
	failed := 0
	for _, w := range opt.Workloads {
		wr := runWorkload(ctx, opt, w, prog)
		rep.Workloads = append(rep.Workloads, wr)
		if wr.Error != "" {
			failed++
		}
		if !opt.JSON {
			prog.clearLine()
			writeTable(stdout, wr, rep.Against != nil)
		}
		if ctx.Err() != nil {
			break
		}
	}
	prog.close()
	if opt.JSON {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d workloads failed", failed, len(opt.Workloads))
	}
	return nil
}

// runWorkload runs w's rounds, the target and the --against server taking
// turns (A B A B ...), the warm-up round first, and sums up the measured
// ones. It stops at the first failure.
func runWorkload(ctx context.Context, opt *Options, w *workload, prog *progress) *WorkloadReport {
	wr := &WorkloadReport{Name: w.name, Description: w.describe(opt.Size)}
	type side struct {
		name   string
		target Target
		runs   []*measurement
	}
	sides := []*side{{name: "target", target: opt.Target}}
	if opt.againstSet {
		sides = append(sides, &side{name: "against", target: opt.Against})
	}
	warm := 0
	if opt.WarmUp && !w.coldOnly {
		warm = 1
	}
	var notes []string                    // in the order first made
	noted := map[string]map[string]bool{} // note → the sides that made it
	for r := range warm + opt.Rounds {
		round := fmt.Sprintf("round %d/%d", r+1-warm, opt.Rounds)
		if r < warm {
			round = "warm-up"
		}
		for _, s := range sides {
			prog.start(fmt.Sprintf("%s · %s · %s %s", w.name, round, s.name, s.target.Connect))
			m, err := runOnce(ctx, opt, w, s.target, prog)
			if err != nil {
				wr.Error = fmt.Sprintf("%s %s, %s: %v", s.name, s.target.Connect, round, err)
				return wr
			}
			for _, n := range m.notes {
				if noted[n] == nil {
					noted[n] = map[string]bool{}
					notes = append(notes, n)
				}
				noted[n][s.name] = true
			}
			if r >= warm {
				s.runs = append(s.runs, m)
			}
		}
	}
	for _, n := range notes {
		if len(noted[n]) == len(sides) {
			wr.Notes = append(wr.Notes, n)
			continue
		}
		for _, s := range sides {
			if noted[n][s.name] {
				wr.Notes = append(wr.Notes, s.name+": "+n)
			}
		}
	}
	measured := make([][]*measurement, len(sides))
	for i, s := range sides {
		measured[i] = s.runs
	}
	summarize(wr, measured)
	return wr
}
