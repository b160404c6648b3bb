// Package zkclient is a small ZooKeeper client over package wire: one
// session, every opcode hutch serves, and watches including persistent and
// persistent-recursive ones. It is written for hutch cli and kept small
// rather than complete.
//
// A Client connects in the background to one of the servers it is given,
// pings every third of the session timeout, matches replies to requests by
// xid and delivers notifications to one Watcher in the order they arrived,
// each before the reply that followed it returns to its caller. When a
// connection is lost it re-attaches the session on the next server,
// re-sends its authentications and re-arms its watches (setWatches2);
// requests in flight fail with CONNECTIONLOSS, as with the Java client.
package zkclient
