package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCatalogScenarioRuns keeps the catalog scenario working: a small run against a service
// child process (this test binary acting as `flipbook serve`) must apply every item in both
// passes and every book of the bulk settings batches, and report every target. (The targets
// themselves are judged by `make bench` on the full-size run, not here.)
func TestCatalogScenarioRuns(t *testing.T) {
	asChild(t)
	var out, log bytes.Buffer
	rep, err := Catalog(context.Background(), CatalogOptions{Items: 1000, PerRequest: 250, InFlight: 4, Books: 100, PerBatch: 25,
		RSSEvery: 20 * time.Millisecond, Settle: 100 * time.Millisecond, Timeout: time.Minute, Log: &log}, &out)
	require.NoError(t, err, "%s\nservice log:\n%s", out.String(), log.String())
	t.Log(out.String())
	require.Equal(t, "catalog", rep.Scenario)
	for _, want := range []string{"raw: item records in synced commits", "items, create pass: 1,000 items", "items, update pass: 1,000 items",
		"4 sync jobs: 4 completed with every item accepted (1,000 items accepted); the catalog counts 1,000 items",
		"items/s, bulk upsert to every sync job finished", "items/s / raw synced item writes", "service RSS"} {
		require.Contains(t, out.String(), want)
	}
	for _, f := range rep.Failed {
		require.False(t, strings.Contains(f, "sync jobs did not complete") || strings.Contains(f, "the catalog counts"), f)
	}
	for _, want := range []string{"books, bulk settings: 100 books", "4 batches: 4 completed with every book succeeded (100 books succeeded); 0 books kept their settings_revision",
		"raw: book records read, changed and written back", "books/s, bulk settings batches posted to every batch finished"} {
		require.Contains(t, out.String(), want)
	}
	for _, f := range rep.Failed {
		require.NotContains(t, f, "bulk settings:", f)
	}
}

// TestCatalogEntries: the generated products are what a bulk upsert takes and the issue
// describes: unique match keys, about 600 bytes of JSON each, at most 500 a request.
func TestCatalogEntries(t *testing.T) {
	keys := map[string]bool{}
	entries := make([]catEntry, 1000)
	for i := range entries {
		entries[i] = newCatEntry(i, 0)
		k := entries[i].ExternalProductID
		if v := entries[i].ExternalVariantID; v != nil {
			k += "/" + *v
		}
		require.False(t, keys[k], "match key %s repeats", k)
		keys[k] = true
		require.NotEmpty(t, entries[i].Title)
		require.NotEqual(t, entries[i].Price, newCatEntry(i, 1).Price, "the update pass changes the price")
	}
	bodies, per := catBodies(entries, 500)
	require.Len(t, bodies, 2)
	require.InDelta(t, 600, per, 150)
	var body struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal(bodies[0], &body))
	require.Len(t, body.Items, 500)
	for _, k := range []string{"external_product_id", "title", "sku", "price", "regular_price", "currency", "image", "url",
		"description", "short_description", "stock_status", "categories", "stock_quantity", "available"} {
		require.Contains(t, body.Items[0], k)
	}
}
