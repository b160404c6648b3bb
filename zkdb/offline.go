package zkdb

import (
	"github.com/hutchzk/hutch/tree"
	"github.com/hutchzk/hutch/wire"
)

// Discard is the Sink of a DB nobody is connected to: one an offline tool
// loads, replays or writes out (an import, an export).
type Discard struct{}

// Notify drops the event.
func (Discard) Notify(int64, *wire.WatcherEvent, *tree.Event) {}

// Applied drops the effects.
func (Discard) Applied(*Effects) {}

// Reset does nothing.
func (Discard) Reset() {}
