package api

// The error catalogue: every stable `error.type` of the API, and the one Error type that REST
// renders as the spec §7 envelope and MCP as a tool error (isError) carrying the same message
// and type. Handlers return these (or sentinel errors of the actors, mapped by ToError); they
// never write a status themselves.

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"flipbook/errs"
)

// Error types: the stable `error.type` names of the API (docs/API.md lists them). REST and MCP
// render the same *Error.
const (
	TypeBadRequest          = "BadRequest"
	TypeUnauthenticated     = "Unauthenticated"
	TypeMissingScope        = "MissingScope"
	TypePlanRequired        = "PlanRequired"
	TypeForbidden           = "Forbidden"
	TypeNotFound            = "NotFound"
	TypeMethodNotAllowed    = "MethodNotAllowed"
	TypeConflict            = "Conflict"
	TypeIdempotencyConflict = "IdempotencyConflict"
	TypePayloadTooLarge     = "PayloadTooLarge"
	TypeValidation          = "ValidationException"
	TypeTooManyRequests     = "TooManyRequests"
	TypeInternal            = "InternalError"
	TypeUnavailable         = "ServiceUnavailable"
	TypeDeliveryFailed      = "DeliveryFailed"
)

// Error is an API error: HTTP status, stable type, message and, for validation, field details.
type Error struct {
	Status  int
	Type    string
	Message string
	Details map[string][]string
	// Scopes lists the key's scopes on a MissingScope error (spec §5.6).
	Scopes   []string
	Required string
	// RetryAfter (seconds) on TooManyRequests.
	RetryAfter int
	// Rate is the rate-limit state reported with the answer (a 429 carries the limit hit).
	Rate *Decision
	// OAuthError is the RFC 6750 error code of a refused access token ("invalid_token"), for
	// the WWW-Authenticate header.
	OAuthError string
}

func (e *Error) Error() string { return e.Type + ": " + e.Message }

type errorBody struct {
	Message       string              `json:"message"`
	Type          string              `json:"type"`
	Status        int                 `json:"status,omitempty"`
	Details       map[string][]string `json:"details,omitempty"`
	RequiredScope string              `json:"required_scope,omitempty"`
	Scopes        []string            `json:"scopes,omitempty"`
	RetryAfter    int                 `json:"retry_after,omitempty"`
	RequestID     string              `json:"request_id,omitempty"`
}

type errorEnvelope struct {
	Error errorBody `json:"error"`
	// The second layout of spec §7.1, served beside the first for validation errors.
	Message string              `json:"message,omitempty"`
	Errors  map[string][]string `json:"errors,omitempty"`
}

// Envelope is the error as JSON (spec §7): {"error": {message, type, details, ...}} and, for a
// validation error, the second layout's message and errors beside it. REST sends it as the
// body (status and Retry-After go in the response line and headers); an MCP tool result has no
// such place, so forTool adds status and retry_after to the object.
func (e *Error) Envelope(requestID string, forTool bool) []byte {
	env := errorEnvelope{Error: errorBody{Message: e.Message, Type: e.Type, Details: e.Details,
		RequiredScope: e.Required, Scopes: e.Scopes, RequestID: requestID}}
	if forTool {
		env.Error.Status, env.Error.RetryAfter = e.Status, e.RetryAfter
	}
	if e.Type == TypeValidation {
		env.Message, env.Errors = e.Message, e.Details
	}
	body, _ := ResponseJSON.Marshal(env) // strings, maps of string lists: always encode
	return body
}

// ErrBadRequest is a 400 (a body that cannot be read).
func ErrBadRequest(msg string) *Error { return &Error{Status: 400, Type: TypeBadRequest, Message: msg} }

// ErrNotFound is a 404 naming what was not found.
func ErrNotFound(what string) *Error {
	return &Error{Status: 404, Type: TypeNotFound, Message: what + " not found"}
}

// ErrUnauthenticated is a 401.
func ErrUnauthenticated(msg string) *Error {
	return &Error{Status: 401, Type: TypeUnauthenticated, Message: msg}
}

// ErrTooLarge is a 413 for a body over limit bytes.
func ErrTooLarge(limit int) *Error {
	return &Error{Status: 413, Type: TypePayloadTooLarge, Message: fmt.Sprintf("request body is larger than %d bytes", limit)}
}

// ErrInternal is a 500; the cause goes to the log, never to the caller.
func ErrInternal() *Error {
	return &Error{Status: 500, Type: TypeInternal, Message: "internal error; the request id identifies it in the server log"}
}

// Validation is a set of field errors being collected.
type Validation map[string][]string

// Add records a message for a field.
func (v Validation) Add(field, msg string) { v[field] = append(v[field], msg) }

// Err returns the 422 error, or nil when nothing failed.
func (v Validation) Err() error {
	if len(v) == 0 {
		return nil
	}
	return &Error{Status: 422, Type: TypeValidation, Message: validationMessage(v), Details: v}
}

func validationMessage(v Validation) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	first := keys[0] + " " + v[keys[0]][0]
	if n := len(keys) - 1; n > 0 {
		return fmt.Sprintf("Validation failed: %s (and %d more error%s).", first, n, Plural(n))
	}
	return "Validation failed: " + first + "."
}

// Plural is "s" unless n is 1.
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// FieldError is a 422 with one field's message.
func FieldError(field, msg string) *Error {
	v := Validation{}
	v.Add(field, msg)
	return v.Err().(*Error)
}

// ToError maps any error from a handler to an API error.
func ToError(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	var inv *errs.InvalidError
	if errors.As(err, &inv) {
		return Validation(inv.Fields).Err().(*Error)
	}
	var pe *errs.PlanError
	if errors.As(err, &pe) {
		return &Error{Status: 403, Type: TypePlanRequired, Message: pe.Message}
	}
	switch {
	case errors.Is(err, errs.ErrNotFound):
		return ErrNotFound("resource")
	case errors.Is(err, errs.ErrConflict):
		return &Error{Status: 409, Type: TypeConflict, Message: "the request conflicts with the current state"}
	case errors.Is(err, errs.ErrTimeout), errors.Is(err, errs.ErrStopping):
		return &Error{Status: 503, Type: TypeUnavailable, Message: "the service is busy; retry shortly"}
	case errors.Is(err, errs.ErrMoved):
		return &Error{Status: 503, Type: TypeUnavailable, RetryAfter: 1,
			Message: "this workspace's partition is moving between nodes; nothing was applied, retry shortly"}
	case errors.Is(err, errs.ErrChangelog):
		return &Error{Status: 503, Type: TypeUnavailable, RetryAfter: 5,
			Message: "the write could not be recorded (the cluster's log is unavailable); nothing was applied, retry shortly"}
	}
	return ErrInternal()
}

// ScopeList joins scopes for a message.
func ScopeList(s []string) string { return strings.Join(s, ", ") }
