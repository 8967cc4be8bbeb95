package etcdfeed

import "sync/atomic"

// Status is what the feed reports about itself.
type Status struct {
	// WatchRevision is the newest revision handed to the sink (a
	// listing's, or a watched change's).
	WatchRevision int64
	// Relists counts the listings after the first (a lost watch, a
	// request).
	Relists uint64
	// Resumes counts the watches resumed from their revision without
	// listing again (after a reconnection, or a watch that could not be
	// followed).
	Resumes uint64
	// HistoryLost counts the running watches ended because etcd no longer
	// held the history they followed.
	HistoryLost uint64
	// WatchFailures counts the watches ended because they could not be
	// followed (a response that cannot be taken in, a stream that keeps
	// failing, a watch etcd ended).
	WatchFailures uint64
	// Connected tells whether the client's connection to etcd is up.
	Connected bool
	// DecodeErrors counts stored values skipped as undecodable, oversized
	// or under a malformed key; Decoded the stored values decoded.
	DecodeErrors, Decoded uint64
	// Layout is the layout marker etcd held at the last listing (with
	// RequireSynced or pods watched); empty when absent.
	Layout string
	// Held says why the last listing was not handed on (RequireSynced:
	// not a complete reflector output); empty otherwise.
	Held string
	// NotFollowing, "cannot follow etcd: <reason>", is set from a watch
	// that could not be followed until etcd is listed again or the watch
	// advances; empty otherwise.
	NotFollowing string
}

// counters is the goroutine-safe source of Status.
type counters struct {
	watchRevision atomic.Int64
	relists       atomic.Uint64
	resumes       atomic.Uint64
	historyLost   atomic.Uint64
	watchFailures atomic.Uint64
	connected     atomic.Bool
	decodeErrors  atomic.Uint64
	decoded       atomic.Uint64
	layout        atomic.Pointer[string]
	held          atomic.Pointer[string]
	notFollowing  atomic.Pointer[string]
}

// Status returns the feed's status; safe from any goroutine.
func (f *Feed) Status() Status {
	st := &f.st
	s := Status{
		WatchRevision: st.watchRevision.Load(),
		Relists:       st.relists.Load(),
		Resumes:       st.resumes.Load(),
		HistoryLost:   st.historyLost.Load(),
		WatchFailures: st.watchFailures.Load(),
		Connected:     st.connected.Load(),
		DecodeErrors:  st.decodeErrors.Load(),
		Decoded:       st.decoded.Load(),
	}
	for _, p := range []struct {
		from *atomic.Pointer[string]
		to   *string
	}{{&st.layout, &s.Layout}, {&st.held, &s.Held}, {&st.notFollowing, &s.NotFollowing}} {
		if v := p.from.Load(); v != nil {
			*p.to = *v
		}
	}
	return s
}

// Held says why the last listing was not handed on; empty when it was.
func (f *Feed) Held() string {
	if h := f.st.held.Load(); h != nil {
		return *h
	}
	return ""
}

// NotFollowing says why the feed cannot follow etcd now; empty when it
// can.
func (f *Feed) NotFollowing() string {
	if v := f.st.notFollowing.Load(); v != nil {
		return *v
	}
	return ""
}
