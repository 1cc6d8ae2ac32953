package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// params is params.json: the gossipsub parameters and the run's schedule.
type params struct {
	D              int     `json:"d"`
	Dlo            int     `json:"d_low"`
	Dhi            int     `json:"d_high"`
	Dscore         int     `json:"d_score"`
	Dout           int     `json:"d_out"`
	Dlazy          int     `json:"d_lazy"`
	GossipFactor   float64 `json:"gossip_factor"`
	HeartbeatMs    int64   `json:"heartbeat_ms"`
	PruneBackoffMs int64   `json:"prune_backoff_ms"`
	HistoryLength  int     `json:"history_length"`
	HistoryGossip  int     `json:"history_gossip"`
	FloodPublish   bool    `json:"flood_publish"`
	MessageBytes   int     `json:"message_bytes"`
	Warmup         int     `json:"warmup_heartbeats"`
	PerHeartbeat   int     `json:"publish_per_heartbeat"`
	SetupSeconds   float64 `json:"setup_seconds"`
	Seed           int64   `json:"seed"`
}

// node is one row of nodes.csv.
type node struct {
	id      int64
	x, y    float64 // position, ms
	phaseUs int64   // heartbeat phase within the interval
}

// publication is one row of publications.csv, its publisher as a node index.
type publication struct {
	id        int64
	stage     int
	topic     int64
	publisher int
}

// input is everything the driver wrote, validated; nodes are referred to by index.
type input struct {
	p         params
	nodes     []node
	index     map[int64]int        // node id -> index
	topics    [][]int64            // per node, its topics in file order
	members   map[int64][]int      // topic -> subscribed nodes
	subscribe []map[int64]bool     // per node, topic -> subscribed
	conns     [][2]int             // (dialer, listener)
	neighbors []map[int]bool       // per node, its connected peers
	pubs      []publication        // file order
	stages    []int                // distinct stages, ascending
	down      map[int]map[int]bool // stage -> nodes down in it
}

// readInput reads and validates the input directory, so that a bad file fails before any
// host exists.
func readInput(dir string) (*input, error) {
	in := &input{index: map[int64]int{}, members: map[int64][]int{}, down: map[int]map[int]bool{}}
	steps := []struct {
		name string
		read func(string) error
	}{
		{"params.json", in.readParams},
		{"nodes.csv", in.readNodes},
		{"subscriptions.csv", in.readSubscriptions},
		{"connections.csv", in.readConnections},
		{"publications.csv", in.readPublications},
		{"down.csv", in.readDown},
	}
	for _, s := range steps {
		if err := s.read(filepath.Join(dir, s.name)); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return in, nil
}

// readParams decodes params.json strictly: every field present, no unknown one, values usable.
func (in *input) readParams(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in.p); err != nil {
		return err
	}
	for _, k := range []string{"d", "d_low", "d_high", "d_score", "d_out", "d_lazy", "gossip_factor",
		"heartbeat_ms", "prune_backoff_ms", "history_length", "history_gossip", "flood_publish",
		"message_bytes", "warmup_heartbeats", "publish_per_heartbeat", "setup_seconds", "seed"} {
		if _, ok := keys[k]; !ok {
			return fmt.Errorf("missing %q", k)
		}
	}
	p := in.p
	switch {
	case p.HeartbeatMs <= 0:
		return errors.New("heartbeat_ms must be positive")
	case p.PruneBackoffMs < 0:
		return errors.New("prune_backoff_ms must not be negative")
	case p.MessageBytes < 16:
		return errors.New("message_bytes must be at least 16 (the pub_id and the stage)")
	case p.Warmup < 1:
		return errors.New("warmup_heartbeats must be at least 1")
	case p.PerHeartbeat < 1:
		return errors.New("publish_per_heartbeat must be at least 1")
	case p.SetupSeconds <= 0:
		return errors.New("setup_seconds must be positive")
	}
	return nil
}

// readCSV reads a CSV file whose header must be exactly want, calling row for each record
// with its line number for error messages.
func readCSV(path string, want []string, row func(line int, rec []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = len(want)
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if !slices.Equal(head, want) {
		return fmt.Errorf("header is %v, want %v", head, want)
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		line, _ := r.FieldPos(0)
		if err := row(line, rec); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
}

// ints parses decimal int64 fields.
func ints(rec []string) ([]int64, error) {
	out := make([]int64, len(rec))
	for i, s := range rec {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// nodeOf maps a node id to its index, with an error naming an unknown id.
func (in *input) nodeOf(id int64) (int, error) {
	i, ok := in.index[id]
	if !ok {
		return 0, fmt.Errorf("unknown node id %d", id)
	}
	return i, nil
}

// readNodes reads nodes.csv: unique ids, phases within the heartbeat interval.
func (in *input) readNodes(path string) error {
	hbUs := in.p.HeartbeatMs * 1000
	err := readCSV(path, []string{"node_id", "x_ms", "y_ms", "phase_us"}, func(_ int, rec []string) error {
		id, err := strconv.ParseInt(rec[0], 10, 64)
		if err != nil {
			return err
		}
		x, err := strconv.ParseFloat(rec[1], 64)
		if err != nil {
			return err
		}
		y, err := strconv.ParseFloat(rec[2], 64)
		if err != nil {
			return err
		}
		phase, err := strconv.ParseInt(rec[3], 10, 64)
		if err != nil {
			return err
		}
		if _, dup := in.index[id]; dup {
			return fmt.Errorf("duplicate node id %d", id)
		}
		if phase < 0 || phase >= hbUs {
			return fmt.Errorf("phase_us %d outside [0, %d)", phase, hbUs)
		}
		in.index[id] = len(in.nodes)
		in.nodes = append(in.nodes, node{id, x, y, phase})
		return nil
	})
	if err == nil && len(in.nodes) == 0 {
		err = errors.New("no nodes")
	}
	n := len(in.nodes)
	in.topics = make([][]int64, n)
	in.subscribe = make([]map[int64]bool, n)
	in.neighbors = make([]map[int]bool, n)
	for i := range n {
		in.subscribe[i] = map[int64]bool{}
		in.neighbors[i] = map[int]bool{}
	}
	return err
}

// readSubscriptions reads subscriptions.csv: known nodes, no repeated (node, topic).
func (in *input) readSubscriptions(path string) error {
	return readCSV(path, []string{"node_id", "topic_id"}, func(_ int, rec []string) error {
		v, err := ints(rec)
		if err != nil {
			return err
		}
		i, err := in.nodeOf(v[0])
		if err != nil {
			return err
		}
		t := v[1]
		if in.subscribe[i][t] {
			return fmt.Errorf("node %d subscribes to topic %d twice", v[0], t)
		}
		in.subscribe[i][t] = true
		in.topics[i] = append(in.topics[i], t)
		in.members[t] = append(in.members[t], i)
		return nil
	})
}

// readConnections reads connections.csv: known nodes, no self pair, each pair once.
func (in *input) readConnections(path string) error {
	return readCSV(path, []string{"dialer", "listener"}, func(_ int, rec []string) error {
		v, err := ints(rec)
		if err != nil {
			return err
		}
		a, err := in.nodeOf(v[0])
		if err != nil {
			return err
		}
		b, err := in.nodeOf(v[1])
		if err != nil {
			return err
		}
		if a == b {
			return fmt.Errorf("node %d connects to itself", v[0])
		}
		if in.neighbors[a][b] {
			return fmt.Errorf("pair (%d, %d) appears twice", v[0], v[1])
		}
		in.neighbors[a][b], in.neighbors[b][a] = true, true
		in.conns = append(in.conns, [2]int{a, b})
		return nil
	})
}

// readPublications reads publications.csv: a pub_id at most once per stage, stages >= 0,
// publishers subscribed.
func (in *input) readPublications(path string) error {
	seen := map[[2]int64]bool{}
	err := readCSV(path, []string{"pub_id", "stage", "topic_id", "publisher"}, func(_ int, rec []string) error {
		v, err := ints(rec)
		if err != nil {
			return err
		}
		if seen[[2]int64{v[0], v[1]}] {
			return fmt.Errorf("pub_id %d twice in stage %d", v[0], v[1])
		}
		seen[[2]int64{v[0], v[1]}] = true
		if v[1] < 0 || v[1] > 1<<30 {
			return fmt.Errorf("stage %d out of range", v[1])
		}
		i, err := in.nodeOf(v[3])
		if err != nil {
			return err
		}
		if !in.subscribe[i][v[2]] {
			return fmt.Errorf("publisher %d does not subscribe to topic %d", v[3], v[2])
		}
		in.pubs = append(in.pubs, publication{v[0], int(v[1]), v[2], i})
		if !slices.Contains(in.stages, int(v[1])) {
			in.stages = append(in.stages, int(v[1]))
		}
		return nil
	})
	if err == nil && len(in.pubs) == 0 {
		err = errors.New("no publications")
	}
	slices.Sort(in.stages)
	return err
}

// readDown reads down.csv: known nodes in known stages, sets that only grow, no publisher
// down in the stage of its publication.
func (in *input) readDown(path string) error {
	err := readCSV(path, []string{"stage", "node_id"}, func(_ int, rec []string) error {
		v, err := ints(rec)
		if err != nil {
			return err
		}
		s := int(v[0])
		if !slices.Contains(in.stages, s) {
			return fmt.Errorf("stage %d has no publications", v[0])
		}
		i, err := in.nodeOf(v[1])
		if err != nil {
			return err
		}
		if in.down[s] == nil {
			in.down[s] = map[int]bool{}
		}
		if in.down[s][i] {
			return fmt.Errorf("node %d down twice in stage %d", v[1], s)
		}
		in.down[s][i] = true
		return nil
	})
	if err != nil {
		return err
	}
	for k := 1; k < len(in.stages); k++ {
		prev, cur := in.down[in.stages[k-1]], in.down[in.stages[k]]
		for i := range prev {
			if !cur[i] {
				return fmt.Errorf("node %d is down in stage %d but up again in stage %d (the sets must grow)",
					in.nodes[i].id, in.stages[k-1], in.stages[k])
			}
		}
	}
	for _, p := range in.pubs {
		if in.down[p.stage][p.publisher] {
			return fmt.Errorf("publisher %d of pub_id %d is down in its stage %d", in.nodes[p.publisher].id, p.id, p.stage)
		}
	}
	return nil
}
