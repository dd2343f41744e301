//go:build !(linux && cgo)

package analytics

// MallocStats: see malloc_glibc.go.
type MallocStats struct {
	Arena   uint64 `json:"arena"`
	Mmapped uint64 `json:"mmapped"`
	InUse   uint64 `json:"in_use"`
	Free    uint64 `json:"free"`
}

// ReadMallocStats: no glibc here.
func ReadMallocStats() (MallocStats, bool) { return MallocStats{}, false }

// TrimMalloc: no glibc here.
func TrimMalloc() {}
