package main

import (
	"fmt"
	"strconv"
)

// defaultMallocArenas caps glibc malloc's arenas in the serving process. DuckDB allocates its
// buffers through its own allocator but its other C++ objects (row group and segment metadata,
// sort and hash state, query plans) through malloc, from many threads; glibc gives each
// contending thread an arena of its own (up to 8 per core) and returns little of a fragmented
// arena to the system, so the process's memory crept up over a long ingest run. Two arenas
// cost no throughput in the 10-minute ingest benchmark; their effect on memory was within that
// benchmark's run-to-run noise (last-minute/minute-2 peak 1.07x and 1.30x in two runs, 1.23x
// with glibc's default), and malloc still grows over 20 minutes (docs/BENCHMARKS.md, "ingest").
const defaultMallocArenas = 2

// mallocArenas is the arena cap serve sets: 0 (leave glibc's own setting) when the operator set
// MALLOC_ARENA_MAX, which glibc itself reads at start, else defaultMallocArenas.
func mallocArenas(getenv func(string) string) (int, error) {
	v := getenv("MALLOC_ARENA_MAX")
	if v == "" {
		return defaultMallocArenas, nil
	}
	if n, err := strconv.Atoi(v); err != nil || n < 1 {
		return 0, fmt.Errorf("MALLOC_ARENA_MAX=%q: want a whole number of at least 1", v)
	}
	return 0, nil
}
