package javaprops

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Property is one key=value of a properties file, with the line it starts on.
type Property struct {
	Key   string
	Value string
	Line  int
}

// maxFileSize bounds what Read reads: a zoo.cfg is a few kilobytes, and
// a path given by mistake (a log, a device) must not fill memory.
const maxFileSize = 4 << 20

// Read decodes the Java properties format as
// java.util.Properties.load does: '#' and '!' start comment lines, a
// backslash at the end of a line continues it, the key ends at the first
// unescaped '=', ':' or white space, and \t \n \r \f \uXXXX and \c escapes
// are decoded. Unlike Java it reads UTF-8 rather than ISO-8859-1. Keys and
// values are trimmed, as ZooKeeper trims them. Properties come back in file
// order, duplicates included.
func Read(r io.Reader) ([]Property, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", maxFileSize)
	}
	sc := bufio.NewScanner(strings.NewReader(normalizeNewlines(string(data))))
	sc.Buffer(make([]byte, 0, 4096), maxFileSize+1)
	var (
		props   []Property
		logical strings.Builder
		start   int  // line the logical line began on
		cont    bool // the previous natural line ended in a continuation
		lineNo  int
	)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if cont {
			line = strings.TrimLeft(line, " \t\f")
		} else {
			trimmed := strings.TrimLeft(line, " \t\f")
			if trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!' {
				continue
			}
			line = trimmed
			start = lineNo
			logical.Reset()
		}
		if endsInContinuation(line) {
			logical.WriteString(line[:len(line)-1])
			cont = true
			continue
		}
		logical.WriteString(line)
		cont = false
		p, err := splitProperty(logical.String())
		if err != nil {
			return nil, &LineError{Line: start, Err: err}
		}
		p.Line = start
		props = append(props, p)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cont {
		// Java keeps what it has at end of input.
		p, err := splitProperty(logical.String())
		if err != nil {
			return nil, &LineError{Line: start, Err: err}
		}
		p.Line = start
		props = append(props, p)
	}
	return props, nil
}

// LineError is a line Read cannot decode.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// normalizeNewlines turns \r\n and lone \r into \n: Java ends lines at all three.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// endsInContinuation reports an odd number of trailing backslashes.
func endsInContinuation(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits one logical line into key and value and unescapes both.
func splitProperty(line string) (Property, error) {
	keyEnd, valueStart := len(line), len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped character is part of the key
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			keyEnd = i
			j := i
			for j < len(line) && isPropSpace(line[j]) {
				j++
			}
			if (c == '=' || c == ':') && j == i {
				j++ // the separator itself
			} else if j < len(line) && (line[j] == '=' || line[j] == ':') {
				j++
			}
			for j < len(line) && isPropSpace(line[j]) {
				j++
			}
			valueStart = j
			break
		}
	}
	key, err := unescape(line[:keyEnd])
	if err != nil {
		return Property{}, err
	}
	value, err := unescape(line[valueStart:])
	if err != nil {
		return Property{}, err
	}
	return Property{Key: strings.TrimSpace(key), Value: strings.TrimSpace(value)}, nil
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// unescape decodes the properties escapes.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		switch c := s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uxxxx escape`)
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uxxxx escape %q`, s[i-1:i+5])
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
