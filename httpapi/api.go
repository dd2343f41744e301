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

	KString   = api.KString
	KInt      = api.KInt
	KNumber   = api.KNumber
	KBool     = api.KBool
	KDateTime = api.KDateTime
	KObject   = api.KObject
	KArray    = api.KArray
	KAny      = api.KAny
	KFile     = api.KFile

	AuthKey   = api.AuthKey
	AuthNone  = api.AuthNone
	AuthAdmin = api.AuthAdmin

	TypeBadRequest          = api.TypeBadRequest
	TypeUnauthenticated     = api.TypeUnauthenticated
	TypeMissingScope        = api.TypeMissingScope
	TypePlanRequired        = api.TypePlanRequired
	TypeForbidden           = api.TypeForbidden
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
	MaxTemplateItems      = api.MaxTemplateItems
	MaxPageImageChars     = api.MaxPageImageChars
	MaxAnalyticsLimit     = api.MaxAnalyticsLimit
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
	toAPIError    = api.ToError
	contains      = api.Contains
	plural        = api.Plural

	// Scopes of spec §5.5.
	Scopes = api.Scopes
	// ExportSources are the values of the analytics export's source parameter.
	ExportSources = api.ExportSources
	accessTypes   = api.AccessTypes
)
