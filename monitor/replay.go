package monitor

// replayPoint is a point of the trace's history the view is replayed at.
type replayPoint struct {
	Seq uint64
}

// Describe says where the replay stands, for the header.
func (p *replayPoint) Describe() string { return "" }

// startReplay reads ?at= and, if set, prepares the replay.
func (q *uiRequest) startReplay() error { return nil }
