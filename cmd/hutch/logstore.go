package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/hutchzk/hutch/raftstore"
)

const logStoreUsage = `Usage: hutch log-store convert --data-dir DIR --to KIND

Moves a stopped member's Raft log, term and vote into a log store of
another kind (seglog, bolt or wal), in place: the new store is written
beside the old one and read back before the directory switches to it, and
the old store's files are kept in DIR/old-<kind>-log-<time>/ to delete
once the member runs. Snapshots are not touched. Stop the member first: a
directory in use is refused.

       hutch log-store show --data-dir DIR

Prints the kind of log store DIR holds.

Flags:
`

// runLogStore runs hutch log-store.
func runLogStore(args []string) error {
	fs := pflag.NewFlagSet("hutch log-store", pflag.ContinueOnError)
	var dir, to string
	fs.StringVar(&dir, "data-dir", "", "the member's data directory")
	fs.StringVar(&to, "to", "", "convert: the kind of store to move to ("+strings.Join(raftstore.LogStores, ", ")+")")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), logStoreUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 || (fs.Arg(0) != "convert" && fs.Arg(0) != "show") {
		fs.Usage()
		return fmt.Errorf("hutch log-store: say convert or show")
	}
	if dir == "" {
		return fmt.Errorf("--data-dir is required")
	}
	if fs.Arg(0) == "show" {
		kind, err := raftstore.DataDirLogStore(dir)
		if err != nil {
			return err
		}
		fmt.Println(kind)
		return nil
	}
	if to == "" {
		return fmt.Errorf("--to is required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	old, err := raftstore.ConvertLogStore(dir, to, logger)
	if err != nil {
		return err
	}
	fmt.Printf("%s now holds a %s log; the old store is in %s: delete it once the member runs\n", dir, to, old)
	return nil
}
