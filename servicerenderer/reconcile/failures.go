package reconcile

import "slices"

// Failures are the objects VPP refused as invalid, by ID, each with what
// the renderer reports of it (F). They are not retried until the object
// changes (Delete) or a full apply runs (Clear).
type Failures[ID comparable, F any] struct {
	m map[ID]F
}

// Set records f as the failure of id; first tells whether id had none.
func (fs *Failures[ID, F]) Set(id ID, f F) (first bool) {
	if fs.m == nil {
		fs.m = map[ID]F{}
	}
	_, had := fs.m[id]
	fs.m[id] = f
	return !had
}

// Delete forgets id's failure: it changed, and is tried again.
func (fs *Failures[ID, F]) Delete(id ID) {
	if len(fs.m) > 0 {
		delete(fs.m, id)
	}
}

// Has tells whether id failed.
func (fs *Failures[ID, F]) Has(id ID) bool {
	_, ok := fs.m[id]
	return ok
}

// Clear forgets every failure.
func (fs *Failures[ID, F]) Clear() { clear(fs.m) }

// Len is the number of failures.
func (fs *Failures[ID, F]) Len() int { return len(fs.m) }

// Sorted lists the failures in the order cmp says.
func (fs *Failures[ID, F]) Sorted(cmp func(a, b F) int) []F {
	var out []F // nil when none
	for _, f := range fs.m {
		out = append(out, f)
	}
	slices.SortFunc(out, cmp)
	return out
}
