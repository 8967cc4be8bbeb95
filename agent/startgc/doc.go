// Package startgc holds the Go collector off while the agent builds its
// state at the start, and stops the hold at the first full apply. It is
// for the agent's Run, which takes the hold with Hold and releases it; the
// benchmark and tests that run agents in one process share it. The
// contract: while held, the collector is off under a soft memory limit of
// what the process used at the hold plus the allowance, kept within a
// share of the container's memory limit (ContainerMemoryCap, read with
// github.com/KimMachineGun/automemlimit); the first collection or the
// last release restores the process's settings.
//
// The settings are the process's, so the count of holders is too: it is
// the one package-level variable, guarded by its mutex.
package startgc
