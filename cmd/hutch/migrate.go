package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/hutchzk/hutch/zkexport"
	"github.com/hutchzk/hutch/zkimport"
	"github.com/hutchzk/hutch/zoocfg"
)

const importUsage = `Usage: hutch import --zookeeper-data-dir DIR [--zookeeper-log-dir DIR] --data-dir OUT
       hutch import --zookeeper-config zoo.cfg --data-dir OUT
       hutch import ... --follow          (keep replaying a running ZooKeeper's log; stop with Ctrl-C)

Reads ZooKeeper's newest snapshot and the transaction logs after it
(3.4 to 3.9; gzip and snappy snapshots), replays them as ZooKeeper does,
checks every checksum and every digest ZooKeeper recorded, and writes a
new hutch data directory that "hutch --data-dir OUT" serves. Nothing is
written unless the whole import succeeds. For an ensemble, give --peers
as the members will run and seed every member's data directory alike.

Flags:
`

const exportUsage = `Usage: hutch export --data-dir DIR --zookeeper-data-dir OUT

Writes a stopped hutch node's state as a ZooKeeper dataDir
(OUT/version-2/snapshot.<zxid>, currentEpoch, acceptedEpoch) that
ZooKeeper 3.8 starts from, standalone or as every member of an ensemble.

Flags:
`

// runMigration runs hutch import or hutch export.
func runMigration(cmd string, args []string) error {
	fs := pflag.NewFlagSet("hutch "+cmd, pflag.ContinueOnError)
	var (
		zkData, zkLog, zkConfig, out, peers, logStore, logLevel string
		follow                                                  bool
		checkpoint                                              time.Duration
	)
	fs.StringVar(&zkData, "zookeeper-data-dir", "", "ZooKeeper's dataDir (snapshots); for export, the dataDir to create")
	fs.StringVar(&out, "data-dir", "", "hutch's data directory: for import the one to create, for export the one to read")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	if cmd == "import" {
		fs.StringVar(&zkLog, "zookeeper-log-dir", "", "ZooKeeper's dataLogDir (transaction logs), when not the dataDir")
		fs.StringVar(&zkConfig, "zookeeper-config", "", "read dataDir and dataLogDir from ZooKeeper's zoo.cfg")
		fs.StringVar(&peers, "peers", "", "the ensemble the data directory is for, as the members' --peers (default: a single node)")
		fs.StringVar(&logStore, "log-store", "", "the Raft log store the data directory gets (seglog, bolt or wal; default seglog)")
		fs.BoolVar(&follow, "follow", false, "after the import, keep replaying new log entries of the running ZooKeeper until interrupted (SIGINT/SIGTERM), then write the data directory")
		fs.DurationVar(&checkpoint, "checkpoint-interval", time.Minute, "with --follow, how often the data directory is rewritten with what has been replayed so far (0: only at the end)")
	}
	fs.Usage = func() {
		if cmd == "import" {
			fmt.Fprint(fs.Output(), importUsage)
		} else {
			fmt.Fprint(fs.Output(), exportUsage)
		}
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(logLevel))); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if out == "" {
		return fmt.Errorf("--data-dir is required")
	}
	if cmd == "export" {
		if zkData == "" {
			return fmt.Errorf("--zookeeper-data-dir is required")
		}
		res, err := zkexport.Export(zkexport.Options{DataDir: out, Out: zkData})
		if err != nil {
			return err
		}
		fmt.Printf("exported %d znodes and %d sessions at zxid %#x (ZooKeeper digest %d) to %s\n",
			res.Nodes, res.Sessions, res.LastZxid, res.ZKDigest, res.Snapshot)
		return nil
	}
	if zkConfig != "" {
		if zkData != "" || zkLog != "" {
			return fmt.Errorf("--zookeeper-config names the directories; do not give --zookeeper-data-dir or --zookeeper-log-dir too")
		}
		zc, err := zoocfg.Load(zkConfig)
		if err != nil {
			return err
		}
		zkData, zkLog = zc.DataDir, zc.DataLogDir
	}
	if zkData == "" {
		return fmt.Errorf("--zookeeper-data-dir or --zookeeper-config is required")
	}
	var members map[uint64]string
	if peers != "" {
		var err error
		if members, err = parsePeers(peers); err != nil {
			return err
		}
	}
	opts := zkimport.Options{
		Source: zkimport.Source{DataDir: zkData, LogDir: zkLog},
		Output: zkimport.Output{Dir: out, Members: members, LogStore: logStore},
		Logger: logger,
	}
	var report *zkimport.Report
	var err error
	if follow {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		report, err = zkimport.Follow(ctx, opts, zkimport.FollowOptions{Checkpoint: checkpoint, Ready: func(r *zkimport.Report) {
			fmt.Printf("following: zxid %#x after %d transactions; stop ZooKeeper, then interrupt this for the final catch-up\n", r.LastZxid, r.Transactions)
		}})
	} else {
		report, err = zkimport.Import(opts)
	}
	if err != nil {
		return err
	}
	for _, w := range report.Warnings {
		fmt.Println("warning:", w)
	}
	from := "no snapshot"
	if report.Snapshot != "" {
		from = report.Snapshot
	}
	fmt.Printf("imported %d znodes, %d sessions (%d ephemerals) from %s and %d transactions in %d logs: last zxid %#x, %d ZooKeeper digests checked, digest %d; hutch's next zxid is %#x\n",
		report.Nodes, report.Sessions, report.Ephemerals, from, report.Transactions, len(report.Logs), report.LastZxid, report.Digests, report.ZKDigest, report.LastZxid+1)
	return nil
}
