package storage

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"flipbook/errs"
)

// Book statuses.
const (
	StatusDraft    = "draft"
	StatusSchedule = "schedule"
	StatusPublish  = "publish"
)

// Page image statuses.
const (
	PagesReady      = "ready"
	PagesProcessing = "processing"
	PagesFailed     = "failed"
)

// Book is the stored flipbook record. Its wire form (spec §2.1) is built by httpapi; fields here
// that the wire form lacks (slug, watermark, ...) are settings the viewer uses.
type Book struct {
	ID                int64   `json:"id"`
	RandomID          string  `json:"random_id"`
	Workspace         int64   `json:"workspace_id"`
	Mode              Mode    `json:"mode"`
	BatchID           *string `json:"batch_id"`
	ExternalCatalogID *int64  `json:"external_catalog_id"`
	Name              string  `json:"name"`
	Description       *string `json:"description"`
	Status            string  `json:"status"`
	Source            string  `json:"source"`
	PageCount         int     `json:"page_count"`
	PageImagesStatus  string  `json:"page_images_status"`
	PageImagesError   string  `json:"page_images_error,omitempty"`
	// Pages are stored under their own key (pages/<rid>), so reading a book's record costs
	// the same for 1 page and 1,000: see PutPages and Pages.
	Pages []Page `json:"-"`
	// Texts, when set on a new book, are its pages' texts, stored with it (a template book's
	// drawn text); a new book of images without them has its text read by OCR.
	Texts            []PageText `json:"-"`
	Thumbnail        string     `json:"thumbnail"`
	Document         string     `json:"document,omitempty"` // the source PDF (blob name), if any
	PublishedDate    *time.Time `json:"published_date"`
	ExpiresAt        *time.Time `json:"expires_at"`
	BillingExpiresAt *time.Time `json:"billing_expires_at"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	Settings         Settings   `json:"settings"`
	Extra            Extra      `json:"extra"`
	// SettingsRev counts the changes made by PUT /books/{book} and by bulk settings items
	// (docs/DECISIONS.md "Bulk settings"); 0 (a record written before it existed) reads as 1.
	// The wire form is SettingsRevision.
	SettingsRev int64 `json:"settings_revision,omitempty"`

	// Memo holds renderings of this record version (nil on records not read from the store).
	Memo *Memo `json:"-"`
}

// Tenant of the book.
func (b *Book) Tenant() Tenant { return Tenant{Workspace: b.Workspace, Mode: b.Mode} }

// SettingsRevision is the book's settings_revision as clients see it: an opaque string, the
// decimal of SettingsRev (at least 1).
func (b *Book) SettingsRevision() string { return strconv.FormatInt(max(b.SettingsRev, 1), 10) }

// BumpSettingsRevision moves the revision on (a change of the book's settings).
func (b *Book) BumpSettingsRevision() { b.SettingsRev = max(b.SettingsRev, 1) + 1 }

// Page is one page image of a book (a blob name under the book's folder).
type Page struct {
	Number int    `json:"number"`
	File   string `json:"file"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	// Links are clickable areas (auto_links_enabled), in fractions of the page (0..1, top-left).
	Links []Link `json:"links,omitempty"`
	// Renditions are WebP copies of the page image at smaller widths, by increasing width
	// (issue 29: the viewer's srcset); none until the renditions backfill made them.
	Renditions []Rendition `json:"renditions,omitempty"`
	// Placeholder is a WebP image of the page a few pixels wide, which the viewer shows at once
	// while the page loads; kept for the first PlaceholderPages pages only (the ones a reader
	// opens on), so the page list stays small for long books.
	Placeholder []byte `json:"placeholder,omitempty"`
}

// PlaceholderPages is how many pages, from the first, keep a placeholder.
const PlaceholderPages = 8

// Rendition is a copy of a page image at another size (a blob of the book).
type Rendition struct {
	File   string `json:"file"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// Link is a clickable area of a page.
type Link struct {
	X   float64 `json:"x"`
	Y   float64 `json:"y"`
	W   float64 `json:"w"`
	H   float64 `json:"h"`
	URL string  `json:"url"`
}

// Settings are the settings object of spec §2.1 (every key always present on the wire).
type Settings struct {
	Background          *string `json:"background"`
	Downloadable        bool    `json:"downloadable"`
	FullscreenEnabled   bool    `json:"fullscreen_enabled"`
	SoundEnabled        bool    `json:"sound_enabled"`
	CopyrightEnabled    bool    `json:"copyright_enabled"`
	ShareSocialMedia    bool    `json:"share_social_media"`
	Privacy             *string `json:"privacy"`
	ImageDisplay        *string `json:"image_display"`
	AnimationType       string  `json:"animation_type"`
	MobileAnimationType *string `json:"mobile_animation_type"`
	EODEnabled          bool    `json:"eod_enabled"`
	DomainsEnabled      bool    `json:"domains_enabled"`
}

// Extra holds the update fields of spec §4.1.4 that are not part of the settings object.
type Extra struct {
	Slug                    *string `json:"slug,omitempty"`
	AccessibilityEnabled    bool    `json:"accessibility_enabled"`
	AutoLinksEnabled        bool    `json:"auto_links_enabled"`
	MadeWithBadgeEnabled    bool    `json:"made_with_badge_enabled"`
	OpenFullscreenByDefault bool    `json:"open_fullscreen_by_default"`
	Watermark               *string `json:"watermark,omitempty"`
	MagicLinkMessage        *string `json:"magic_link_message,omitempty"`
	MagicLinkErrorMessage   *string `json:"magic_link_error_message,omitempty"`
	// DownloadMode is how the viewer offers the PDF when settings.downloadable is on: full,
	// single or spread (bulk settings' downloadable_pdf); "" means full.
	DownloadMode string `json:"download_mode,omitempty"`
	// ReadingDirection is the order the viewer turns the pages in (an extension of the update
	// body, issue 29): "rtl" for right-to-left books, "" (left to right) otherwise.
	ReadingDirection string `json:"reading_direction,omitempty"`
	// PDFPasswordHash is a salted hash: the password is never stored or returned.
	PDFPasswordHash []byte `json:"pdf_password_hash,omitempty"`
	PDFPasswordSalt []byte `json:"pdf_password_salt,omitempty"`
}

// Book sort orders, the index each one scans.
const (
	SortCreated = 'c'
	SortUpdated = 'u'
	SortName    = 'n'
	SortStatus  = 's'
)

var bookSorts = []byte{SortCreated, SortUpdated, SortName, SortStatus}

func bookIndexPrefix(t Tenant, filter string, sort byte) []byte {
	return cat(t.prefix(), []byte("bi/"), []byte(filter), []byte{'/', sort, '/'})
}

// sortKey is the index suffix of b for a sort order; unique per book (it ends with the id).
func sortKey(b *Book, sort byte) []byte {
	var k []byte
	switch sort {
	case SortCreated:
		k = u64(uint64(b.CreatedAt.UnixNano()))
	case SortUpdated:
		k = u64(uint64(b.UpdatedAt.UnixNano()))
	case SortName:
		k = escapeOrdered(nil, foldName(b.Name))
	case SortStatus:
		k = escapeOrdered(nil, b.Status)
	}
	return append(k, u64(uint64(b.ID))...)
}

func bookIndexKeys(b *Book) [][]byte {
	keys := make([][]byte, 0, 2*len(bookSorts))
	t := b.Tenant()
	for _, filter := range []string{"*", b.Status} {
		for _, s := range bookSorts {
			keys = append(keys, cat(bookIndexPrefix(t, filter, s), sortKey(b, s)))
		}
	}
	return keys
}

// GetBook reads a book of a tenant. The record may be shared with other readers: do not
// modify it (clone it first).
func (s *Store) GetBook(t Tenant, rid string) (*Book, error) {
	var buf [64]byte // a hit allocates nothing
	key := appendBookKey(buf[:0], t, rid)
	b, epoch := s.books.getBytes(key)
	if b != nil {
		return b, nil
	}
	b = &Book{}
	if err := s.getJSON(key, b); err != nil {
		return nil, err
	}
	b.Memo = &Memo{}
	s.books.put(string(key), b, epoch)
	return b, nil
}

// BookTenant resolves a book's tenant from its random id (public routes: every collector
// batch). Found lookups are cached in the book cache under the lookup key, as a Book holding
// only the tenant, with the cache's rule: the batches that write or delete the lookup mark it.
func (s *Store) BookTenant(rid string) (Tenant, error) {
	key := bookLookupKey(rid)
	ck := string(key)
	b, epoch := s.books.get(ck)
	if b != nil {
		return b.Tenant(), nil
	}
	v, err := s.get(key)
	if err != nil {
		return Tenant{}, err
	}
	t, ok := tenantFromBytes(v)
	if !ok {
		return Tenant{}, errs.ErrNotFound
	}
	s.books.put(ck, &Book{Workspace: t.Workspace, Mode: t.Mode}, epoch)
	return t, nil
}

// BookExists reports whether a random id is taken (in any tenant).
func (s *Store) BookExists(rid string) (bool, error) { return s.has(bookLookupKey(rid)) }

// PutBook stages the write of b (replacing old, which may be nil) into batch: the record, its
// index entries, its global lookup and its due-time entries.
func (bt *Batch) PutBook(old, b *Book) error {
	if old != nil {
		bt.unindexBook(old)
	} else {
		bt.set(bookLookupKey(b.RandomID), b.Tenant().bytes())
		bt.touched = append(bt.touched, string(bookLookupKey(b.RandomID)))
	}
	for _, k := range bookIndexKeys(b) {
		bt.set(k, []byte(b.RandomID))
	}
	if at, ok := NextTransition(b); ok {
		bt.set(dueKey(at.UnixNano(), b.Tenant(), b.RandomID), nil)
	}
	key := bookKey(b.Tenant(), b.RandomID)
	data, err := codec.Marshal(b)
	if err != nil {
		return err
	}
	// The cache's copy is decoded from the bytes written, not b: the caller may change b
	// after the commit, and cached records are shared and read-only.
	fill := &Book{}
	if err := codec.Unmarshal(data, fill); err != nil {
		return err
	}
	fill.Memo = &Memo{}
	ck := string(key)
	bt.touched = append(bt.touched, ck)
	if bt.fills == nil {
		bt.fills = map[string]*Book{}
	}
	bt.fills[ck] = fill
	bt.set(key, data)
	return nil
}

// PutPages stages the page list of a book.
func (bt *Batch) PutPages(t Tenant, rid string, pages []Page) error {
	if pages == nil {
		pages = []Page{}
	}
	return bt.setJSON(pagesKey(t, rid), pages)
}

// Pages reads a book's page list.
func (s *Store) Pages(t Tenant, rid string) ([]Page, error) {
	var p []Page
	if err := s.getJSON(pagesKey(t, rid), &p); err != nil {
		return nil, err
	}
	return p, nil
}

// DeleteBook stages the removal of b and everything that points at it: pages, indexes, access
// lists, embed domains and tracked links.
func (bt *Batch) DeleteBook(b *Book) error {
	if err := bt.s.deleteBookAccess(bt, b.Tenant(), b.RandomID); err != nil {
		return err
	}
	bt.del(pagesKey(b.Tenant(), b.RandomID))
	tp := pageTextPrefix(b.Tenant(), b.RandomID)
	_ = bt.b.DeleteRange(tp, prefixEnd(tp), nil)
	bt.del(outlineKey(b.Tenant(), b.RandomID))
	if err := bt.unindexPageTexts(b.Tenant(), b.RandomID); err != nil {
		return err
	}
	bt.unindexBook(b)
	bt.del(bookLookupKey(b.RandomID))
	bt.del(bookKey(b.Tenant(), b.RandomID))
	ck := string(bookKey(b.Tenant(), b.RandomID))
	bt.touched = append(bt.touched, ck, string(bookLookupKey(b.RandomID)))
	delete(bt.fills, ck)
	return nil
}

func (bt *Batch) unindexBook(b *Book) {
	for _, k := range bookIndexKeys(b) {
		bt.del(k)
	}
	if at, ok := NextTransition(b); ok {
		bt.del(dueKey(at.UnixNano(), b.Tenant(), b.RandomID))
	}
}

// NextTransition is the time at which b changes status by itself: a scheduled book publishes at
// its published_date; a published or scheduled book is unpublished at its expires_at.
func NextTransition(b *Book) (time.Time, bool) {
	var at time.Time
	if b.Status == StatusSchedule && b.PublishedDate != nil {
		at = *b.PublishedDate
	}
	if (b.Status == StatusSchedule || b.Status == StatusPublish) && b.ExpiresAt != nil {
		if at.IsZero() || b.ExpiresAt.Before(at) {
			at = *b.ExpiresAt
		}
	}
	return at, !at.IsZero()
}

// Due is a book whose timed transition has come.
type Due struct {
	Tenant   Tenant
	RandomID string
	At       time.Time
}

// DueBooks lists up to limit books whose transition time is at or before now, and the time of the
// earliest later transition (zero if none).
func (s *Store) DueBooks(now time.Time, limit int) ([]Due, time.Time, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(duePrefix), UpperBound: prefixEnd([]byte(duePrefix))})
	if err != nil {
		return nil, time.Time{}, err
	}
	defer it.Close()
	var out []Due
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[len(duePrefix):]
		if len(k) < 8+tenantLen {
			continue
		}
		at := time.Unix(0, int64(beUint64(k[:8])))
		if at.After(now) {
			return out, at, nil
		}
		if len(out) >= limit {
			return out, at, nil
		}
		t, ok := tenantFromBytes(k[8 : 8+tenantLen])
		if !ok {
			continue
		}
		out = append(out, Due{Tenant: t, RandomID: string(k[8+tenantLen:]), At: at})
	}
	return out, time.Time{}, it.Error()
}

// DropDue removes a due entry that no longer matches its book (the book went away).
func (s *Store) DropDue(d Due) error {
	b := s.NewBatch()
	b.del(dueKey(d.At.UnixNano(), d.Tenant, d.RandomID))
	return b.Commit()
}

// BookQuery is a page request over a tenant's books.
type BookQuery struct {
	Status     string // "" for all
	Sort       byte   // SortCreated, ...
	Desc       bool
	After      []byte // sort key of the last row of the previous page
	Limit      int
	NameFilter string // case-insensitive substring; "" for none
	// ScanBudget bounds the index entries examined when NameFilter is set; a page may then hold
	// fewer than Limit rows while HasMore is true.
	ScanBudget int
}

// BookPage is one page of books.
type BookPage struct {
	Books   []*Book
	Last    []byte // sort key to continue after
	HasMore bool
}

// ListBooks runs a bounded range scan over the index of q.Sort (and q.Status).
func (s *Store) ListBooks(t Tenant, q BookQuery) (*BookPage, error) {
	filter := "*"
	if q.Status != "" {
		filter = q.Status
	}
	if q.Limit <= 0 {
		q.Limit = 25
	}
	prefix := bookIndexPrefix(t, filter, q.Sort)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var valid bool
	switch {
	case q.After == nil && !q.Desc:
		valid = it.First()
	case q.After == nil && q.Desc:
		valid = it.Last()
	case !q.Desc:
		valid = it.SeekGE(append(cat(prefix, q.After), 0))
	default:
		valid = it.SeekLT(cat(prefix, q.After))
	}
	step := it.Next
	if q.Desc {
		step = it.Prev
	}
	needle := foldName(q.NameFilter)
	page := &BookPage{}
	scanned := 0
	for ; valid; valid = step() {
		if len(page.Books) == q.Limit {
			page.HasMore = true
			break
		}
		if q.NameFilter != "" && q.ScanBudget > 0 && scanned >= q.ScanBudget {
			page.HasMore = true
			break
		}
		scanned++
		rid := string(it.Value())
		b, err := s.GetBook(t, rid)
		if errors.Is(err, errs.ErrNotFound) {
			continue // racing a delete: the index entry goes in the same batch
		}
		if err != nil {
			return nil, err
		}
		page.Last = append(page.Last[:0], it.Key()[len(prefix):]...)
		if needle != "" && !bytes.Contains([]byte(foldName(b.Name)), []byte(needle)) {
			continue
		}
		// The index is the snapshot's, the record the latest: a book whose status changed
		// since no longer matches the filter (found by a review: a draft came back in a list of
		// published books while PUTs ran). It is in the list of its new status.
		if q.Status != "" && b.Status != q.Status {
			continue
		}
		page.Books = append(page.Books, b)
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return page, nil
}

// CountBooks counts a tenant's books with a status, stopping at max (0 = no cap).
func (s *Store) CountBooks(t Tenant, status string, max int) (int, error) {
	return s.countPrefix(bookIndexPrefix(t, status, SortCreated), max)
}
