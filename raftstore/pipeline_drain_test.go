package raftstore

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// pipelineWedges drives one append pipeline as hashicorp/raft's
// replication does (pipelineReplicate and pipelineDecode, v1.7.3) when a
// follower answers an append unsuccessfully: the decoder returns on that
// answer, and the send loop, which may pick another trigger before it
// sees the decoder gone, sends twice more. It reports whether a send or
// the pipeline's Close hung. drained puts drainedPipeline on the leader's
// side.
func pipelineWedges(t *testing.T, drained bool) bool {
	t.Helper()
	follower, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	go func() {
		first := true
		for rpc := range follower.Consumer() {
			// The first append fails, as on a follower whose disk
			// refused it; later ones succeed.
			rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: !first}, nil)
			first = false
		}
	}()
	leader, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	var trans raft.Transport = leader
	if drained {
		trans = &clampedTransport{NetworkTransport: leader, rpcs: leader.Consumer()}
	}
	p, err := trans.AppendEntriesPipeline("f", follower.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for f := range p.Consumer() {
			if !f.Response().Success {
				return // pipelineDecode: "Abort pipeline if not successful"
			}
		}
	}()
	send := func() bool {
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.AppendEntries(&raft.AppendEntriesRequest{Term: 1}, new(raft.AppendEntriesResponse))
		}()
		select {
		case <-done:
			return true
		case <-time.After(3 * time.Second):
			return false
		}
	}
	if !send() {
		t.Fatal("the first append hung")
	}
	<-finished
	for range 2 {
		if !send() {
			return true
		}
	}
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	select {
	case <-closed:
		return false
	case <-time.After(3 * time.Second):
		return true
	}
}

// TestPipelineWedge: after a follower's unsuccessful answer the leader's
// pipeline still takes sends and closes, so replication starts over.
// Upstream it wedges (hashicorp/raft#612): when that case stops wedging,
// drainedPipeline can go.
func TestPipelineWedge(t *testing.T) {
	if pipelineWedges(t, true) {
		t.Fatal("the drained pipeline hung after an unsuccessful answer")
	}
	if !pipelineWedges(t, false) {
		t.Fatal("hashicorp/raft's own pipeline no longer wedges after an unsuccessful answer: drainedPipeline may go")
	}
}
