package actors

import (
	"errors"
	"sort"
	"strings"
)

// Domain errors returned by actors. The HTTP and MCP layers map each to one API error type.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// InvalidError is a request that fails domain rules (checked where the state is): field → messages.
type InvalidError struct {
	Fields map[string][]string
}

func (e *InvalidError) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+strings.Join(e.Fields[k], "; "))
	}
	return "invalid: " + strings.Join(parts, ", ")
}

func invalid(field, msg string) *InvalidError {
	return &InvalidError{Fields: map[string][]string{field: {msg}}}
}

// PlanError is an action the workspace's plan does not allow.
type PlanError struct {
	Message string
}

func (e *PlanError) Error() string { return e.Message }
