package raftstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"

	"github.com/hashicorp/raft"

	"github.com/hutchzk/hutch/zkdb"
)

// SeedIndex is the log index a seeded data directory's snapshot stands at:
// the state a node starts from, before any entry of its own.
const SeedIndex = 1

// Seed makes dir a data directory whose state is the snapshot write
// produces (zkdb's encoding, with applied SeedIndex): a node opened on it
// starts from that state instead of an empty tree. members is the
// ensemble by node id (nil: a single node, id 1); every member of an
// ensemble must be seeded alike, since a member that bootstraps empty
// would hold a different log at the same index. logStore is the log store
// kind ("" for the default). dir must not hold state yet.
func Seed(dir, logStore string, members map[uint64]string, write func(io.Writer) error) error {
	if dir == "" {
		return errors.New("raftstore: seed: no data directory")
	}
	ls, err := openLogStore(dir, logStore, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer ls.close()
	if last, err := ls.logs.LastIndex(); err != nil || last != 0 {
		return errors.Join(err, fmt.Errorf("raftstore: seed: %s already holds a log", dir))
	}
	if metas, err := ls.snaps.List(); err != nil || len(metas) > 0 {
		return errors.Join(err, fmt.Errorf("raftstore: seed: %s already holds a snapshot", dir))
	}
	if len(members) == 0 {
		members = map[uint64]string{1: "127.0.0.1:0"} // a single node's address is its own at each start
	}
	var conf raft.Configuration
	for _, id := range slices.Sorted(maps.Keys(members)) {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: serverID(id), Address: raft.ServerAddress(members[id])})
	}
	_, trans := raft.NewInmemTransport("")
	sink, err := ls.snaps.Create(raft.SnapshotVersionMax, SeedIndex, 1, conf, SeedIndex, trans)
	if err != nil {
		return err
	}
	if err := write(sink); err != nil {
		return errors.Join(err, sink.Cancel())
	}
	if err := sink.Close(); err != nil {
		return err
	}
	// The term the snapshot was "written" in, so a first election is in a
	// later one.
	return ls.stable.SetUint64([]byte("CurrentTerm"), 1)
}

// ReadState loads the newest state a stopped node's data directory holds
// into db: its newest snapshot, then every command entry the log holds
// after it. An ensemble member's log may end in entries the ensemble never
// committed (Raft does not record how far it committed); read a member
// that was the leader, or caught up, when it stopped.
func ReadState(dir string, db *zkdb.DB) error {
	ls, err := openLogStore(dir, "", slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer ls.close()
	metas, err := ls.snaps.List()
	if err != nil {
		return err
	}
	if len(metas) > 0 {
		_, rc, err := ls.snaps.Open(metas[0].ID)
		if err != nil {
			return err
		}
		err = db.Restore(rc, false)
		rc.Close()
		if err != nil {
			return fmt.Errorf("raftstore: snapshot %s: %w", metas[0].ID, err)
		}
	}
	first, err := ls.logs.FirstIndex()
	if err != nil {
		return err
	}
	last, err := ls.logs.LastIndex()
	if err != nil {
		return err
	}
	for i := max(first, db.Applied()+1); i <= last && i > 0; i++ {
		l, err := readLog(ls.logs, i)
		if err != nil {
			return fmt.Errorf("raftstore: log entry %d: %w", i, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		b, err := zkdb.DecodeEntry(l.Data)
		if err != nil {
			return fmt.Errorf("raftstore: log entry %d: %w", i, err)
		}
		b.Term = l.Term
		db.Apply(b, l.Index)
	}
	return nil
}
