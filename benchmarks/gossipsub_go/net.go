package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	ic "github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"
)

// bench is the running network: one mocknet host, gossipsub router and tracer per node.
type bench struct {
	in      *input
	verbose bool
	writes  bool      // -latency write: delay each stream write (delayedStream), links at 0
	start   time.Time // program start, for progress lines
	t0      time.Time // heartbeat 1 of a phase-0 node
	hb      time.Duration

	mn     mocknet.Mocknet
	hosts  []host.Host
	peers  []peer.ID
	cancel []context.CancelFunc
	ctxs   []context.Context
	ps     []*pubsub.PubSub
	topics []map[int64]*pubsub.Topic
	tr     []*tracer
	c      *counts
	isDown []bool
	late   int // batches moved to a later boundary
}

// topicName is the pubsub topic string of a topic id.
func topicName(t int64) string { return strconv.FormatInt(t, 10) }

// latency is the link latency of two nodes, round(1000*hypot) microseconds (the lab's model).
func (b *bench) latency(i, j int) time.Duration {
	a, c := b.in.nodes[i], b.in.nodes[j]
	return time.Duration(math.Round(1000*math.Hypot(a.x-c.x, a.y-c.y))) * time.Microsecond
}

// addHosts puts one host per node on a fresh mocknet. Keys are Ed25519 (go-libp2p's default
// identity) drawn from the seed, so peer ids, and message sizes, repeat from run to run.
func (b *bench) addHosts() error {
	b.mn = mocknet.New()
	n := len(b.in.nodes)
	var seed [32]byte
	binary.BigEndian.PutUint64(seed[:], uint64(b.in.p.Seed))
	keys := rand.NewChaCha8(seed)
	b.peerSlices(n)
	peerNode := make(map[peer.ID]int, n)
	for i := range n {
		sk, _, err := ic.GenerateEd25519Key(keys)
		if err != nil {
			return err
		}
		addr, err := ma.NewMultiaddr(fmt.Sprintf("/ip4/10.%d.%d.%d/tcp/4242", i>>16&255, i>>8&255, i&255))
		if err != nil {
			return err
		}
		h, err := b.mn.AddPeer(sk, addr)
		if err != nil {
			return fmt.Errorf("host of node %d: %w", b.in.nodes[i].id, err)
		}
		b.hosts[i], b.peers[i] = h, h.ID()
		peerNode[h.ID()] = i
	}
	b.c = newCounts(b.in, peerNode)
	return nil
}

// peerSlices sizes the per-node slices.
func (b *bench) peerSlices(n int) {
	b.hosts = make([]host.Host, n)
	b.peers = make([]peer.ID, n)
	b.cancel = make([]context.CancelFunc, n)
	b.ctxs = make([]context.Context, n)
	b.ps = make([]*pubsub.PubSub, n)
	b.topics = make([]map[int64]*pubsub.Topic, n)
	b.tr = make([]*tracer, n)
	b.isDown = make([]bool, n)
}

// gossipParams are go-libp2p's defaults with the lab's parameters, and a first heartbeat
// after delay (so that heartbeat h of the node falls at T0 + phase + (h-1)*heartbeat).
func (b *bench) gossipParams(delay time.Duration) pubsub.GossipSubParams {
	p := b.in.p
	cfg := pubsub.DefaultGossipSubParams()
	cfg.D, cfg.Dlo, cfg.Dhi, cfg.Dscore, cfg.Dout, cfg.Dlazy = p.D, p.Dlo, p.Dhi, p.Dscore, p.Dout, p.Dlazy
	cfg.GossipFactor = p.GossipFactor
	cfg.HeartbeatInterval = b.hb
	cfg.PruneBackoff = time.Duration(p.PruneBackoffMs) * time.Millisecond
	cfg.HistoryLength, cfg.HistoryGossip = p.HistoryLength, p.HistoryGossip
	cfg.HeartbeatInitialDelay = delay
	return cfg
}

// startRouters creates every node's gossipsub router and subscribes it to its topics while it
// has no connection: Join then finds no peer and grafts nobody, and the hello packet each new
// peer gets later carries the node's subscriptions.
func (b *bench) startRouters() error {
	for i, nd := range b.in.nodes {
		delay := time.Until(b.t0.Add(time.Duration(nd.phaseUs) * time.Microsecond))
		if delay <= 0 {
			return fmt.Errorf("setup overran T0 while starting routers (node %d); raise setup_seconds", nd.id)
		}
		b.ctxs[i], b.cancel[i] = context.WithCancel(context.Background())
		b.tr[i] = newTracer(b.c, i)
		var h host.Host = b.hosts[i]
		if b.writes {
			h = &delayedHost{h, func(p peer.ID) time.Duration { return b.latency(i, b.c.peerNode[p]) }}
		}
		ps, err := pubsub.NewGossipSub(b.ctxs[i], h,
			pubsub.WithGossipSubParams(b.gossipParams(delay)),
			pubsub.WithFloodPublish(b.in.p.FloodPublish),
			pubsub.WithRawTracer(b.tr[i]))
		if err != nil {
			return fmt.Errorf("gossipsub of node %d: %w", nd.id, err)
		}
		b.ps[i] = ps
		b.topics[i] = map[int64]*pubsub.Topic{}
		for _, t := range b.in.topics[i] {
			top, err := ps.Join(topicName(t))
			if err != nil {
				return fmt.Errorf("node %d joins topic %d: %w", nd.id, t, err)
			}
			sub, err := top.Subscribe()
			if err != nil {
				return fmt.Errorf("node %d subscribes to topic %d: %w", nd.id, t, err)
			}
			b.topics[i][t] = top
			go drain(b.ctxs[i], sub)
		}
	}
	return nil
}

// drain reads a subscription so that its buffer never fills.
func drain(ctx context.Context, sub *pubsub.Subscription) {
	for {
		if _, err := sub.Next(ctx); err != nil {
			return
		}
	}
}

// connect links and dials every pair of connections.csv, the dialer dialing, each link with the
// pair's latency. Dials are cheap; the identify and pubsub streams they start are not, so at
// most `window` connections may wait for their two pubsub streams at any time.
func (b *bench) connect() error {
	const window, chunk = 4000, 1000
	total := len(b.in.conns)
	for k, pr := range b.in.conns {
		a, c := b.peers[pr[0]], b.peers[pr[1]]
		l, err := b.mn.LinkPeers(a, c)
		if err != nil {
			return err
		}
		if !b.writes {
			l.SetOptions(mocknet.LinkOptions{Latency: b.latency(pr[0], pr[1])})
		}
		if _, err := b.mn.ConnectPeers(a, c); err != nil {
			return fmt.Errorf("dial %d -> %d: %w", b.in.nodes[pr[0]].id, b.in.nodes[pr[1]].id, err)
		}
		if done := k + 1; done%chunk == 0 || done == total {
			if err := b.awaitStreams(2*int64(done-window), false); err != nil {
				return err
			}
			b.debugf("dialed %d/%d connections, %d pubsub streams open", done, total, b.c.outStreams.Load())
		}
	}
	return b.awaitStreams(2*int64(total), true)
}

// awaitStreams waits until at least want pubsub streams have opened; it fails if none opens
// for a minute.
func (b *bench) awaitStreams(want int64, report bool) error {
	last, since := b.c.outStreams.Load(), time.Now()
	for {
		got := b.c.outStreams.Load()
		if got >= want {
			return nil
		}
		if got != last {
			last, since = got, time.Now()
		}
		if time.Since(since) > time.Minute {
			return fmt.Errorf("peering stalled: %d of %d pubsub streams open after a minute without progress", got, want)
		}
		if report {
			b.debugf("waiting for pubsub streams: %d/%d", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// awaitSubscriptions waits until every node's pubsub lists, for each of its topics, exactly
// its connected peers that subscribe to the topic (their hello packets have arrived); it
// fails once T0 is reached.
func (b *bench) awaitSubscriptions(setupStart time.Time) error {
	type pair struct {
		node  int
		topic int64
		want  int
	}
	var pending []pair
	for v := range b.in.nodes {
		for _, t := range b.in.topics[v] {
			want := 0
			for j := range b.in.neighbors[v] {
				if b.in.subscribe[j][t] {
					want++
				}
			}
			pending = append(pending, pair{v, t, want})
		}
	}
	total := len(pending)
	for {
		rest := pending[:0]
		for _, q := range pending {
			if !b.knows(q.node, q.topic, q.want) {
				rest = append(rest, q)
			}
		}
		pending = rest
		if len(pending) == 0 {
			return nil
		}
		if !time.Now().Before(b.t0) {
			q := pending[0]
			return fmt.Errorf("setup took %.1f s and overran T0 with %d of %d (node, topic) peer lists incomplete "+
				"(e.g. node %d topic %d); raise setup_seconds",
				time.Since(setupStart).Seconds(), len(pending), total, b.in.nodes[q.node].id, q.topic)
		}
		b.debugf("waiting for subscriptions: %d of %d (node, topic) peer lists complete", total-len(pending), total)
		time.Sleep(500 * time.Millisecond)
	}
}

// knows tells whether node v's pubsub lists exactly the want connected subscribers of topic t.
func (b *bench) knows(v int, t int64, want int) bool {
	got := b.ps[v].ListPeers(topicName(t))
	if len(got) != want {
		return false
	}
	for _, p := range got {
		j, ok := b.c.peerNode[p]
		if !ok || !b.in.neighbors[v][j] || !b.in.subscribe[j][t] {
			return false
		}
	}
	return true
}

// setup is the planned setup duration.
func (b *bench) setup() time.Duration {
	return time.Duration(b.in.p.SetupSeconds * float64(time.Second))
}

// takeDown stops nodes: each one's pubsub context ends and every connection of its host
// closes, so each peer's pubsub sees its stream die and drops it from its meshes. Closing a
// connection waits for its streams to wind down, so nodes go down in parallel.
func (b *bench) takeDown(nodes []int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	sem := make(chan struct{}, 16)
	for k, v := range nodes {
		b.isDown[v] = true
		b.cancel[v]()
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, p := range b.hosts[v].Network().Peers() {
				if err := b.mn.DisconnectPeers(b.peers[v], p); err != nil {
					errs[k] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// delayedHost is a host whose new streams delay each write by the link's latency, for
// -latency write (see delayedStream); everything else is the mocknet host.
type delayedHost struct {
	host.Host
	latency func(peer.ID) time.Duration
}

// NewStream opens the stream on the mocknet host and wraps it.
func (h *delayedHost) NewStream(ctx context.Context, p peer.ID, pids ...protocol.ID) (network.Stream, error) {
	s, err := h.Host.NewStream(ctx, p, pids...)
	if err != nil {
		return nil, err
	}
	return newDelayedStream(s, h.latency(p)), nil
}

// timedWrite is a write waiting for its arrival time.
type timedWrite struct {
	data []byte
	due  time.Time
}

// delayedStream hands each Write to the underlying stream exactly d after the call, in order,
// without making the writer wait: a link of latency d and ample bandwidth. A mocknet link's own
// latency instead holds a stream's writer while a write of 256 bytes or more is in flight, so
// back-to-back messages on one stream arrive in pairs, one latency apart (see README.md).
type delayedStream struct {
	network.Stream
	d    time.Duration
	wake chan struct{}

	mu      sync.Mutex
	queue   []timedWrite
	err     error
	closing bool
}

// newDelayedStream wraps s and starts its delivery goroutine.
func newDelayedStream(s network.Stream, d time.Duration) *delayedStream {
	ds := &delayedStream{Stream: s, d: d, wake: make(chan struct{}, 1)}
	go ds.deliver()
	return ds
}

// Write queues a copy of p, due d from now.
func (s *delayedStream) Write(p []byte) (int, error) {
	w := timedWrite{bytes.Clone(p), time.Now().Add(s.d)}
	s.mu.Lock()
	err := s.err
	if err == nil && s.closing {
		err = network.ErrReset
	}
	if err == nil {
		s.queue = append(s.queue, w)
	}
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	s.poke()
	return len(p), nil
}

// poke wakes the delivery goroutine.
func (s *delayedStream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// deliver writes the queued writes through at their due times; after Close it closes the
// underlying stream once the queue is empty, and after an error or Reset it stops.
func (s *delayedStream) deliver() {
	for {
		s.mu.Lock()
		if s.err != nil {
			s.mu.Unlock()
			return
		}
		if len(s.queue) == 0 {
			closing := s.closing
			s.mu.Unlock()
			if closing {
				s.Stream.Close()
				return
			}
			<-s.wake
			continue
		}
		w := s.queue[0]
		s.queue[0] = timedWrite{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		time.Sleep(time.Until(w.due))
		if _, err := s.Stream.Write(w.data); err != nil {
			s.fail(err)
			return
		}
	}
}

// fail drops the queue and makes later writes return err.
func (s *delayedStream) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.queue = nil
	s.mu.Unlock()
	s.poke()
}

// Close stops reading now and closes the stream once the queued writes are through.
func (s *delayedStream) Close() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.poke()
	return s.Stream.CloseRead()
}

// Reset drops the queued writes and resets the stream.
func (s *delayedStream) Reset() error {
	s.fail(network.ErrReset)
	return s.Stream.Reset()
}

// ResetWithError drops the queued writes and resets the stream.
func (s *delayedStream) ResetWithError(code network.StreamErrorCode) error {
	s.fail(network.ErrReset)
	return s.Stream.ResetWithError(code)
}
