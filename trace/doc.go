// Package trace is a live record of what a hutch server does: every
// command it applies (transactions, session attaches and closes) and every
// watch notification it delivers, in the order they happened, with zxid,
// session and path. A Broker fans events out to subscribers, each with its
// own bounded buffer (Subscribe), or keeps them for later reading and
// waiting (Record); a subscriber that falls behind loses events and
// counts them, and never slows the server down. With nobody subscribed,
// publishing costs the server one atomic load.
package trace
