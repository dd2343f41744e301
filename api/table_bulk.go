package api

type BulkSettingsBackend interface{}

func bulkSettingsOperations(b Backend) []*Operation { return nil }
