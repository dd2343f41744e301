package httpapi

import "flipbook/api"

// The operation table, its types and the error catalogue live in package api; these names let
// the handlers of this package read as before.
type (
	Operation  = api.Operation
	Param      = api.Param
	Request    = api.Request
	Result     = api.Result
	Stream     = api.Stream
	Principal  = api.Principal
	Error      = api.Error
	Validation = api.Validation
)

const (
	InPath  = api.InPath
	InQuery = api.InQuery
	InBody  = api.InBody

	KString = api.KString
	KInt    = api.KInt
	KBool   = api.KBool
	KObject = api.KObject
	KArray  = api.KArray
	KFile   = api.KFile

	AuthKey   = api.AuthKey
	AuthNone  = api.AuthNone
	AuthAdmin = api.AuthAdmin

	TypeBadRequest          = api.TypeBadRequest
	TypeUnauthenticated     = api.TypeUnauthenticated
	TypeMissingScope        = api.TypeMissingScope
	TypePlanRequired        = api.TypePlanRequired
	TypeNotFound            = api.TypeNotFound
	TypeMethodNotAllowed    = api.TypeMethodNotAllowed
	TypeConflict            = api.TypeConflict
	TypeIdempotencyConflict = api.TypeIdempotencyConflict
	TypePayloadTooLarge     = api.TypePayloadTooLarge
	TypeValidation          = api.TypeValidation
	TypeTooManyRequests     = api.TypeTooManyRequests
	TypeInternal            = api.TypeInternal
	TypeUnavailable         = api.TypeUnavailable

	MaxLogoBytes          = api.MaxLogoBytes
	MaxPageImageChars     = api.MaxPageImageChars
	DefaultAnalyticsLimit = api.DefaultAnalyticsLimit
	MaxIdempotencyKey     = api.MaxIdempotencyKey
	DefaultMaxJSONBody    = api.DefaultMaxJSONBody
)

var (
	errBadRequest = api.ErrBadRequest
	errNotFound   = api.ErrNotFound
	errInternal   = api.ErrInternal
	errTooLarge   = api.ErrTooLarge
	fieldError    = api.FieldError
	contains      = api.Contains

	// Scopes of spec §5.5.
	Scopes      = api.Scopes
	accessTypes = api.AccessTypes
)
