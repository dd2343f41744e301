package main

// Bulk settings batches across real process kills (docs/DECISIONS.md "Bulk settings"). The test
// binary runs as `flipbook serve` in a child process (TestMain in conversion_kill_test.go). The
// test creates several hundred books, then, round after round, posts a batch changing every one
// of them (each expecting the revision it has), SIGKILLs the child a few milliseconds after the
// 202, starts a new child on the same data dir and waits for the batch to finish. After each
// round it checks that every item was applied exactly once: the batch is completed, every item
// succeeded with new_settings_revision = expected + 1, and every book's settings_revision moved
// on by exactly one (an item applied twice would have met its own first change and failed with
// settings_revision_conflict) and carries the round's title. A round counts as killed mid-run
// when some items finished before the killed process was gone and others after (finished_at, the
// same clock); the delay adapts until enough rounds were.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

const (
	bulkKillBooks     = 600 // books of every batch
	bulkKillMidRuns   = 2   // rounds that must be killed mid-run
	bulkKillMaxRounds = 12
	bulkKillCreators  = 6 // concurrent clients creating the books
)

// bulkKillCreate creates n one-page editor books and returns their random ids.
func bulkKillCreate(t *testing.T, base, key string, n int) []string {
	body, err := json.Marshal(konvaBody(t, "bulk", 1, 40, 60))
	require.NoError(t, err)
	ids := make([]string, n)
	errs := make(chan error, n)
	next := make(chan int, n)
	for i := range ids {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < bulkKillCreators; w++ {
		wg.Go(func() {
			for i := range next {
				req, _ := http.NewRequest("POST", base+"/api/v1/books/konva", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				raw, _ := io.ReadAll(res.Body)
				res.Body.Close()
				var r struct {
					Data struct {
						RandomID string `json:"random_id"`
					} `json:"data"`
				}
				if res.StatusCode != 201 || json.Unmarshal(raw, &r) != nil {
					errs <- fmt.Errorf("create book: %d %s", res.StatusCode, raw)
					return
				}
				ids[i] = r.Data.RandomID
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return ids
}

// bulkKillRevisions reads every book's settings_revision and name through the summary.
func bulkKillRevisions(t *testing.T, base, key string, ids []string) (map[string]string, map[string]string) {
	t.Helper()
	r := call(t, "POST", base+"/api/v1/books/bulk-settings/summary", key, map[string]any{"book_ids": ids})
	require.Equal(t, 200, r.status, "%s", r.raw)
	revs, names := map[string]string{}, map[string]string{}
	for _, x := range r.data()["books"].([]any) {
		b := x.(map[string]any)
		revs[b["id"].(string)] = b["settings_revision"].(string)
		names[b["id"].(string)] = b["name"].(string)
	}
	require.Len(t, revs, len(ids))
	return revs, names
}

func TestBulkSettingsKill(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	args := []string{"--data", dir, "--addr", "127.0.0.1:0", "--admin-token", "adm_bulk_kill",
		"--rate-limit-endpoint", "0", "--rate-limit-workspace", "0"}
	child := startChild(t, args...)
	var key string // printed after the address startChild waited for
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, keyWritten(&key, child.stdout))
	start := time.Now()
	ids := bulkKillCreate(t, child.base, key, bulkKillBooks)
	t.Logf("created %d books in %s", len(ids), time.Since(start).Round(time.Millisecond))
	revs, _ := bulkKillRevisions(t, child.base, key, ids)
	for _, id := range ids {
		require.Equal(t, "1", revs[id])
	}

	delay := 30 * time.Millisecond
	midRuns := 0
	for round := 1; round <= bulkKillMaxRounds && midRuns < bulkKillMidRuns; round++ {
		title := fmt.Sprintf("Round %d", round)
		books := make([]any, len(ids))
		for i, id := range ids {
			books[i] = map[string]any{"id": id, "settings_revision": revs[id]}
		}
		r := call(t, "POST", child.base+"/api/v1/books/bulk-settings/batches", key,
			map[string]any{"books": books, "settings": map[string]any{"title": title, "flip_sound": round%2 == 0}})
		require.Equal(t, 202, r.status, "%s", r.raw)
		batch := r.data()["id"].(string)
		wait := delay/2 + time.Duration(rng.Int64N(int64(delay)))
		time.Sleep(wait) // sleep: the batch runs a random while before the kill (the kill point under test)
		child.kill(t)
		// The killed process is gone: whatever it recorded has an earlier time, and the next one
		// (which resumes the batch before it listens) records later times.
		gone := time.Now()
		child = startChild(t, args...)

		var b map[string]any
		testutil.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
			r := call(t, "GET", child.base+"/api/v1/books/bulk-settings/batches/"+batch, key, nil)
			require.Equal(t, 200, r.status, "%s", r.raw)
			b = r.data()
			if b["status"] == "queued" || b["status"] == "running" {
				return fmt.Errorf("round %d: the batch is still %v after the restart (progress %v)\nstderr:\n%s", round, b["status"], b["progress"], child.stderr.String())
			}
			return nil
		})
		require.Equal(t, "completed", b["status"], "round %d: %v", round, b["progress"])
		before, after := 0, 0
		items := b["items"].([]any)
		require.Len(t, items, len(ids))
		for i, x := range items {
			it := x.(map[string]any)
			id := ids[i]
			require.Equal(t, id, it["book_id"])
			require.Equal(t, "succeeded", it["status"], "round %d, book %d: %v", round, i, it)
			exp, _ := strconv.Atoi(revs[id])
			require.Equal(t, revs[id], it["settings_revision"])
			require.Equal(t, strconv.Itoa(exp+1), it["new_settings_revision"], "round %d, book %d", round, i)
			at, err := time.Parse(time.RFC3339Nano, it["finished_at"].(string))
			require.NoError(t, err)
			if at.Before(gone) {
				before++
			} else {
				after++
			}
		}
		now, names := bulkKillRevisions(t, child.base, key, ids)
		for _, id := range ids {
			exp, _ := strconv.Atoi(revs[id])
			require.Equal(t, strconv.Itoa(exp+1), now[id], "round %d: book %s changed exactly once", round, id)
			require.Equal(t, title, names[id])
		}
		revs = now
		mid := before > 0 && after > 0
		if mid {
			midRuns++
		}
		t.Logf("round %d: killed %s after the 202: %d items applied before the kill, %d after the restart (mid-run: %v)",
			round, wait.Round(time.Millisecond), before, after, mid)
		switch {
		case after == 0: // finished before the kill
			delay = max(delay/2, time.Millisecond)
		case before == 0: // killed before anything was applied
			delay *= 2
		}
	}
	require.GreaterOrEqual(t, midRuns, bulkKillMidRuns, "rounds killed mid-run")
	// A clean stop and start leaves nothing to do.
	child.stop(t)
	child = startChild(t, args...)
	final, _ := bulkKillRevisions(t, child.base, key, ids)
	require.Equal(t, revs, final)
	child.stop(t)
}
