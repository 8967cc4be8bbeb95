package live

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestPacedKeepsEachKeysOrder: the paced puts of one key are made one
// after the other, in order, however long each takes; other keys' go on
// beside them.
func TestPacedKeepsEachKeysOrder(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]int{}
	key := func(i int) string { return "k" + strconv.Itoa(i%3) }
	err := paced(context.Background(), 60, key, func(i int) error {
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // calls overlap
		mu.Lock()
		got[key(i)] = append(got[key(i)], i)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, is := range got {
		if len(is) != 20 || !slices.IsSorted(is) {
			t.Errorf("key %s: calls %v, want 20 in order", k, is)
		}
	}
}
