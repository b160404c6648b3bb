package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestProgressLine: on a terminal the line is rewritten in place (\r, and
// padded over a longer previous line) and cleared at the end; elsewhere
// each phase gets a plain line.
func TestProgressLine(t *testing.T) {
	var tty bytes.Buffer
	p := newProgress(&tty, true, time.Hour) // printed by hand below
	p.start("lock · round 1/3 · target 127.0.0.1:2181")
	p.phase("measure", 10, "acquisitions")
	p.done.Add(3)
	p.print()
	p.start("lock · round 2/3 · target x")
	p.print()
	p.close()
	out := tty.String()
	first := "\rlock · round 1/3 · target 127.0.0.1:2181 · measure 3/10 acquisitions · "
	if !strings.HasPrefix(out, first) {
		t.Errorf("terminal output starts %q, want %q", out, first)
	}
	if strings.Contains(out, "\n") {
		t.Errorf("terminal output has a newline: %q", out)
	}
	second := strings.Index(out, "\rlock · round 2/3 · target x · measure 3/10 acquisitions · ")
	if second < 0 {
		t.Fatalf("no rewritten second line in %q", out)
	}
	// The shorter second line is padded to cover the first, and close
	// blanks the line and returns to its start.
	firstLine := out[1:second]
	secondLine, _, _ := strings.Cut(out[second+1:], "\r")
	if utf8.RuneCountInString(secondLine) < utf8.RuneCountInString(firstLine) || !strings.HasSuffix(secondLine, " ") {
		t.Errorf("the shorter line %q does not cover the longer %q", secondLine, firstLine)
	}
	if !strings.HasSuffix(out, " \r") || strings.TrimRight(out[strings.LastIndex(out[:len(out)-1], "\r"):], " \r") != "" {
		t.Errorf("close does not clear the line: %q", out)
	}

	var plain bytes.Buffer
	p = newProgress(&plain, false, time.Hour)
	p.start("memory · round 1/1 · against 127.0.0.1:2182")
	p.phase("measure", 500, "znodes")
	p.phase("cleanup", 0, "znodes deleted")
	p.close()
	lines := strings.Split(strings.TrimSuffix(plain.String(), "\n"), "\n")
	if len(lines) != 4 || strings.Contains(plain.String(), "\r") {
		t.Fatalf("plain progress %q, want a line as each phase begins and ends, and no \\r", plain.String())
	}
	// Each phase's end is a line of its own, with what it did and how
	// long it took: a log read afterwards shows where the time went.
	if !strings.HasPrefix(lines[0], "memory · round 1/1 · against 127.0.0.1:2182 · measure 0/500 znodes · ") ||
		!strings.HasPrefix(lines[1], "memory · round 1/1 · against 127.0.0.1:2182 · measure 0/500 znodes · ") ||
		!strings.HasSuffix(lines[1], "s · done") ||
		!strings.HasPrefix(lines[2], "memory · round 1/1 · against 127.0.0.1:2182 · cleanup 0 znodes deleted · ") ||
		!strings.HasSuffix(lines[3], "s · done") {
		t.Errorf("plain progress lines %q", lines)
	}
}
