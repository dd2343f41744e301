//go:build linux && cgo

package main

/*
#include <malloc.h>
*/
import "C"

import "fmt"

// limitMallocArenas caps glibc malloc's arenas at n (see defaultMallocArenas).
func limitMallocArenas(n int) error {
	if n <= 0 {
		return nil
	}
	if C.mallopt(C.M_ARENA_MAX, C.int(n)) != 1 {
		return fmt.Errorf("mallopt(M_ARENA_MAX, %d) failed", n)
	}
	return nil
}
