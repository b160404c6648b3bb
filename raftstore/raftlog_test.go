package raftstore

import (
	"bytes"
	"io"

	"github.com/hashicorp/raft"
)

type raftLog = raft.Log

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func (s *memSink) reader() io.ReadCloser { return io.NopCloser(bytes.NewReader(s.Bytes())) }
