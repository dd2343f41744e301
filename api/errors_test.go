package api

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/errs"
)

// A write the store could not record in cluster mode is a 503 with Retry-After, never a 500:
// its partition moved (fenced, not owned) or the changelog was unavailable; nothing was applied.
func TestToErrorClusterWrites(t *testing.T) {
	t.Parallel()
	moved := ToError(fmt.Errorf("%w: %w", errs.ErrChangelog, fmt.Errorf("cluster: fenced (%w)", errs.ErrMoved)))
	require.Equal(t, 503, moved.Status)
	require.Equal(t, TypeUnavailable, moved.Type)
	require.Equal(t, 1, moved.RetryAfter)
	require.Contains(t, moved.Message, "moving between nodes")

	down := ToError(fmt.Errorf("%w: %w", errs.ErrChangelog, fmt.Errorf("kafka: broker unreachable")))
	require.Equal(t, 503, down.Status)
	require.Equal(t, 5, down.RetryAfter)
	require.NotContains(t, down.Message, "kafka", "the cause stays in the log")

	require.Equal(t, 500, ToError(fmt.Errorf("something else")).Status)
}

// The error catalogue: every sentinel and error type of package errs, bare or wrapped with
// context, maps to one status and type.
func TestToErrorCatalogue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err    error
		status int
		typ    string
	}{
		{errs.ErrNotFound, 404, TypeNotFound},
		{errs.ErrConflict, 409, TypeConflict},
		{errs.ErrTimeout, 503, TypeUnavailable},
		{errs.ErrStopping, 503, TypeUnavailable},
		{errs.ErrMoved, 503, TypeUnavailable},
		{errs.ErrChangelog, 503, TypeUnavailable},
		{errs.Invalid("title", "must not be null"), 422, TypeValidation},
		{&errs.PlanError{Message: "needs pro"}, 403, TypePlanRequired},
	} {
		for _, err := range []error{c.err, fmt.Errorf("book b1: %w", c.err)} {
			e := ToError(err)
			require.Equal(t, c.status, e.Status, "%v", err)
			require.Equal(t, c.typ, e.Type, "%v", err)
		}
	}
	v := ToError(&errs.InvalidError{Fields: map[string][]string{"title": {"a", "b"}, "expires_at": {"c"}}})
	require.Contains(t, fmt.Sprint(v.Details), "expires_at")
	require.Equal(t, "invalid: expires_at: c, title: a; b",
		(&errs.InvalidError{Fields: map[string][]string{"title": {"a", "b"}, "expires_at": {"c"}}}).Error())
}
