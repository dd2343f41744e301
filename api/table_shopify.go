package api

type ShopifyBackend interface{}

func shopifyOperations(b Backend) []*Operation { return nil }
