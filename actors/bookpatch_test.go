package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/storage"
)

var now0 = time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

func tp(d time.Duration) *time.Time { v := now0.Add(d); return &v }

func TestSetStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		from       string
		to         string
		pub, exp   *time.Time
		wantStatus string
		wantField  string // invalid field, "" for success
		wantPub    *time.Time
	}{
		{name: "draft", from: storage.StatusPublish, to: storage.StatusDraft, wantStatus: storage.StatusDraft},
		{name: "draft with past expiry", to: storage.StatusDraft, exp: tp(-time.Hour), wantStatus: storage.StatusDraft},
		{name: "publish stamps now", to: storage.StatusPublish, wantStatus: storage.StatusPublish, wantPub: tp(0)},
		{name: "publish keeps date", to: storage.StatusPublish, pub: tp(-time.Hour), wantStatus: storage.StatusPublish, wantPub: tp(-time.Hour)},
		{name: "publish future expiry", to: storage.StatusPublish, exp: tp(time.Second), wantStatus: storage.StatusPublish, wantPub: tp(0)},
		{name: "publish past expiry", to: storage.StatusPublish, exp: tp(-time.Second), wantField: "expires_at"},
		{name: "publish expiry now", to: storage.StatusPublish, exp: tp(0), wantField: "expires_at"},
		{name: "schedule without date", to: storage.StatusSchedule, wantField: "published_date"},
		{name: "schedule future", to: storage.StatusSchedule, pub: tp(time.Hour), wantStatus: storage.StatusSchedule, wantPub: tp(time.Hour)},
		{name: "schedule past publishes", to: storage.StatusSchedule, pub: tp(-time.Hour), wantStatus: storage.StatusPublish, wantPub: tp(-time.Hour)},
		{name: "schedule now publishes", to: storage.StatusSchedule, pub: tp(0), wantStatus: storage.StatusPublish, wantPub: tp(0)},
		{name: "schedule past expiry", to: storage.StatusSchedule, pub: tp(time.Hour), exp: tp(-time.Hour), wantField: "expires_at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			from := tc.from
			if from == "" {
				from = storage.StatusDraft
			}
			b := &storage.Book{Status: from, PublishedDate: tc.pub, ExpiresAt: tc.exp}
			err := setStatus(b, tc.to, now0)
			if tc.wantField != "" {
				requireInvalid(t, err, tc.wantField)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantStatus, b.Status)
			if tc.wantPub == nil {
				require.Equal(t, tc.pub, b.PublishedDate)
			} else {
				require.NotNil(t, b.PublishedDate)
				require.True(t, tc.wantPub.Equal(*b.PublishedDate), "published_date %v, want %v", b.PublishedDate, tc.wantPub)
			}
		})
	}
}

func TestBookPatchApply(t *testing.T) {
	t.Parallel()
	desc, bg := "old desc", "#000"
	b := &storage.Book{Name: "Old", Status: storage.StatusDraft, Description: &desc}
	b.Settings.Background = &bg
	b.Settings.AnimationType = "flip"
	p := &BookPatch{
		Status:                  storage.StatusDraft,
		Title:                   Val("New"),
		Description:             Opt[string]{Set: true, Null: true},
		Slug:                    Val("my-book"),
		AccessibilityEnabled:    Val(true),
		AllowFullscreen:         Val(true),
		AutoLinksEnabled:        Val(true),
		CopyrightEnabled:        Val(true),
		DownloadablePDF:         Val(true),
		FlipSound:               Val(true),
		MadeWithBadgeEnabled:    Val(true),
		OpenFullscreenByDefault: Val(true),
		ShareSocialMedia:        Val(true),
		AnimationType:           Opt[string]{Set: true, Null: true}, // not nullable: ignored
		MobileAnimationType:     Val("slide"),
		ImageDisplay:            Val("single"),
		MagicLinkMessage:        Val("hi"),
		MagicLinkErrorMessage:   Val("no"),
		PDFPrivacyStatus:        Val("private"),
		Watermark:               Val("wm"),
		ExpiresAt:               Val(now0.Add(time.Hour).In(time.FixedZone("X", 3600))),
	}
	require.NoError(t, p.apply(b, now0))
	require.Equal(t, "New", b.Name)
	require.Nil(t, b.Description)
	require.Equal(t, "my-book", *b.Extra.Slug)
	require.True(t, b.Extra.AccessibilityEnabled && b.Settings.FullscreenEnabled && b.Extra.AutoLinksEnabled &&
		b.Settings.CopyrightEnabled && b.Settings.Downloadable && b.Settings.SoundEnabled &&
		b.Extra.MadeWithBadgeEnabled && b.Extra.OpenFullscreenByDefault && b.Settings.ShareSocialMedia)
	require.Equal(t, "flip", b.Settings.AnimationType)
	require.Equal(t, "slide", *b.Settings.MobileAnimationType)
	require.Equal(t, "#000", *b.Settings.Background, "unset fields are kept")
	require.Equal(t, "single", *b.Settings.ImageDisplay)
	require.Equal(t, "hi", *b.Extra.MagicLinkMessage)
	require.Equal(t, "no", *b.Extra.MagicLinkErrorMessage)
	require.Equal(t, "private", *b.Settings.Privacy)
	require.Equal(t, "wm", *b.Extra.Watermark)
	require.Equal(t, time.UTC, b.ExpiresAt.Location())
	require.True(t, b.ExpiresAt.Equal(now0.Add(time.Hour)))

	// A patch value is copied: changing the patch later does not change the book.
	p2 := &BookPatch{Status: storage.StatusDraft, Watermark: Val("a")}
	require.NoError(t, p2.apply(b, now0))
	p2.Watermark.V = "b"
	require.Equal(t, "a", *b.Extra.Watermark)

	// A false bool is applied; a null bool is ignored.
	require.NoError(t, (&BookPatch{Status: storage.StatusDraft, FlipSound: Val(false), AllowFullscreen: Opt[bool]{Set: true, Null: true}}).apply(b, now0))
	require.False(t, b.Settings.SoundEnabled)
	require.True(t, b.Settings.FullscreenEnabled)

	// Title null is rejected.
	err := (&BookPatch{Status: storage.StatusDraft, Title: Opt[string]{Set: true, Null: true}}).apply(b, now0)
	requireInvalid(t, err, "title")

	// An empty pdf_password clears like null.
	require.NoError(t, (&BookPatch{Status: storage.StatusDraft, PDFPassword: Val("pw")}).apply(b, now0))
	require.Equal(t, HashPassword(b.Extra.PDFPasswordSalt, "pw"), b.Extra.PDFPasswordHash)
	require.NoError(t, (&BookPatch{Status: storage.StatusDraft, PDFPassword: Val("")}).apply(b, now0))
	require.Nil(t, b.Extra.PDFPasswordHash)
	require.Nil(t, b.Extra.PDFPasswordSalt)
}

func TestHashPassword(t *testing.T) {
	t.Parallel()
	a := HashPassword([]byte("salt1"), "pw")
	require.Len(t, a, 32)
	require.Equal(t, a, HashPassword([]byte("salt1"), "pw"))
	require.NotEqual(t, a, HashPassword([]byte("salt2"), "pw"))
	require.NotEqual(t, a, HashPassword([]byte("salt1"), "pw2"))
}

func TestTransition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		status   string
		pub, exp *time.Time
		want     string
		changed  bool
	}{
		{"schedule due", storage.StatusSchedule, tp(-time.Second), nil, storage.StatusPublish, true},
		{"schedule due now", storage.StatusSchedule, tp(0), nil, storage.StatusPublish, true},
		{"schedule not due", storage.StatusSchedule, tp(time.Second), nil, storage.StatusSchedule, false},
		{"schedule due and expired", storage.StatusSchedule, tp(-time.Hour), tp(-time.Second), storage.StatusDraft, true},
		{"schedule expires before publishing", storage.StatusSchedule, tp(time.Hour), tp(-time.Second), storage.StatusDraft, true},
		{"publish expired", storage.StatusPublish, tp(-time.Hour), tp(0), storage.StatusDraft, true},
		{"publish not expired", storage.StatusPublish, tp(-time.Hour), tp(time.Second), storage.StatusPublish, false},
		{"draft never moves", storage.StatusDraft, tp(-time.Hour), tp(-time.Second), storage.StatusDraft, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := &storage.Book{Status: tc.status, PublishedDate: tc.pub, ExpiresAt: tc.exp}
			require.Equal(t, tc.changed, transition(b, now0))
			require.Equal(t, tc.want, b.Status)
		})
	}
}

func TestCloneBookIsIndependent(t *testing.T) {
	t.Parallel()
	b := &storage.Book{Name: "a", Pages: []storage.Page{{Number: 1}}, Memo: &storage.Memo{}}
	c := cloneBook(b)
	c.Name = "b"
	c.Pages[0].Number = 2
	require.Equal(t, "a", b.Name)
	require.Equal(t, 1, b.Pages[0].Number)
	require.Nil(t, c.Memo, "a rendering of the old version must not follow the copy")
	require.NotNil(t, b.Memo)
}

func TestSlugify(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Acme":                         "acme",
		"Acme Corp, Inc.":              "acme-corp-inc",
		"  --Hello__World--  ":         "hello-world",
		"":                             "workspace",
		"!!!":                          "workspace",
		"Ünïcode":                      "n-code",
		"日本":                           "workspace",
		"a1 b2":                        "a1-b2",
		strings.Repeat("ab ", 40):      strings.TrimSuffix(strings.Repeat("ab-", 20), "-"),
		strings.Repeat("x", 100):       strings.Repeat("x", 60),
		strings.Repeat("y", 59) + " z": strings.Repeat("y", 59),
	} {
		got := slugify(in)
		require.Equalf(t, want, got, "slugify(%q)", in)
		require.LessOrEqual(t, len(got), 60)
		require.False(t, strings.HasSuffix(got, "-") || strings.HasPrefix(got, "-"), got)
	}
}

func TestRandomString(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	counts := map[rune]int{}
	for i := 0; i < 2000; i++ {
		s := NewRandomID()
		require.Len(t, s, RandomIDLen)
		require.False(t, seen[s], "duplicate random id")
		seen[s] = true
		for _, r := range s {
			require.True(t, strings.ContainsRune(alphabet, r), "%q outside the alphabet", r)
			counts[r]++
		}
	}
	// 40,000 characters over 62 symbols: every symbol shows up (expected ~645 each).
	require.Len(t, counts, len(alphabet))
	for r, n := range counts {
		require.Greaterf(t, n, 400, "symbol %q is rare: %d", r, n)
	}
	require.Len(t, RandomString(0), 0)
	require.Len(t, RandomString(1000), 1000)
}

func TestPlans(t *testing.T) {
	t.Parallel()
	require.Len(t, PlanNames, len(Plans))
	for i, name := range PlanNames {
		require.Equal(t, name, Plans[name].Name)
		require.Equal(t, i, Plans[name].Rank)
	}
	require.True(t, PlanAtLeast(PlanPro, PlanFree))
	require.True(t, PlanAtLeast(PlanPro, PlanPro))
	require.False(t, PlanAtLeast(PlanFree, PlanPro))
	require.True(t, PlanAtLeast(PlanEnterprise, PlanCompany))
	require.Positive(t, Plans[PlanFree].PublishedBooks)
	require.Zero(t, Plans[PlanCompany].PublishedBooks, "company has no publish limit")
}
