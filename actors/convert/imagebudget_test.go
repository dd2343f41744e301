package convert

import (
	"context"
	"errors"
	"image"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ImageHeader reads the size from the header alone: a header claiming 49 megapixels with no
// pixel data after it passes, CheckImage then refuses it; over MaxPixels is refused at once.
func TestImageHeaderReadsNoPixels(t *testing.T) {
	t.Parallel()
	h, err := ImageHeader(pngHeader(7000, 7000))
	require.NoError(t, err)
	require.Equal(t, Header{Ext: "png", Width: 7000, Height: 7000, Cost: 49_000_000}, h)
	require.EqualValues(t, 49_000_000, h.Pixels())
	require.ErrorIs(t, CheckImage(context.Background(), pngHeader(7000, 7000), h, nil), ErrNotImage)

	_, err = ImageHeader(pngHeader(10000, 10000))
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ImageHeader([]byte("not an image"))
	require.ErrorIs(t, err, ErrNotImage)

	jpg := encodeJPEG(t, noisy(48, 40))
	h, err = ImageHeader(jpg)
	require.NoError(t, err)
	require.Equal(t, Header{Ext: "jpg", Width: 48, Height: 40, Cost: 48 * 40}, h)
}

func TestCheckImageHandsTheImageToUse(t *testing.T) {
	data := encodePNG(t, noisy(64, 32))
	h, err := ImageHeader(data)
	require.NoError(t, err)
	var got image.Rectangle
	require.NoError(t, CheckImage(context.Background(), data, h, func(img image.Image) error {
		got = img.Bounds()
		return nil
	}))
	require.Equal(t, image.Rect(0, 0, 64, 32), got)
	boom := errors.New("boom")
	require.ErrorIs(t, CheckImage(context.Background(), data, h, func(image.Image) error { return boom }), boom)
	require.ErrorIs(t, CheckImage(context.Background(), corrupt(data), h, nil), ErrNotImage)

	// The budget is given back whatever happened.
	decodeBudget.mu.Lock()
	defer decodeBudget.mu.Unlock()
	require.Zero(t, decodeBudget.used)
}

// granted reports whether the acquire behind ch succeeded within wait.
func granted(ch <-chan error, wait time.Duration) bool {
	select {
	case err := <-ch:
		return err == nil
	case <-time.After(wait):
		return false
	}
}

func TestPixelBudgetFirstComeFirstServed(t *testing.T) {
	t.Parallel()
	b := newPixelBudget(100)
	ctx := context.Background()
	// acquire starts an acquire and returns once it waits (or has its answer).
	acquire := func(ctx context.Context, n int64) <-chan error {
		b.mu.Lock()
		before := len(b.waiters)
		b.mu.Unlock()
		ch := make(chan error, 1)
		go func() { ch <- b.acquire(ctx, n) }()
		require.Eventually(t, func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.waiters) > before || len(ch) > 0
		}, 5*time.Second, time.Millisecond)
		return ch
	}
	waiting := func(ch <-chan error) bool { return !granted(ch, 20*time.Millisecond) }
	served := func(ch <-chan error) bool { return granted(ch, 5*time.Second) }

	require.NoError(t, b.acquire(ctx, 60))
	big := acquire(ctx, 60)
	require.True(t, waiting(big), "60 + 60 is over the budget")
	small := acquire(ctx, 10)
	require.True(t, waiting(small), "a small request does not overtake the waiting one")

	b.release(60)
	require.True(t, served(big))
	require.True(t, served(small), "60 + 10 fit")

	// A request over the whole budget waits for all of it, then runs alone.
	huge := acquire(ctx, 1000)
	require.True(t, waiting(huge))
	b.release(60)
	require.True(t, waiting(huge))
	b.release(10)
	require.True(t, served(huge))

	// A waiter that gives up leaves the queue; those behind it are served.
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := acquire(cctx, 50)
	next := acquire(ctx, 40)
	require.True(t, waiting(next))
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	b.release(1000)
	require.True(t, served(next))
	b.release(40)
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Zero(t, b.used)
	require.Empty(t, b.waiters)
}
