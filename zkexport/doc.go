// Package zkexport writes hutch's state as a ZooKeeper snapshot: the way
// back from hutch to ZooKeeper. Export lays out a ZooKeeper dataDir from a
// stopped node's data directory (version-2/snapshot.<zxid>, and the epoch
// files a quorum member needs), which ZooKeeper 3.8 starts from,
// standalone or as every member of an ensemble; WriteSnapshot streams the
// same snapshot from a live tree (the admin snapshot command).
package zkexport
