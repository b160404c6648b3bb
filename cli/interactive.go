package cli

import (
	"errors"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/term"
)

// terminalOf returns stdin and stdout as one terminal when stdin is one.
func terminalOf(in io.Reader, out io.Writer) (*os.File, bool) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, false
	}
	if _, ok := out.(*os.File); !ok {
		return nil, false
	}
	return f, true
}

// prompt is zkCli's: "[zk: localhost:2181(CONNECTED) 0] ".
func (s *session) prompt() string {
	state := "CLOSED"
	if s.zk != nil {
		state = s.zk.State().String()
		if s.zk.ReadOnly() {
			state = "CONNECTEDREADONLY"
		}
	}
	return "[zk: " + s.host + "(" + state + ") " + strconv.Itoa(s.count) + "] "
}

// interactive reads commands from the terminal with line editing, history
// (up and down arrows) and tab completion. The terminal is raw only while
// a line is edited, so that Ctrl-C during a command is SIGINT (which stops
// a watch); Ctrl-C or Ctrl-D at the prompt ends the session. setRestore
// hands the interrupt handler what puts the terminal back.
func (s *session) interactive(tty *os.File, setRestore func(func())) int {
	fd := int(tty.Fd())
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{tty, s.out}, "")
	s.out, s.err = t, t
	t.AutoCompleteCallback = func(line string, pos int, key rune) (string, int, bool) {
		if key != '\t' {
			return "", 0, false
		}
		newLine, newPos, candidates := s.complete(line, pos)
		if len(candidates) > 1 && newLine == line {
			io.WriteString(t, strings.Join(candidates, "  ")+"\n")
		}
		return newLine, newPos, true
	}
	s.printOut("Connecting to " + s.host + "\n")
	for {
		if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
			t.SetSize(w, h)
		}
		t.SetPrompt(s.prompt())
		old, err := term.MakeRaw(fd)
		if err != nil {
			s.printErr("hutch cli: " + err.Error() + "\n")
			return exitFailure
		}
		setRestore(func() { term.Restore(fd, old) })
		line, err := t.ReadLine()
		term.Restore(fd, old)
		setRestore(nil)
		if err != nil && !errors.Is(err, term.ErrPasteIndicator) {
			break // io.EOF: Ctrl-D or Ctrl-C at the prompt
		}
		if _, quit := s.executeLine(line); quit {
			break
		}
	}
	return s.lastCode
}

// complete completes the word before pos in line, as zkCli's completer: a
// word starting with / is a znode path, completed from the children the
// server lists for its parent; the first word is a command name. It
// returns the new line and cursor, and the candidates, sorted: one is
// filled in (a command with a space after it), several are completed to
// their common prefix.
func (s *session) complete(line string, pos int) (string, int, []string) {
	before := line[:pos]
	start := strings.LastIndexByte(before, ' ') + 1
	word := before[start:]
	var candidates []string
	var stem string // the part of word the candidates complete
	switch {
	case strings.HasPrefix(word, "/"):
		if s.zk == nil {
			return line, pos, nil
		}
		slash := strings.LastIndexByte(word, '/')
		dir := word[:slash]
		if dir == "" {
			dir = "/"
		}
		children, err := s.zk.Children(dir, false)
		if err != nil {
			return line, pos, nil
		}
		stem = word[:slash+1]
		for _, c := range children {
			if strings.HasPrefix(c, word[slash+1:]) {
				candidates = append(candidates, c)
			}
		}
	case start == 0:
		for _, name := range commandNames() {
			if strings.HasPrefix(name, word) {
				candidates = append(candidates, name)
			}
		}
	default:
		return line, pos, nil
	}
	sort.Strings(candidates)
	var completed string
	switch {
	case len(candidates) == 0:
		return line, pos, nil
	case len(candidates) == 1 && start == 0 && stem == "":
		completed = candidates[0] + " "
	case len(candidates) == 1:
		completed = stem + candidates[0]
	default:
		completed = stem + commonPrefix(candidates)
	}
	newBefore := before[:start] + completed
	return newBefore + line[pos:], len(newBefore), candidates
}

func commonPrefix(words []string) string {
	p := words[0]
	for _, w := range words[1:] {
		for !strings.HasPrefix(w, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}
