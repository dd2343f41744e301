//go:build !(linux && cgo)

package main

// limitMallocArenas does nothing without glibc (the service needs cgo for DuckDB anyway).
func limitMallocArenas(int) error { return nil }
