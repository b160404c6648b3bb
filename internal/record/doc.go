// Package record reads the binary records of hutch's own formats: log
// entries (zkdb), membership (membership) and snapshots (zkdb, tree).
// They are built of varints, length-prefixed byte strings and fixed
// fields; this package reads them one way everywhere, so the bounds checks
// a corrupt or hostile length needs live in one place.
//
// Slice reads a record held in memory, aliasing it; Stream reads a
// snapshot as it streams in, never allocating more than a bounded chunk
// ahead of the bytes that back it, and keeping a CRC-64 of every byte
// read. Both keep the first failure and return zero values after it, so
// a decoder reads a whole record and checks once.
package record
