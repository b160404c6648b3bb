package zoocfg

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// DigestLoginModule is the JAAS login module whose user_<name>="password"
// options list ZooKeeper's SASL DIGEST-MD5 users.
const DigestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"

// LoadJAAS reads the JAAS file at path and returns the users of its
// section (ZooKeeper's is "Server"): user name to password.
func LoadJAAS(path, section string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	users, err := ParseJAAS(f, section)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return users, nil
}

// ParseJAAS decodes a JAAS login configuration, as the JDK's ConfigFile
// reads it:
//
//	Server {
//	    org.apache.zookeeper.server.auth.DigestLoginModule required
//	    user_super="adminsecret"
//	    user_bob="bobsecret";
//	};
//
// and returns the user_<name> options of the DigestLoginModule entries of
// section. Other sections are skipped. A section that is missing, or that
// names another login module (Kerberos), is an error: hutch speaks
// DIGEST-MD5 only.
func ParseJAAS(r io.Reader, section string) (map[string]string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", maxFileSize)
	}
	p := &jaasParser{lex: jaasLexer{src: string(data), line: 1}}
	var users map[string]string
	found := false
	for {
		tok, err := p.lex.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		if tok.kind != tokWord && tok.kind != tokString {
			return nil, p.lex.errorf(tok, "expected a section name")
		}
		name := tok.text
		entries, err := p.section()
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", name, err)
		}
		if name != section {
			continue
		}
		if found {
			return nil, fmt.Errorf("section %s appears twice", name)
		}
		found = true
		users = map[string]string{}
		for _, e := range entries {
			if e.module != DigestLoginModule {
				return nil, fmt.Errorf("section %s: login module %s: hutch supports SASL DIGEST-MD5 with %s only", name, e.module, DigestLoginModule)
			}
			for k, v := range e.options {
				if user, ok := strings.CutPrefix(k, "user_"); ok && user != "" {
					users[user] = v
				}
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("no JAAS section named %q", section)
	}
	return users, nil
}

// jaasEntry is one login module line of a section.
type jaasEntry struct {
	module  string
	flag    string
	options map[string]string
}

type jaasParser struct{ lex jaasLexer }

// section reads "{ entry* };" after a section name.
func (p *jaasParser) section() ([]jaasEntry, error) {
	if err := p.expect(tokLBrace); err != nil {
		return nil, err
	}
	var entries []jaasEntry
	for {
		tok, err := p.lex.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokRBrace {
			return entries, p.expect(tokSemi)
		}
		if tok.kind != tokWord {
			return nil, p.lex.errorf(tok, "expected a login module class name")
		}
		e := jaasEntry{module: tok.text, options: map[string]string{}}
		flag, err := p.lex.next()
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(flag.text) {
		case "required", "requisite", "sufficient", "optional":
			e.flag = strings.ToLower(flag.text)
		default:
			return nil, p.lex.errorf(flag, "expected required, requisite, sufficient or optional")
		}
		for {
			tok, err := p.lex.next()
			if err != nil {
				return nil, err
			}
			if tok.kind == tokSemi {
				break
			}
			if tok.kind != tokWord {
				return nil, p.lex.errorf(tok, "expected an option name or ';'")
			}
			if err := p.expect(tokEquals); err != nil {
				return nil, err
			}
			val, err := p.lex.next()
			if err != nil {
				return nil, err
			}
			if val.kind != tokWord && val.kind != tokString {
				return nil, p.lex.errorf(val, "expected a value for option %s", tok.text)
			}
			e.options[tok.text] = val.text
		}
		entries = append(entries, e)
	}
}

func (p *jaasParser) expect(kind tokenKind) error {
	tok, err := p.lex.next()
	if err != nil {
		return err
	}
	if tok.kind != kind {
		return p.lex.errorf(tok, "expected %s", kind)
	}
	return nil
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokWord
	tokString
	tokLBrace
	tokRBrace
	tokSemi
	tokEquals
)

func (k tokenKind) String() string {
	return [...]string{"end of file", "a word", "a quoted string", "'{'", "'}'", "';'", "'='"}[k]
}

type token struct {
	kind tokenKind
	text string
	line int
}

// jaasLexer splits a JAAS file into words, quoted strings and
// punctuation, skipping white space and // and /* */ comments.
type jaasLexer struct {
	src  string
	pos  int
	line int
}

func (l *jaasLexer) errorf(tok token, format string, args ...any) error {
	got := tok.kind.String()
	if tok.kind == tokWord || tok.kind == tokString {
		got = fmt.Sprintf("%q", tok.text)
	}
	return fmt.Errorf("line %d: %s, got %s", tok.line, fmt.Sprintf(format, args...), got)
}

func (l *jaasLexer) next() (token, error) {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == '\n':
			l.line++
			l.pos++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "//"):
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return token{}, fmt.Errorf("line %d: unterminated comment", l.line)
			}
			l.line += strings.Count(l.src[l.pos:l.pos+2+end], "\n")
			l.pos += end + 4
		default:
			return l.token()
		}
	}
	return token{kind: tokEOF, line: l.line}, nil
}

func (l *jaasLexer) token() (token, error) {
	start := l.line
	switch c := l.src[l.pos]; c {
	case '{', '}', ';', '=':
		l.pos++
		kind := map[byte]tokenKind{'{': tokLBrace, '}': tokRBrace, ';': tokSemi, '=': tokEquals}[c]
		return token{kind: kind, text: string(c), line: start}, nil
	case '"':
		var b strings.Builder
		for l.pos++; l.pos < len(l.src); l.pos++ {
			switch c := l.src[l.pos]; c {
			case '"':
				l.pos++
				return token{kind: tokString, text: b.String(), line: start}, nil
			case '\\':
				if l.pos+1 < len(l.src) {
					l.pos++
					b.WriteByte(l.src[l.pos])
				}
			case '\n':
				l.line++
				b.WriteByte(c)
			default:
				b.WriteByte(c)
			}
		}
		return token{}, fmt.Errorf("line %d: unterminated quoted string", start)
	}
	begin := l.pos
	for l.pos < len(l.src) && !strings.ContainsRune(" \t\r\n\f{};=\"", rune(l.src[l.pos])) &&
		!strings.HasPrefix(l.src[l.pos:], "//") && !strings.HasPrefix(l.src[l.pos:], "/*") {
		l.pos++
	}
	return token{kind: tokWord, text: l.src[begin:l.pos], line: start}, nil
}
