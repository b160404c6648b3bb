// Package zkformat reads and writes the files of a ZooKeeper data
// directory, 3.4 to 3.9: snapshots (plain, gzip or snappy) and transaction
// logs, each checked as ZooKeeper checks it (Adler-32 seals and entry
// checksums) and read as a stream, one node or one entry at a time, so a
// snapshot of any size needs memory only for the node being read. It also
// knows the file names, the transaction records and the session password
// ZooKeeper derives from a session id. Errors name the offset where the
// file went wrong; what to do with the records is package zkimport's job.
package zkformat
