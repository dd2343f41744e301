package api

// The input structs of the typed operations (typed.go): each declares an operation's
// parameters, and its handler receives it filled.

// BookPath names one book by its path value: the input of operations on a book that take
// nothing else.
type BookPath struct {
	Book string `param:"book,path,required" max:"64"`
}

// BookPage names one page of a book (GET /books/{book}/pages/{page}).
type BookPage struct {
	Book string `param:"book,path,required" max:"64"`
	Page int64  `param:"page,path,required" min:"1" max:"100000" desc:"the page number, from 1"`
}

// BookSearch is the input of books.search (an extension, issue 28).
type BookSearch struct {
	Book string `param:"book,path,required" max:"64"`
	Q    string `param:"q,query,required" max:"200" desc:"the words to find: every word must be on the page; each matches the words it begins, ignoring case and accents"`
}

// Search is the input of search (an extension, issue 28): the workspace's books.
type Search struct {
	Q      string `param:"q,query,required" max:"200" desc:"the words to find: every word must be on the page; each matches the words it begins, ignoring case and accents"`
	Cursor string `param:"cursor,query" max:"256" desc:"meta.next_cursor of the previous page"`
	Limit  int64  `param:"limit,query" min:"1" max:"100" desc:"hits per page (default 20)"`
}

// EmbedDomainCreate is the input of embed_domains.create (spec §4.3).
type EmbedDomainCreate struct {
	Book   string `param:"book,path,required" max:"64"`
	Domain string `param:"domain,body,required" max:"255"`
}

// EmbedDomainDelete is the input of embed_domains.delete (spec §4.3).
type EmbedDomainDelete struct {
	Book        string `param:"book,path,required" max:"64"`
	EmbedDomain int64  `param:"embedDomain,path,required" min:"1"`
}

// TrackedLinkCreate is the input of tracked_links.create (spec §4.9).
type TrackedLinkCreate struct {
	Book     string         `param:"book,path,required" max:"64"`
	Name     string         `param:"name,body,required" max:"255"`
	Slug     string         `param:"slug,body" max:"255" desc:"unique across the service; generated when absent"`
	Channel  string         `param:"channel,body" max:"64"`
	Kind     string         `param:"kind,body" max:"64" desc:"default manual"`
	Metadata map[string]any `param:"metadata,body,nullable"`
}

// BatchPath names one upload batch by its path value.
type BatchPath struct {
	BatchID string `param:"batchId,path,required" max:"64"`
}

// SubscriberList is the input of subscribers.list (spec §4.2).
type SubscriberList struct {
	PerPage     *int64 `param:"pagination[per_page],query" min:"1" max:"200" desc:"entries per page (default 25)"`
	RowsPerPage *int64 `param:"pagination[rowsPerPage],query" min:"1" max:"200" desc:"alias of pagination[per_page]"`
	Page        *int64 `param:"pagination[page],query" min:"1"`
	Filter      string `param:"filter,query" max:"255" desc:"substring of the address, domain or book id"`
	Type        string `param:"type,query" enum:"email|domain"`
}

// SubscriberCreate is the input of subscribers.create (spec §4.2).
type SubscriberCreate struct {
	BookID string `param:"book_id,body,required" max:"64"`
	Email  string `param:"email,body,required" max:"255" desc:"an address, or a domain for type domain"`
	Type   string `param:"type,body" enum:"email|domain"`
}

// SubscriberDelete is the input of subscribers.delete (spec §4.2).
type SubscriberDelete struct {
	Subscriber int64 `param:"subscriber,path,required" min:"1"`
}
