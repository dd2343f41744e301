// Package errs is the catalogue of the service's domain errors: each defined once, here, at the
// bottom of the layering (it imports nothing of the project, so every package may use it),
// matched with errors.Is or errors.As wherever it travels, and turned into the API's status and
// error type in one place (api.ToError). A package wraps a sentinel to say more
// (fmt.Errorf("book %s: %w", id, errs.ErrNotFound)); it does not define its own.
package errs

import (
	"errors"
	"sort"
	"strings"
)

// The sentinels.
var (
	// ErrNotFound: no such object, or one of another workspace (the API's 404 either way).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request conflicts with the object's current state (409).
	ErrConflict = errors.New("conflict")
	// ErrTimeout: an actor did not answer in time (503, retry).
	ErrTimeout = errors.New("no answer in time")
	// ErrStopping: the service is stopping and takes no more work (503, retry).
	ErrStopping = errors.New("stopping")
	// ErrMoved: in cluster mode, the write's partition is not this node's (any more): nothing
	// was applied (503, retry: the next owner takes it).
	ErrMoved = errors.New("the write's partition is not this node's")
	// ErrChangelog: in cluster mode, the changelog did not take the write: nothing was applied
	// (503, retry).
	ErrChangelog = errors.New("the changelog did not take the write")
)

// InvalidError is a request that fails domain rules (checked where the state is): field →
// messages (the API's 422 with field details).
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

// Invalid is an InvalidError of one field.
func Invalid(field, msg string) *InvalidError {
	return &InvalidError{Fields: map[string][]string{field: {msg}}}
}

// PlanError is an action the workspace's plan does not allow (the API's 403 plan_required).
type PlanError struct {
	Message string
}

func (e *PlanError) Error() string { return e.Message }
