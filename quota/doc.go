// Package quota is ZooKeeper's quota format: where a quota lives in the
// tree (/zookeeper/quota/<path>/zookeeper_limits and zookeeper_stats),
// the StatsTrack strings those nodes hold ("count=2,bytes=-1=;
// byteHardLimit=-1;countHardLimit=-1"), read and written byte for byte as
// ZooKeeper 3.8 does, and the message a passed limit is logged with.
//
// Package tree keeps the usage with it; hutch cli's setquota, listquota
// and delquota read and write it.
package quota
