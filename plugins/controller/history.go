package controller

import "time"

// DefaultHistoryCheck is Params.HistoryCheck's default: an agent reads
// one key every 30 s (at 5000 nodes ~170 reads a second, which etcd
// serves from memory).
const DefaultHistoryCheck = 30 * time.Second

// historyCheck is the feed's HistoryCheck for Params.HistoryCheck d: 0
// takes the default, a negative d never checks.
func historyCheck(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultHistoryCheck
	case d < 0:
		return 0
	}
	return d
}
