package raftstore

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestAsk: a member answers another's question over the authenticated
// channel, leader or not; a process without the secret gets nothing; an
// answer past the asker's bound is refused; a member with nothing to
// answer says so; a store closing with a question being answered does
// not wait for the answerer.
func TestAsk(t *testing.T) {
	var asked atomic.Int32
	answering := func(ctx context.Context, q []byte) ([]byte, error) {
		asked.Add(1)
		switch string(q) {
		case "big":
			return bytes.Repeat([]byte{'x'}, 1000), nil
		case "none":
			return nil, errors.New("nothing to say")
		case "block":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return append([]byte("answer to "), q...), nil
	}
	cfgB := testConfig(2)
	cfgB.Answer = answering
	b := openNode(t, cfgB, newTestApp())
	a := openNode(t, testConfig(1), newTestApp())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if got, err := a.Ask(ctx, b.Addr(), []byte("who"), 0); err != nil || string(got) != "answer to who" {
		t.Fatalf("ask: %q, %v", got, err)
	}
	if _, err := a.Ask(ctx, b.Addr(), []byte("big"), 999); !errors.Is(err, ErrAnswerTooLarge) {
		t.Errorf("an answer past the bound: %v", err)
	}
	if _, err := a.Ask(ctx, b.Addr(), []byte("none"), 0); !errors.Is(err, ErrNoAnswer) {
		t.Errorf("no answer: %v", err)
	}
	if _, err := b.Ask(ctx, a.Addr(), []byte("who"), 0); !errors.Is(err, ErrNoAnswer) {
		t.Errorf("a member without an answerer: %v", err)
	}
	if _, err := a.Ask(ctx, b.Addr(), make([]byte, MaxQuestion+1), 0); err == nil {
		t.Error("a question past MaxQuestion was sent")
	}

	// A stranger: the handshake fails before the question is read.
	before := asked.Load()
	cfgS := testConfig(9)
	cfgS.Secret = []byte("some other secret")
	stranger := openNode(t, cfgS, newTestApp())
	if got, err := stranger.Ask(ctx, b.Addr(), []byte("who"), 0); err == nil {
		t.Fatalf("a process without the secret was answered: %q", got)
	}
	if asked.Load() != before {
		t.Fatal("the question of a process without the secret reached the answerer")
	}

	// Close with a question being answered: the answerer's context ends
	// and Close returns.
	blocked := make(chan error, 1)
	go func() {
		_, err := a.Ask(ctx, b.Addr(), []byte("block"), 0)
		blocked <- err
	}()
	waitFor(t, 5*time.Second, "the blocking question to arrive", func() bool { return asked.Load() == before+1 })
	closed := make(chan struct{})
	go func() {
		b.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for an answer")
	}
	if err := <-blocked; err == nil {
		t.Fatal("a question cut off by Close was answered")
	}
}
