package membership

import "strconv"

// ZooKeeper prints a configuration by iterating its members' HashMap, so
// the order of the server.N lines in /zookeeper/config and in a reconfig's
// reply is Java's hash order, not the ids': a three-member ensemble that
// gains server 100 prints 1, 2, 3, 100, but one member that gains server
// 100 prints 100 before 1, and {1, 2} gaining 4 prints 4, 1, 2. To answer
// with ZooKeeper's exact text, hutch keeps its members in that order,
// worked out here by replaying what ZooKeeper does to its maps:
//
//   - An incremental reconfig copies the last configuration's map (new
//     HashMap(Map), sized from its member count), removes the leaving ids,
//     and removes then puts each joiner.
//   - A configuration parsed from text (zoo.cfg, a non-incremental
//     reconfig, what a new leader reads back) loads the lines into
//     java.util.Properties, whose ConcurrentHashMap iterates in the hash
//     order of the "server.N" keys, and puts each into a default HashMap.
//
// Only iteration order matters, so the maps hold ids and the members are
// looked up afterwards.

// javaHashMap is java.util.HashMap's bucket layout for Long keys: chains
// in insertion order, split in order when the table doubles.
type javaHashMap struct {
	table     [][]uint64
	size      int
	threshold int // 0 before the table exists: the default capacity applies
}

const (
	javaDefaultCapacity = 16
	javaLoadFactor      = 0.75
)

// javaLongHash is HashMap.hash(Long.valueOf(id)).
func javaLongHash(id uint64) int32 {
	h := int32(id ^ id>>32)
	return h ^ int32(uint32(h)>>16)
}

// tableSizeFor is HashMap.tableSizeFor: the smallest power of two >= c.
func tableSizeFor(c int) int {
	n := 1
	for n < c {
		n <<= 1
	}
	return n
}

// newJavaHashMapCopy is new HashMap<>(m) for a map iterating as order.
func newJavaHashMapCopy(order []uint64) *javaHashMap {
	m := &javaHashMap{}
	if len(order) > 0 {
		// putMapEntries pre-sizes in float arithmetic (Java 17).
		ft := float32(len(order))/float32(javaLoadFactor) + 1
		m.threshold = tableSizeFor(int(ft))
	}
	for _, id := range order {
		m.put(id)
	}
	return m
}

func (m *javaHashMap) index(id uint64) int {
	return int(javaLongHash(id)) & (len(m.table) - 1)
}

// put adds id at the end of its chain, or leaves it where it is.
func (m *javaHashMap) put(id uint64) {
	if m.table == nil {
		m.resize()
	}
	i := m.index(id)
	for _, k := range m.table[i] {
		if k == id {
			return
		}
	}
	m.table[i] = append(m.table[i], id)
	m.size++
	if m.size > m.threshold {
		m.resize()
	}
}

func (m *javaHashMap) remove(id uint64) {
	if m.table == nil {
		return
	}
	i := m.index(id)
	for j, k := range m.table[i] {
		if k == id {
			m.table[i] = append(m.table[i][:j:j], m.table[i][j+1:]...)
			m.size--
			return
		}
	}
}

// resize is HashMap.resize: the first table takes the pre-sized or
// default capacity; later ones double, each chain splitting in order
// between its index and index+old capacity.
func (m *javaHashMap) resize() {
	old := m.table
	var n int
	switch {
	case old != nil:
		n = 2 * len(old)
	case m.threshold > 0:
		n = m.threshold
	default:
		n = javaDefaultCapacity
	}
	m.table = make([][]uint64, n)
	m.threshold = int(float64(n) * javaLoadFactor)
	for j, chain := range old {
		for _, id := range chain {
			if int(javaLongHash(id))&len(old) == 0 {
				m.table[j] = append(m.table[j], id)
			} else {
				m.table[j+len(old)] = append(m.table[j+len(old)], id)
			}
		}
	}
}

// order is the map's iteration order.
func (m *javaHashMap) order() []uint64 {
	out := make([]uint64, 0, m.size)
	for _, chain := range m.table {
		out = append(out, chain...)
	}
	return out
}

// javaStringHash is String.hashCode.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r > 0xffff {
			// Outside the BMP Java hashes a surrogate pair.
			r -= 0x10000
			h = 31*h + int32(0xd800+(r>>10))
			h = 31*h + int32(0xdc00+(r&0x3ff))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// chmSpread is ConcurrentHashMap.spread.
func chmSpread(h int32) int32 { return (h ^ int32(uint32(h)>>16)) & 0x7fffffff }

// propertiesOrder is the order in which java.util.Properties (a
// ConcurrentHashMap of initial capacity 8, so a table of 16 that doubles
// once it holds three quarters) iterates keys loaded in the given order;
// a key loaded twice keeps its first place.
func propertiesOrder(keys []string) []string {
	table := make([][]string, 16)
	size := 0
	for _, k := range keys {
		i := int(chmSpread(javaStringHash(k))) & (len(table) - 1)
		dup := false
		for _, o := range table[i] {
			dup = dup || o == k
		}
		if dup {
			continue
		}
		table[i] = append(table[i], k)
		size++
		if size >= len(table)-len(table)/4 {
			table = chmTransfer(table)
		}
	}
	var out []string
	for _, bin := range table {
		out = append(out, bin...)
	}
	return out
}

// chmTransfer doubles a ConcurrentHashMap's table as transfer does: the
// longest tail of a bin whose nodes all go the same way keeps its order,
// and the nodes before it are pushed in front one by one (so reversed).
func chmTransfer(old [][]string) [][]string {
	n := len(old)
	next := make([][]string, 2*n)
	for i, bin := range old {
		if len(bin) == 0 {
			continue
		}
		bit := func(k string) int { return int(chmSpread(javaStringHash(k))) & n }
		last := len(bin) - 1
		for last > 0 && bit(bin[last-1]) == bit(bin[len(bin)-1]) {
			last--
		}
		var lo, hi []string
		if bit(bin[last]) == 0 {
			lo = append(lo, bin[last:]...)
		} else {
			hi = append(hi, bin[last:]...)
		}
		for _, k := range bin[:last] {
			if bit(k) == 0 {
				lo = append([]string{k}, lo...)
			} else {
				hi = append([]string{k}, hi...)
			}
		}
		next[i], next[i+n] = lo, hi
	}
	return next
}

// parsedOrder is the order of members parsed from server.N lines given in
// order, followed by a version line when withVersion is set (it shares
// the Properties table): Properties' iteration order, put into a default
// HashMap.
func parsedOrder(ids []uint64, withVersion bool) []uint64 {
	keys := make([]string, 0, len(ids)+1)
	byKey := make(map[string]uint64, len(ids))
	for _, id := range ids {
		k := "server." + strconv.FormatUint(id, 10)
		keys = append(keys, k)
		byKey[k] = id
	}
	if withVersion {
		keys = append(keys, "version")
	}
	m := &javaHashMap{}
	for _, k := range propertiesOrder(keys) {
		if id, ok := byKey[k]; ok {
			m.put(id)
		}
	}
	return m.order()
}

// incrementalOrder is the order of an incremental reconfig's result: a copy
// of prev's map, leaving ids removed, each joiner removed and put again.
func incrementalOrder(prev []uint64, leaving, joining []uint64) []uint64 {
	m := newJavaHashMapCopy(prev)
	for _, id := range leaving {
		m.remove(id)
	}
	for _, id := range joining {
		m.remove(id)
		m.put(id)
	}
	return m.order()
}
