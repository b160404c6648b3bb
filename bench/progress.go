package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// progress is the line hutch bench keeps on stderr while it runs: which
// workload, round and target, the phase, and how far it has come. The
// workloads count in done; a printer goroutine owned by the progress shows
// it, overwriting the line with \r on a terminal and writing plain lines,
// less often, elsewhere.
type progress struct {
	done atomic.Int64 // units of the current phase completed

	mu      sync.Mutex // guards the fields below
	w       io.Writer
	tty     bool
	run     string // "lock · round 2/3 · target 127.0.0.1:2181"
	phaseOf string
	total   int64
	unit    string
	since   time.Time
	width   int // of the last line written on a terminal

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Intervals between progress lines.
const (
	ttyEvery   = 200 * time.Millisecond
	plainEvery = 5 * time.Second
)

// newProgress starts the printer, which shows the line every interval.
func newProgress(w io.Writer, tty bool, every time.Duration) *progress {
	p := &progress{w: w, tty: tty, stop: make(chan struct{})}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.print()
			case <-p.stop:
				return
			}
		}
	})
	return p
}

// start names the run now going.
func (p *progress) start(run string) {
	if !p.tty {
		p.ended() // the run before's last phase, under its own name
	}
	p.mu.Lock()
	p.run = run
	p.mu.Unlock()
}

// phase starts a phase of the run: total units (0: unknown) to go. In a
// log (not a terminal) the phase before it gets a line saying it ended,
// with what it did and how long it took, and this one a line saying it
// began.
func (p *progress) phase(name string, total int64, unit string) {
	if !p.tty {
		p.ended()
	}
	p.done.Store(0)
	p.mu.Lock()
	p.phaseOf, p.total, p.unit, p.since = name, total, unit, time.Now()
	p.mu.Unlock()
	if !p.tty {
		p.print() // a log shows each phase begin
	}
}

// ended writes, in a log, the line that ends the current phase, once.
func (p *progress) ended() {
	l := p.line()
	p.mu.Lock()
	defer p.mu.Unlock()
	if l == "" || p.phaseOf == "" {
		return
	}
	fmt.Fprintln(p.w, l+" · done")
	p.phaseOf = ""
}

// line is the progress line as it stands.
func (p *progress) line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run == "" || p.phaseOf == "" {
		return ""
	}
	done := p.done.Load()
	count := fmt.Sprintf("%d %s", done, p.unit)
	if p.total > 0 {
		count = fmt.Sprintf("%d/%d %s", done, p.total, p.unit)
	}
	return fmt.Sprintf("%s · %s %s · %.1fs", p.run, p.phaseOf, count, time.Since(p.since).Seconds())
}

func (p *progress) print() {
	l := p.line()
	if l == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		fmt.Fprintln(p.w, l)
		return
	}
	n := utf8.RuneCountInString(l)
	pad := max(0, p.width-n)
	p.width = n
	fmt.Fprint(p.w, "\r"+l+strings.Repeat(" ", pad))
}

// close stops the printer and, on a terminal, clears the line. It may be
// called more than once.
func (p *progress) close() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.wg.Wait()
	if !p.tty {
		p.ended()
	}
	p.clearLine()
}

// clearLine blanks a terminal's progress line before other output.
func (p *progress) clearLine() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.width > 0 {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.width)+"\r")
		p.width = 0
	}
}
