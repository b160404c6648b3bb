package quota

import (
	"slices"
	"strconv"
	"strings"
)

// Where quotas live, as ZooKeeper's Quotas.
const (
	// Root is the node under which every quota is kept.
	Root = "/zookeeper/quota"
	// LimitNode holds a quota's limits.
	LimitNode = "zookeeper_limits"
	// StatNode holds what the subtree under the quota uses.
	StatNode = "zookeeper_stats"
)

// LimitPath is Quotas.limitPath: where the limits of a quota on path are.
func LimitPath(path string) string { return Root + path + "/" + LimitNode }

// StatPath is Quotas.statPath: where the usage of a quota on path is.
func StatPath(path string) string { return Root + path + "/" + StatNode }

// The keys of a StatsTrack.
const (
	Count          = "count"
	Bytes          = "bytes"
	CountHardLimit = "countHardLimit"
	ByteHardLimit  = "byteHardLimit"
)

// Stats is ZooKeeper's StatsTrack: key=value pairs in which a missing key
// reads as -1. The same form holds a quota's limits (count and bytes are
// the soft limits) and its usage.
type Stats map[string]int64

// Get returns the value of key, -1 if it is missing.
func (s Stats) Get(key string) int64 {
	if v, ok := s[key]; ok {
		return v
	}
	return -1
}

// Set sets key to v.
func (s Stats) Set(key string, v int64) { s[key] = v }

// Clone returns a copy.
func (s Stats) Clone() Stats {
	out := make(Stats, len(s))
	for k, v := range s {
		out[k] = v
	}
	return out
}

// ParseError is data that StatsTrack's constructor throws on: a value
// that is not a long (NumberFormatException, whose message Msg is), or a
// pair with no value at all (ArrayIndexOutOfBoundsException).
type ParseError struct {
	Msg string
}

func (e *ParseError) Error() string { return e.Msg }

// Parse reads data as StatsTrack's constructor: pairs separated by runs
// of ',' and ';', each split on '=' with Java's String.split (trailing
// empty strings dropped); the value is a long, or -1 when empty. Empty
// data is no pairs.
func Parse(data []byte) (Stats, error) {
	s := Stats{}
	if len(data) == 0 {
		return s, nil
	}
	for _, pair := range javaSplit(string(data), ",;", true) {
		kv := javaSplit(pair, "=", false)
		if len(kv) < 2 {
			// kv[0] is read first, then kv[1].
			return nil, &ParseError{Msg: "Index " + strconv.Itoa(len(kv)) + " out of bounds for length " + strconv.Itoa(len(kv))}
		}
		var v int64 = -1
		if kv[1] != "" {
			var err error
			if v, err = strconv.ParseInt(kv[1], 10, 64); err != nil {
				return nil, &ParseError{Msg: `For input string: "` + kv[1] + `"`}
			}
		}
		s[kv[0]] = v
	}
	return s, nil
}

// javaSplit is Java's String.split on any byte of seps, one at a time
// ("=") or, with runs, a run of them as one separator ("[,;]+"): a
// leading empty string is kept and trailing empty strings are dropped,
// but a string without a separator comes back whole, even empty.
func javaSplit(s, seps string, runs bool) []string {
	if strings.IndexAny(s, seps) < 0 {
		return []string{s}
	}
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(seps, s[i]) < 0 {
			continue
		}
		out = append(out, s[start:i])
		for runs && i+1 < len(s) && strings.IndexByte(seps, s[i+1]) >= 0 {
			i++
		}
		start = i + 1
	}
	out = append(out, s[start:])
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// String is StatsTrack.toString: count and bytes first, then, after an
// "=" that 3.4's parser skips, the other keys sorted, each as
// ";key=value".
func (s Stats) String() string { return string(s.Append(nil)) }

// Append appends String's bytes to b.
func (s Stats) Append(b []byte) []byte {
	b = append(b, "count="...)
	b = strconv.AppendInt(b, s.Get(Count), 10)
	b = append(b, ",bytes="...)
	b = strconv.AppendInt(b, s.Get(Bytes), 10)
	var rest []string
	for k := range s {
		if k != Count && k != Bytes {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		b = append(b, '=')
		slices.Sort(rest)
		for _, k := range rest {
			b = append(b, ';')
			b = append(b, k...)
			b = append(b, '=')
			b = strconv.AppendInt(b, s[k], 10)
		}
	}
	return b
}

// Exceeded is a limit a write passed: ZooKeeper logs each one (rate
// limited) with the text of String, and refuses the write if the limit
// is hard.
type Exceeded struct {
	Path    string // the path the quota is on
	Bytes   bool   // the byte limit; otherwise the count
	Current int64  // what the subtree would hold
	Limit   int64
	Hard    bool
}

// String is ZooKeeper's message: "Quota exceeded: /a [current count=3,
// softCountLimit=2]".
func (q Exceeded) String() string {
	what, limit := "count", "CountLimit"
	if q.Bytes {
		what, limit = "bytes", "ByteLimit"
	}
	kind := "soft"
	if q.Hard {
		kind = "hard"
	}
	return "Quota exceeded: " + q.Path + " [current " + what + "=" + strconv.FormatInt(q.Current, 10) +
		", " + kind + limit + "=" + strconv.FormatInt(q.Limit, 10) + "]"
}
