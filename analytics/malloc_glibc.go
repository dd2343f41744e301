//go:build linux && cgo

package analytics

/*
#include <malloc.h>
*/
import "C"

// MallocStats is glibc malloc's view of the process (mallinfo2): DuckDB's C++ objects, the
// Arrow batches the consumer builds (mallocator) and Pebble's block cache live there.
type MallocStats struct {
	Arena   uint64 `json:"arena"`   // bytes of the arenas' heaps (brk and mmapped heaps)
	Mmapped uint64 `json:"mmapped"` // bytes in blocks mmapped one by one (large allocations)
	InUse   uint64 `json:"in_use"`  // bytes allocated and not freed
	Free    uint64 `json:"free"`    // bytes free inside the arenas (kept, not given back)
}

// ReadMallocStats reads glibc's counters; ok is false without glibc.
func ReadMallocStats() (MallocStats, bool) {
	m := C.mallinfo2()
	return MallocStats{Arena: uint64(m.arena), Mmapped: uint64(m.hblkhd), InUse: uint64(m.uordblks),
		Free: uint64(m.fordblks)}, true
}

// TrimMalloc gives the free pages of every glibc arena back to the system (malloc_trim).
func TrimMalloc() { C.malloc_trim(0) }
