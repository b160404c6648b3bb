// Package realzk starts servers for tests as separate processes: Apache
// ZooKeeper 3.8 standalone from the Debian install (the reference hutch is
// checked against) and the hutch binary itself. Each server gets a free
// loopback port and a private temp directory, is ready when it answers ruok
// with imok, and is stopped by its process group when the test ends.
//
// When Debian's ZooKeeper is missing, tests needing it are skipped; with
// CI=true in the environment they fail instead, so a CI run cannot pass
// without ever having compared against the real thing.
package realzk
