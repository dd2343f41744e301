package bench

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// alternated is the result of loads run in alternating rounds: each side's rounds pooled
// (sumStats) and the ratio b/a of each round, sorted.
type alternated struct {
	a, b   Stats
	ratios []float64
	// cpu is each side's process CPU time (service and load generator) per request over its
	// rounds: what a request costs the machine, less exposed than req/s to what the other
	// processes on it do.
	cpu [2]time.Duration
}

// alternate measures two loads in rounds pairs, a first in even rounds and b first in odd
// ones, so that what the shared machine does meanwhile (other processes, frequency) falls on
// both sides alike: two loads run one after the other for several seconds each see different
// machines (the bare handler's figure moved by 25% from one run to the next on 2026-11-28).
// A load with errors or no request fails it.
func alternate(rounds int, names [2]string, out io.Writer, a, b func() Stats) (alternated, error) {
	var as, bs []Stats
	var res alternated
	var cpu [2]time.Duration
	timed := func(side int, f func() Stats) Stats {
		c0 := selfCPU()
		st := f()
		cpu[side] += selfCPU() - c0
		return st
	}
	for i := 0; i < rounds; i++ {
		var x, y Stats
		if i%2 == 0 {
			x = timed(0, a)
			y = timed(1, b)
		} else {
			y = timed(1, b)
			x = timed(0, a)
		}
		for j, st := range []Stats{x, y} {
			if st.Errors > 0 || st.Requests == 0 {
				return res, fmt.Errorf("%s, round %d: %d errors of %d requests: %v", names[j], i+1, st.Errors, st.Requests+st.Errors, st.FirstErr)
			}
		}
		as, bs = append(as, x), append(bs, y)
		res.ratios = append(res.ratios, y.RPS()/x.RPS())
		fmt.Fprintf(out, "    round %d: %s %.0f req/s, %s %.0f req/s: %.3fx\n", i+1, names[0], x.RPS(), names[1], y.RPS(), y.RPS()/x.RPS())
	}
	slices.Sort(res.ratios)
	res.a, res.b = sumStats(as), sumStats(bs)
	for side, st := range []Stats{res.a, res.b} {
		// Warm-up requests are not counted in Requests: the CPU per request is a slight
		// overestimate on both sides alike.
		res.cpu[side] = cpu[side] / time.Duration(max(st.Requests, 1))
	}
	return res, nil
}

// median is the median of the rounds' ratios.
func (r alternated) median() float64 { return median(r.ratios) }

// summary is the line that reports r: the ratio over the sums, the median and the range.
func (r alternated) summary(what string) string {
	return fmt.Sprintf("  %s: %.3fx over the sums, median of the rounds %.3fx, rounds %.3f-%.3fx; process CPU per request %.1f µs and %.1f µs: %.3fx",
		what, r.b.RPS()/r.a.RPS(), r.median(), r.ratios[0], r.ratios[len(r.ratios)-1],
		float64(r.cpu[0].Nanoseconds())/1e3, float64(r.cpu[1].Nanoseconds())/1e3, float64(r.cpu[0])/float64(r.cpu[1]))
}
