package main

import (
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

func main() {
	for _, dir := range os.Args[1:] {
		s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), BoltOptions: &bbolt.Options{ReadOnly: true}})
		if err != nil {
			fmt.Fprintln(os.Stderr, dir, err)
			continue
		}
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		fmt.Fprintf(os.Stderr, "%s: %d..%d\n", dir, first, last)
		for i := first; i <= last && i > 0; i++ {
			var l raft.Log
			if err := s.GetLog(i, &l); err != nil {
				fmt.Printf("%d ERR %v\n", i, err)
				continue
			}
			fmt.Printf("%d %d %d %x\n", i, l.Term, l.Type, sha1.Sum(l.Data))
		}
		s.Close()
	}
}
