// Package cli is hutch cli: an interactive and scriptable ZooKeeper client
// that answers as ZooKeeper 3.8's zkCli.sh does, over package zkclient, so
// no JVM is needed. It parses command lines as zkCli does (quotes,
// commons-cli options, the deprecated forms), runs them and prints their
// results and errors byte for byte as zkCli, except where ZooKeeper's
// client prints an error number (hutch prints its name).
//
// It runs one command given on its command line, a script read from stdin,
// or an interactive session with history and tab completion of commands
// and znode paths when stdin is a terminal. It adds one command zkCli
// lacks: watch, which streams the events of a persistent watch.
package cli
