// Command gossipsub-bench runs go-libp2p-pubsub's gossipsub on go-libp2p mocknet hosts, in one
// process, from the lab's input CSV files, and writes what happened as CSV files, so that the
// lab's gossipsub simulation can be compared with the real implementation. See README.md.
package main

import (
	"cmp"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"
)

// sample is one warm-up heartbeat's mesh figures over the (node, topic) meshes of topics with
// more than d_low subscribers.
type sample struct {
	heartbeat                          int
	meshes, links, min, max            int
	belowLow, atOrAboveHigh, aboveHigh int
	grafts, prunes                     int64
	takenUs                            int64 // when it was taken, relative to T0
}

// stageStat is one publication stage's totals.
type stageStat struct {
	stage, down int
	rpcBytes    int64
	seconds     float64
}

// main parses the flags, runs the benchmark and exits non-zero on any error.
func main() {
	inDir := flag.String("in", "", "input directory (params.json, nodes.csv, ...)")
	outDir := flag.String("out", "", "output directory (created if missing)")
	verbose := flag.Bool("v", false, "more progress lines on stderr")
	latency := flag.String("latency", "link", "link: mocknet link latency (LinkOptions); write: each pubsub stream write delayed by the latency")
	flag.Parse()
	if *inDir == "" || *outDir == "" || flag.NArg() > 0 || (*latency != "link" && *latency != "write") {
		fmt.Fprintln(os.Stderr, "usage: gossipsub-bench -in DIR -out DIR [-v] [-latency link|write]")
		os.Exit(2)
	}
	if err := run(*inDir, *outDir, *verbose, *latency == "write"); err != nil {
		fmt.Fprintln(os.Stderr, "gossipsub-bench:", err)
		os.Exit(1)
	}
}

// logf prints a progress line, stamped with the seconds since start.
func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// debugf prints a progress line with -v only.
func (b *bench) debugf(format string, args ...any) {
	if b.verbose {
		b.logf(format, args...)
	}
}

// at is the wall time of heartbeat boundary k: T0 + k*heartbeat.
func (b *bench) at(k int) time.Time { return b.t0.Add(time.Duration(k) * b.hb) }

// sleepUntil waits for a wall time (go-libp2p's timers are real, so ours are too).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// run does the whole benchmark in order: read, start, connect, wait, warm up, publish, write.
func run(inDir, outDir string, verbose, writes bool) error {
	b := &bench{verbose: verbose, writes: writes, start: time.Now()}
	in, err := readInput(inDir)
	if err != nil {
		return err
	}
	b.in, b.hb = in, time.Duration(in.p.HeartbeatMs)*time.Millisecond
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	b.logf("input: %d nodes, %d subscriptions, %d topics, %d connections, %d publications in %d stages",
		len(in.nodes), countSubs(in), len(in.members), len(in.conns), len(in.pubs), len(in.stages))

	setupStart := time.Now()
	b.t0 = setupStart.Add(b.setup())
	if err := b.addHosts(); err != nil {
		return err
	}
	b.logf("setup: %d mocknet hosts (latency: %s)", len(b.hosts), map[bool]string{false: "mocknet links", true: "delayed stream writes"}[b.writes])
	if err := b.startRouters(); err != nil {
		return err
	}
	b.logf("setup: %d gossipsub routers subscribed (no connections yet)", len(b.ps))
	connStart := time.Now()
	if err := b.connect(); err != nil {
		return err
	}
	connSecs := time.Since(connStart).Seconds()
	b.logf("setup: %d connections made and peered in %.1f s", len(in.conns), connSecs)
	if err := b.awaitSubscriptions(setupStart); err != nil {
		return err
	}
	setupSecs := time.Since(setupStart).Seconds()
	if !time.Now().Before(b.t0) {
		return fmt.Errorf("setup took %.1f s, past T0 (setup_seconds %.1f); raise setup_seconds", setupSecs, in.p.SetupSeconds)
	}
	b.logf("setup: every node knows its peers' subscriptions; setup took %.1f s, %.1f s before T0", setupSecs, time.Until(b.t0).Seconds())
	if time.Until(b.t0) > 20*time.Second {
		b.collect("before T0")
	}

	samples, mesh := b.warmUp()
	if err := writeHeartbeats(filepath.Join(outDir, "heartbeats.csv"), samples); err != nil {
		return err
	}
	if err := b.writeMesh(filepath.Join(outDir, "mesh.csv"), mesh); err != nil {
		return err
	}
	pubAt, stages, err := b.publish()
	if err != nil {
		return err
	}
	if err := b.writeDeliveries(filepath.Join(outDir, "deliveries.csv"), pubAt); err != nil {
		return err
	}
	if err := b.writePublications(filepath.Join(outDir, "publications_out.csv"), pubAt); err != nil {
		return err
	}
	if err := writeStages(filepath.Join(outDir, "stages.csv"), stages); err != nil {
		return err
	}
	maxLag := int64(0)
	for _, s := range samples {
		maxLag = max(maxLag, s.takenUs-int64(s.heartbeat)*b.hb.Microseconds())
	}
	if err := b.writeRun(filepath.Join(outDir, "run.json"), setupSecs, connSecs, maxLag); err != nil {
		return err
	}
	b.logf("done: outputs in %s", outDir)
	return nil
}

// collect runs a garbage collection now, while nothing is being published. At fb-1k's scale a
// collection scans about 1.8 million goroutine stacks (7.5 GB) and holds up allocating goroutines
// for seconds on 2 cores; left to itself it would fall amid the publications (it did: a 10 s
// stall). After one, the next is some 10 GB of allocation away, beyond a stage.
func (b *bench) collect(why string) {
	start := time.Now()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.logf("gc (%s): %.1f s, heap in use %.1f GiB, stacks %.1f GiB, %d goroutines", why, time.Since(start).Seconds(),
		float64(ms.HeapInuse)/(1<<30), float64(ms.StackInuse)/(1<<30), runtime.NumGoroutine())
}

// countSubs is the number of (node, topic) subscriptions.
func countSubs(in *input) int {
	n := 0
	for _, ts := range in.topics {
		n += len(ts)
	}
	return n
}

// warmUp lets the heartbeats run, sampling the meshes at every boundary T0 + h*heartbeat (just
// after every node's heartbeat h), and returns the samples and the meshes at the last one.
func (b *bench) warmUp() ([]sample, [][][]int) {
	var samples []sample
	var g0, p0 int64
	for h := 1; h <= b.in.p.Warmup; h++ {
		sleepUntil(b.at(h))
		s := b.sample(h)
		g, p := b.c.grafts.Load(), b.c.prunes.Load()
		s.grafts, s.prunes, g0, p0 = g-g0, p-p0, g, p
		samples = append(samples, s)
		mean := 0.0
		if s.meshes > 0 {
			mean = float64(s.links) / float64(s.meshes)
		}
		b.logf("heartbeat %d/%d: %d meshes, mean %.2f, min %d, max %d, below d_low %d, >= d_high %d, > d_high %d, grafts %d, prunes %d, lag %.1f ms",
			h, b.in.p.Warmup, s.meshes, mean, s.min, s.max, s.belowLow, s.atOrAboveHigh, s.aboveHigh,
			s.grafts, s.prunes, float64(s.takenUs-int64(h)*b.hb.Microseconds())/1000)
	}
	return samples, b.meshes()
}

// sample reads every node's mesh sizes of its topics with more than d_low subscribers.
func (b *bench) sample(h int) sample {
	p := b.in.p
	s := sample{heartbeat: h, min: -1, max: -1}
	for v := range b.in.nodes {
		for _, t := range b.in.topics[v] {
			if len(b.in.members[t]) <= p.Dlo {
				continue
			}
			n := b.tr[v].meshSize(topicName(t))
			s.meshes++
			s.links += n
			if s.min < 0 || n < s.min {
				s.min = n
			}
			s.max = max(s.max, n)
			if n < p.Dlo {
				s.belowLow++
			}
			if n >= p.Dhi {
				s.atOrAboveHigh++
			}
			if n > p.Dhi {
				s.aboveHigh++
			}
		}
	}
	s.takenUs = time.Since(b.t0).Microseconds()
	return s
}

// meshes copies every node's meshes: per node, per its topic (input order), the peers' node indices.
func (b *bench) meshes() [][][]int {
	out := make([][][]int, len(b.in.nodes))
	for v := range b.in.nodes {
		out[v] = make([][]int, len(b.in.topics[v]))
		for k, t := range b.in.topics[v] {
			for _, p := range b.tr[v].meshPeers(topicName(t)) {
				if j, ok := b.c.peerNode[p]; ok {
					out[v][k] = append(out[v][k], j)
				}
			}
			slices.SortFunc(out[v][k], func(x, y int) int { return cmp.Compare(b.in.nodes[x].id, b.in.nodes[y].id) })
		}
	}
	return out
}

// publish runs the stages from boundary warmup+1 on. At a stage's first boundary its newly
// down nodes go down and the garbage is collected (see collect); its batches of publish_per_heartbeat publications follow at the next
// boundaries, the first one at least a heartbeat after the last node went down (taking a node
// down closes hundreds of connections, and every peer should have run a heartbeat since);
// 5 heartbeats after the last batch the next stage starts. A batch never goes out late in a
// burst: if its boundary has passed, it waits for the next. It returns each publication's
// publish time and the stages' totals.
func (b *bench) publish() ([]time.Time, []stageStat, error) {
	in := b.in
	pubAt := make([]time.Time, len(in.pubs))
	var stats []stageStat
	k := in.p.Warmup + 1
	for _, s := range in.stages {
		sleepUntil(b.at(k))
		begin, bytes0 := time.Now(), b.c.rpcBytes.Load()
		var newly []int
		for v := range in.down[s] {
			if !b.isDown[v] {
				newly = append(newly, v)
			}
		}
		if err := b.takeDown(newly); err != nil {
			return nil, nil, err
		}
		b.collect(fmt.Sprintf("stage %d start", s))
		settled := time.Now()
		if len(newly) > 0 {
			settled = settled.Add(b.hb)
		}
		k++
		for b.at(k).Before(settled) {
			k++
		}
		var idx []int
		for i, p := range in.pubs {
			if p.stage == s {
				idx = append(idx, i)
			}
		}
		b.logf("stage %d: %d nodes down (%d newly, taken down in %.1f s), %d publications from heartbeat boundary %d",
			s, len(in.down[s]), len(newly), time.Since(begin).Seconds(), len(idx), k)
		for len(idx) > 0 {
			n := min(in.p.PerHeartbeat, len(idx))
			for time.Since(b.at(k)) > b.hb/20 {
				b.logf("stage %d: boundary %d passed before its batch was ready; moved to the next", s, k)
				b.late++
				k++
			}
			sleepUntil(b.at(k))
			if err := b.publishBatch(idx[:n], pubAt); err != nil {
				return nil, nil, err
			}
			b.debugf("stage %d: published %d at boundary %d", s, n, k)
			idx = idx[n:]
			k++
		}
		k += 4 // the last batch went out at k-1
		sleepUntil(b.at(k))
		st := stageStat{s, len(in.down[s]), b.c.rpcBytes.Load() - bytes0, time.Since(begin).Seconds()}
		stats = append(stats, st)
		b.logf("stage %d: done at boundary %d, %d RPC bytes sent, %.1f s", s, k, st.rpcBytes, st.seconds)
	}
	return pubAt, stats, nil
}

// publishBatch publishes a batch of publications at once, one goroutine each, noting the
// time each Publish call started.
func (b *bench) publishBatch(idx []int, pubAt []time.Time) error {
	var wg sync.WaitGroup
	errs := make([]error, len(idx))
	for k, i := range idx {
		p := b.in.pubs[i]
		data := make([]byte, b.in.p.MessageBytes)
		binary.BigEndian.PutUint64(data, uint64(p.id))
		binary.BigEndian.PutUint64(data[8:], uint64(p.stage))
		top := b.topics[p.publisher][p.topic]
		wg.Go(func() {
			pubAt[i] = time.Now()
			errs[k] = top.Publish(b.ctxs[p.publisher], data)
		})
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return fmt.Errorf("publish pub_id %d: %w", b.in.pubs[idx[k]].id, err)
		}
	}
	return nil
}

// writeCSV writes a header and rows to path.
func writeCSV(path string, header []string, rows func(w func(...string)) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	cw.Write(header)
	err = rows(func(rec ...string) { cw.Write(rec) })
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// d formats an integer.
func d[T ~int | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

// writeHeartbeats writes heartbeats.csv.
func writeHeartbeats(path string, samples []sample) error {
	return writeCSV(path, []string{"heartbeat", "meshes", "mesh_links", "mesh_min", "mesh_max", "below_low",
		"at_or_above_high", "above_high", "grafts", "prunes", "taken_us"}, func(w func(...string)) error {
		for _, s := range samples {
			w(d(s.heartbeat), d(s.meshes), d(s.links), d(s.min), d(s.max), d(s.belowLow),
				d(s.atOrAboveHigh), d(s.aboveHigh), d(s.grafts), d(s.prunes), d(s.takenUs))
		}
		return nil
	})
}

// writeMesh writes mesh.csv: one row per (topic, node, mesh peer), as each node sees its mesh.
func (b *bench) writeMesh(path string, mesh [][][]int) error {
	return writeCSV(path, []string{"topic_id", "node_id", "peer_id"}, func(w func(...string)) error {
		for v, per := range mesh {
			for k, peers := range per {
				for _, j := range peers {
					w(d(b.in.topics[v][k]), d(b.in.nodes[v].id), d(b.in.nodes[j].id))
				}
			}
		}
		return nil
	})
}

// writeDeliveries writes deliveries.csv: every first copy at a node other than the publisher.
func (b *bench) writeDeliveries(path string, pubAt []time.Time) error {
	b.c.mu.Lock()
	ds := slices.Clone(b.c.deliveries)
	b.c.mu.Unlock()
	slices.SortFunc(ds, func(x, y delivery) int {
		if x.pub != y.pub {
			return x.pub - y.pub
		}
		return x.at.Compare(y.at)
	})
	return writeCSV(path, []string{"pub_id", "node_id", "from_id", "latency_us", "stage"}, func(w func(...string)) error {
		for _, x := range ds {
			p := b.in.pubs[x.pub]
			if x.node == p.publisher {
				continue
			}
			from := ""
			if x.from >= 0 {
				from = d(b.in.nodes[x.from].id)
			}
			w(d(p.id), d(b.in.nodes[x.node].id), from, d(x.at.Sub(pubAt[x.pub]).Microseconds()), d(p.stage))
		}
		return nil
	})
}

// writePublications writes publications_out.csv: per publication, its reach and its traffic.
func (b *bench) writePublications(path string, pubAt []time.Time) error {
	in, c := b.in, b.c
	delivered := make([]int, len(in.pubs))
	c.mu.Lock()
	for _, x := range c.deliveries {
		if x.node != in.pubs[x.pub].publisher {
			delivered[x.pub]++
		}
	}
	c.mu.Unlock()
	return writeCSV(path, []string{"pub_id", "stage", "topic_id", "publisher", "expected", "delivered", "copies",
		"duplicates", "ihave", "iwant", "idontwant", "publish_us", "rejected"}, func(w func(...string)) error {
		for i, p := range in.pubs {
			expected := -1 // the publisher
			for _, v := range in.members[p.topic] {
				if !in.down[p.stage][v] {
					expected++
				}
			}
			w(d(p.id), d(p.stage), d(p.topic), d(in.nodes[p.publisher].id), d(expected), d(delivered[i]),
				d(c.copies[i].Load()), d(c.dups[i].Load()), d(c.ihave[i].Load()), d(c.iwant[i].Load()),
				d(c.idontwant[i].Load()), d(pubAt[i].Sub(b.t0).Microseconds()), d(c.rejected[i].Load()))
		}
		return nil
	})
}

// writeStages writes stages.csv.
func writeStages(path string, stats []stageStat) error {
	return writeCSV(path, []string{"stage", "down", "rpc_bytes", "seconds"}, func(w func(...string)) error {
		for _, s := range stats {
			w(d(s.stage), d(s.down), d(s.rpcBytes), strconv.FormatFloat(s.seconds, 'f', 3, 64))
		}
		return nil
	})
}

// writeRun writes run.json: versions, timings and the overload signs a reader should check.
func (b *bench) writeRun(path string, setupSecs, connSecs float64, maxLagUs int64) error {
	versions := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/libp2p/go-libp2p" || m.Path == "github.com/libp2p/go-libp2p-pubsub" {
				versions[m.Path] = m.Version
			}
		}
	}
	c := b.c
	c.mu.Lock()
	rejects := maps.Clone(c.rejects)
	c.mu.Unlock()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out := map[string]any{
		"go_libp2p":             versions["github.com/libp2p/go-libp2p"],
		"go_libp2p_pubsub":      versions["github.com/libp2p/go-libp2p-pubsub"],
		"go":                    runtime.Version(),
		"setup_seconds":         setupSecs,
		"setup_seconds_planned": b.in.p.SetupSeconds,
		"connect_seconds":       connSecs,
		"max_sample_lag_ms":     float64(maxLagUs) / 1000,
		"gomaxprocs":            runtime.GOMAXPROCS(0),
		"latency":               map[bool]string{false: "link", true: "write"}[b.writes],
		"total_seconds":         time.Since(b.start).Seconds(),
		"nodes":                 len(b.in.nodes),
		"connections":           len(b.in.conns),
		"dropped_rpcs":          c.drops.Load(),
		"late_batches":          b.late,
		"undeliverable":         c.undeliverable.Load(),
		"rejected":              rejects,
		"goroutines":            runtime.NumGoroutine(),
		"heap_sys_bytes":        ms.HeapSys,
	}
	raw, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}
