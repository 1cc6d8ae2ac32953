package main

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/proto"
)

// delivery is a node's first copy of a publication.
type delivery struct {
	pub, node, from int // publication and node indices; from is -1 if the sender is unknown
	at              time.Time
}

// counts is what every node's tracer adds to. Per-publication counters are indexed by the
// publication's position in the input; the tracers run on many goroutines, hence atomics.
type counts struct {
	pubIndex map[[2]int64]int // (pub_id, stage) -> index, read-only once the run starts
	peerNode map[peer.ID]int

	copies, dups, ihave, iwant, idontwant, rejected []atomic.Int64

	grafts, prunes, rpcBytes  atomic.Int64
	drops, undeliverable      atomic.Int64
	outStreams, closedStreams atomic.Int64

	mids sync.Map // message id (string) -> publication index

	mu         sync.Mutex
	deliveries []delivery
	rejects    map[string]int64
}

// newCounts sizes the per-publication counters.
func newCounts(in *input, peerNode map[peer.ID]int) *counts {
	c := &counts{pubIndex: map[[2]int64]int{}, peerNode: peerNode, rejects: map[string]int64{}}
	for i, p := range in.pubs {
		c.pubIndex[[2]int64{p.id, int64(p.stage)}] = i
	}
	n := len(in.pubs)
	c.copies = make([]atomic.Int64, n)
	c.dups = make([]atomic.Int64, n)
	c.ihave = make([]atomic.Int64, n)
	c.iwant = make([]atomic.Int64, n)
	c.idontwant = make([]atomic.Int64, n)
	c.rejected = make([]atomic.Int64, n)
	return c
}

// pubOf tells which publication a message is from the pub_id and stage in its first 16 bytes
// (-1: none of ours).
func (c *counts) pubOf(m *pb.Message) int {
	d := m.GetData()
	if len(d) < 16 {
		return -1
	}
	i, ok := c.pubIndex[[2]int64{int64(binary.BigEndian.Uint64(d)), int64(binary.BigEndian.Uint64(d[8:]))}]
	if !ok {
		return -1
	}
	return i
}

// addIDs counts the message ids of an IHAVE/IWANT/IDONTWANT list against their publications.
func (c *counts) addIDs(ids []string, to []atomic.Int64) {
	for _, id := range ids {
		if v, ok := c.mids.Load(id); ok {
			to[v.(int)].Add(1)
		}
	}
}

// tracer is one node's pubsub.RawTracer: it mirrors the node's meshes (the router's own map
// is private) and adds the node's sends, duplicates and deliveries to the shared counts.
type tracer struct {
	c    *counts
	node int

	mu   sync.Mutex
	mesh map[string]map[peer.ID]struct{} // topic name -> mesh peers
}

var _ pubsub.RawTracer = (*tracer)(nil)

// newTracer starts a node's tracer with no meshes.
func newTracer(c *counts, node int) *tracer {
	return &tracer{c: c, node: node, mesh: map[string]map[peer.ID]struct{}{}}
}

// meshSize is the size of the node's mesh of a topic, read under the tracer's lock.
func (t *tracer) meshSize(topic string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mesh[topic])
}

// meshPeers copies the node's mesh of a topic.
func (t *tracer) meshPeers(topic string) []peer.ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]peer.ID, 0, len(t.mesh[topic]))
	for p := range t.mesh[topic] {
		out = append(out, p)
	}
	return out
}

// Join: the router starts an (empty, with no peers known) mesh for the topic.
func (t *tracer) Join(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mesh[topic] == nil {
		t.mesh[topic] = map[peer.ID]struct{}{}
	}
}

// Leave: the router drops the topic's mesh.
func (t *tracer) Leave(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.mesh, topic)
}

// Graft: p joined our mesh of the topic.
func (t *tracer) Graft(p peer.ID, topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.mesh[topic]
	if m == nil {
		m = map[peer.ID]struct{}{}
		t.mesh[topic] = m
	}
	m[p] = struct{}{}
}

// Prune: p left our mesh of the topic.
func (t *tracer) Prune(p peer.ID, topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.mesh[topic], p)
}

// OnNewOutboundStream counts pubsub streams opened, which tells setup how far peering got.
func (t *tracer) OnNewOutboundStream(peer.ID, protocol.ID) { t.c.outStreams.Add(1) }

// OnClosedOutboundStream: p is gone (v0.19's name for the old RemovePeer); the router drops it
// from every mesh without a Prune event, so do we.
func (t *tracer) OnClosedOutboundStream(p peer.ID) {
	t.c.closedStreams.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.mesh {
		delete(m, p)
	}
}

// DeliverMessage: the node's first copy passed validation (never called for its own publications).
func (t *tracer) DeliverMessage(msg *pubsub.Message) {
	at := time.Now()
	i := t.c.pubOf(msg.Message)
	if i < 0 {
		return
	}
	from, ok := t.c.peerNode[msg.ReceivedFrom]
	if !ok {
		from = -1
	}
	t.c.mu.Lock()
	t.c.deliveries = append(t.c.deliveries, delivery{i, t.node, from, at})
	t.c.mu.Unlock()
}

// DuplicateMessage: a copy after the first (before or after validation of the first).
func (t *tracer) DuplicateMessage(msg *pubsub.Message) {
	if i := t.c.pubOf(msg.Message); i >= 0 {
		t.c.dups[i].Add(1)
	}
}

// SendRPC: an RPC entered a peer's queue; count its bytes, copies, gossip ids and GRAFT/PRUNE entries.
func (t *tracer) SendRPC(rpc *pubsub.RPC, _ peer.ID) {
	c := t.c
	c.rpcBytes.Add(int64(proto.Size(&rpc.RPC)))
	for _, m := range rpc.GetPublish() {
		i := c.pubOf(m)
		if i < 0 {
			continue
		}
		c.copies[i].Add(1)
		id := pubsub.DefaultMsgIdFn(m)
		if _, ok := c.mids.Load(id); !ok {
			c.mids.Store(id, i)
		}
	}
	ctl := rpc.GetControl()
	if ctl == nil {
		return
	}
	c.grafts.Add(int64(len(ctl.GetGraft())))
	c.prunes.Add(int64(len(ctl.GetPrune())))
	for _, ih := range ctl.GetIhave() {
		c.addIDs(ih.GetMessageIDs(), c.ihave)
	}
	for _, iw := range ctl.GetIwant() {
		c.addIDs(iw.GetMessageIDs(), c.iwant)
	}
	for _, dw := range ctl.GetIdontwant() {
		c.addIDs(dw.GetMessageIDs(), c.idontwant)
	}
}

// DropRPC: an RPC did not fit a peer's outbound queue (a sign of overload).
func (t *tracer) DropRPC(*pubsub.RPC, peer.ID) { t.c.drops.Add(1) }

// UndeliverableMessage: our draining goroutine fell behind (does not affect forwarding).
func (t *tracer) UndeliverableMessage(*pubsub.Message) { t.c.undeliverable.Add(1) }

// RejectMessage counts rejections by reason and publication: a copy dropped because the
// validation queue was full is a lost copy.
func (t *tracer) RejectMessage(msg *pubsub.Message, reason string) {
	if i := t.c.pubOf(msg.Message); i >= 0 {
		t.c.rejected[i].Add(1)
	}
	t.c.mu.Lock()
	t.c.rejects[reason]++
	t.c.mu.Unlock()
}

// The remaining events carry nothing the benchmark reports.
func (t *tracer) ValidateMessage(*pubsub.Message)                      {}
func (t *tracer) ThrottlePeer(peer.ID)                                 {}
func (t *tracer) RecvRPC(*pubsub.RPC)                                  {}
func (t *tracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
