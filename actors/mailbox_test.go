package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
	"flipbook/storage"
)

// gate is a test actor whose receive blocks until release is closed.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Receive(c *actor.Context) {
	if _, ok := c.Message().(string); ok {
		g.entered <- struct{}{}
		<-g.release
	}
}

func TestMailboxDepth(t *testing.T) {
	e := newEnv(t, nil)
	depth := e.sys.MailboxDepth()
	for _, k := range ActorKinds {
		require.Contains(t, depth, k, "every kind is reported, also with no actor")
	}
	require.Equal(t, int64(1), depth["accounts"].Live)
	require.Equal(t, int64(1), depth["conversion"].Live)
	require.Zero(t, depth["book"].Live)

	g := &gate{entered: make(chan struct{}, 8), release: make(chan struct{})}
	pid := e.sys.Engine.Spawn(func() actor.Receiver { return g }, "gate", e.sys.middleware("gate"))
	require.Equal(t, ActorStats{Live: 1}, e.sys.MailboxDepth()["gate"])
	for range 4 {
		e.sys.tell(pid, "m")
	}
	<-g.entered // the first is being handled; three wait
	require.Equal(t, ActorStats{Live: 1, Waiting: 3}, e.sys.MailboxDepth()["gate"])
	close(g.release)
	testutil.Eventually(t, 2*time.Second, 5*time.Millisecond, func() error {
		if st := e.sys.MailboxDepth()["gate"]; st.Waiting != 0 {
			return fmt.Errorf("inbox not drained: %+v", st)
		}
		return nil
	})

	// A stopped actor leaves the figures, and a send to it afterwards (a late timer) counts
	// nowhere.
	<-e.sys.Engine.Poison(pid).Done()
	_, ok := e.sys.MailboxDepth()["gate"]
	require.False(t, ok)
	e.sys.tell(pid, "late")
	_, ok = e.sys.MailboxDepth()["gate"]
	require.False(t, ok)

	// Real actors: asks through a workspace to a book actor leave nothing waiting, and the
	// book actor is counted while it lives and not after it passivated.
	tn := e.workspace("Depth", PlanPro)
	b := createBook(t, e, tn, storage.StatusDraft, "depth")
	for range 5 {
		_, err := e.sys.UpdateBook(tn, b.RandomID, &BookPatch{Status: storage.StatusDraft})
		require.NoError(t, err)
	}
	depth = e.sys.MailboxDepth()
	require.Equal(t, int64(1), depth["book"].Live)
	require.GreaterOrEqual(t, depth["ws"].Live, int64(1))
	testutil.Eventually(t, 2*time.Second, 5*time.Millisecond, func() error {
		for kind, st := range e.sys.MailboxDepth() {
			if st.Waiting != 0 {
				return fmt.Errorf("%s: %d messages still wait once the asks are answered", kind, st.Waiting)
			}
		}
		return nil
	})
	testutil.Eventually(t, 10*testBookIdle, 5*time.Millisecond, func() error {
		if st := e.sys.MailboxDepth()["book"]; st != (ActorStats{}) {
			return fmt.Errorf("the passivated book actor is still counted: %+v", st)
		}
		return nil
	})
}
