// Package javaprops decodes the Java properties format, as
// java.util.Properties.load reads it: the format of ZooKeeper's zoo.cfg, of
// its dynamic configuration file and of the member list a reconfig carries.
// Package zoocfg reads zoo.cfg with it, package membership a reconfig's
// new members.
package javaprops
