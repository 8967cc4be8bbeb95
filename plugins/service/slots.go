package service

// slots hands out the rendered services' slots (sr.ContivService.Slot):
// numbers from 1, a freed one given again before a new one, so that the
// highest is at most the most services rendered at once.
type slots struct {
	next uint32   // the highest slot given so far
	free []uint32 // slots given back, to give again (the lowest last)
}

// get returns a slot held by no one.
func (s *slots) get() uint32 {
	if n := len(s.free); n > 0 {
		x := s.free[n-1]
		s.free = s.free[:n-1]
		return x
	}
	s.next++
	return s.next
}

// put gives slot x back; 0, none, is ignored.
func (s *slots) put(x uint32) {
	if x != 0 {
		s.free = append(s.free, x)
	}
}

// keep starts anew with kept, slots in use (distinct, 0 ignored), held:
// every other slot up to the highest kept is free, the lowest given first.
func (s *slots) keep(kept []uint32) {
	s.next = 0
	for _, x := range kept {
		s.next = max(s.next, x)
	}
	used := make([]bool, s.next+1)
	for _, x := range kept {
		used[x] = true
	}
	s.free = s.free[:0]
	for x := s.next; x > 0; x-- {
		if !used[x] {
			s.free = append(s.free, x)
		}
	}
}
