package zkformat

import (
	"errors"
	"fmt"
)

// Error is a file that is not what ZooKeeper writes: where it went wrong
// and how. File is set by whoever knows the file's name (Open functions
// set it).
type Error struct {
	File   string
	Offset int64 // bytes from the start of the (decompressed) stream
	Msg    string
	Err    error // the cause, when an I/O error or a record error
}

func (e *Error) Error() string {
	where := fmt.Sprintf("offset %d", e.Offset)
	if e.File != "" {
		where = e.File + ": " + where
	}
	if e.Err != nil && e.Msg == "" {
		return where + ": " + e.Err.Error()
	}
	if e.Err != nil {
		return where + ": " + e.Msg + ": " + e.Err.Error()
	}
	return where + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errors a caller may act on, matched with errors.Is.
var (
	// ErrChecksum: a seal or an entry checksum does not match.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrTruncated: the file ends inside a record.
	ErrTruncated = errors.New("file ends inside a record")
	// ErrUnknownTxn: a transaction type this package does not know.
	ErrUnknownTxn = errors.New("unknown transaction type")
)

// named gives err the file name, if it is one of ours without one.
func named(err error, file string) error {
	var e *Error
	if errors.As(err, &e) && e.File == "" {
		e.File = file
	}
	return err
}
