package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/tiny from its generator")

const tinyDir = "testdata/tiny"

// TestGenerateTiny rewrites testdata/tiny with -update: 30 nodes, 6 topics, 2-3 topics a node,
// random positions and phases, every pair sharing a topic connected (random dialer), 2 stages of
// 6 publications, 3 nodes down in stage 1.
func TestGenerateTiny(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite testdata/tiny")
	}
	r := rand.New(rand.NewPCG(7, 1))
	const n, topics = 30, 6
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = 1000 + int64(i)*37 // arbitrary, not dense
	}
	files := map[string][][]string{}
	add := func(f string, rec ...any) {
		row := make([]string, len(rec))
		for i, v := range rec {
			row[i] = fmt.Sprint(v)
		}
		files[f] = append(files[f], row)
	}
	add("nodes.csv", "node_id", "x_ms", "y_ms", "phase_us")
	add("subscriptions.csv", "node_id", "topic_id")
	add("connections.csv", "dialer", "listener")
	add("publications.csv", "pub_id", "stage", "topic_id", "publisher")
	add("down.csv", "stage", "node_id")
	subs := make([][]int64, n)
	members := map[int64][]int{}
	for i := range n {
		add("nodes.csv", ids[i], strconv.FormatFloat(r.Float64()*80, 'f', 3, 64),
			strconv.FormatFloat(r.Float64()*80, 'f', 3, 64), r.Int64N(1_000_000))
		for _, k := range r.Perm(topics)[:2+r.IntN(2)] {
			t := int64(500 + k)
			subs[i] = append(subs[i], t)
			members[t] = append(members[t], i)
			add("subscriptions.csv", ids[i], t)
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if slices.ContainsFunc(subs[i], func(t int64) bool { return slices.Contains(subs[j], t) }) {
				if r.IntN(2) == 0 {
					add("connections.csv", ids[i], ids[j])
				} else {
					add("connections.csv", ids[j], ids[i])
				}
			}
		}
	}
	down := r.Perm(n)[:3]
	for s := range 2 {
		for k := range 6 {
			t := int64(500 + k)
			var ok []int
			for _, v := range members[t] {
				if s == 0 || !slices.Contains(down, v) {
					ok = append(ok, v)
				}
			}
			add("publications.csv", 100*(s+1)+k, s, t, ids[ok[r.IntN(len(ok))]])
		}
	}
	for _, v := range down {
		add("down.csv", 1, ids[v])
	}
	if err := os.MkdirAll(tinyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, rows := range files {
		f, err := os.Create(filepath.Join(tinyDir, name))
		if err != nil {
			t.Fatal(err)
		}
		w := csv.NewWriter(f)
		w.WriteAll(rows)
		f.Close()
	}
	params := `{"d":6,"d_low":5,"d_high":12,"d_score":4,"d_out":2,"d_lazy":6,"gossip_factor":0.25,"heartbeat_ms":1000,` +
		`"prune_backoff_ms":60000,"history_length":5,"history_gossip":3,"flood_publish":true,"message_bytes":256,` +
		`"warmup_heartbeats":10,"publish_per_heartbeat":10,"setup_seconds":5,"seed":1}` + "\n"
	if err := os.WriteFile(filepath.Join(tinyDir, "params.json"), []byte(params), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadTiny checks that the tiny input reads as generated.
func TestReadTiny(t *testing.T) {
	in, err := readInput(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.nodes) != 30 || len(in.members) != 6 || len(in.pubs) != 12 || len(in.stages) != 2 || len(in.down[1]) != 3 {
		t.Fatalf("got %d nodes, %d topics, %d pubs, %d stages, %d down", len(in.nodes), len(in.members), len(in.pubs), len(in.stages), len(in.down[1]))
	}
}

// TestBadInput checks that broken inputs fail with a message naming the problem.
func TestBadInput(t *testing.T) {
	cases := []struct {
		file, edit, want string
	}{
		{"connections.csv", "append:1000,99999", "unknown node id 99999"},
		{"connections.csv", "dup", "appears twice"},
		{"subscriptions.csv", "dup", "twice"},
		{"publications.csv", "dup", "twice in stage 0"},
		{"publications.csv", "append:999,0,123456,1000", "does not subscribe"},
		{"nodes.csv", "append:77,1,1,1000000", "phase_us"},
		{"down.csv", "append:0,1037", "sets must grow"},
		{"down.csv", "append:0,1000", "is down in its stage 0"},
		{"params.json", "drop:seed", `missing "seed"`},
	}
	for _, c := range cases {
		dir := t.TempDir()
		for _, name := range []string{"params.json", "nodes.csv", "subscriptions.csv", "connections.csv", "publications.csv", "down.csv"} {
			raw, err := os.ReadFile(filepath.Join(tinyDir, name))
			if err != nil {
				t.Fatal(err)
			}
			s := string(raw)
			if name == c.file {
				switch {
				case strings.HasPrefix(c.edit, "append:"):
					s += strings.TrimPrefix(c.edit, "append:") + "\n"
				case c.edit == "dup":
					lines := strings.SplitAfter(s, "\n")
					s += lines[1]
				case strings.HasPrefix(c.edit, "drop:"):
					s = strings.Replace(s, `,"seed":1`, "", 1)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := readInput(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: got error %v, want one containing %q", c.file, c.edit, err, c.want)
		}
	}
}

// readRows reads a CSV output as header-keyed rows.
func readRows(t *testing.T, path string) []map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]int64
	for _, rec := range recs[1:] {
		row := map[string]int64{}
		for i, k := range recs[0] {
			row[k], _ = strconv.ParseInt(rec[i], 10, 64)
		}
		out = append(out, row)
	}
	return out
}

// TestTinyEndToEnd runs the tiny input (about 30 s, both latency models) and checks that the
// outputs agree: meshes within [d_low, d_high) after the warm-up and symmetric, every
// expected node reached, every copy sent counted at its receiver as first or duplicate.
func TestTinyEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about a minute")
	}
	for _, writes := range []bool{false, true} {
		out := t.TempDir()
		if err := run(tinyDir, out, false, writes); err != nil {
			t.Fatal(err)
		}
		beats := readRows(t, filepath.Join(out, "heartbeats.csv"))
		last := beats[len(beats)-1]
		if last["below_low"] != 0 || last["at_or_above_high"] != 0 || last["meshes"] != 74 {
			t.Errorf("writes=%v: last heartbeat %v", writes, last)
		}
		mesh := map[[3]int64]bool{}
		for _, r := range readRows(t, filepath.Join(out, "mesh.csv")) {
			mesh[[3]int64{r["topic_id"], r["node_id"], r["peer_id"]}] = true
		}
		for k := range mesh {
			if !mesh[[3]int64{k[0], k[2], k[1]}] {
				t.Errorf("writes=%v: mesh link %v one-sided", writes, k)
			}
		}
		if int64(len(mesh)) != last["mesh_links"] {
			t.Errorf("writes=%v: mesh.csv has %d rows, heartbeats.csv %d links", writes, len(mesh), last["mesh_links"])
		}
		for _, p := range readRows(t, filepath.Join(out, "publications_out.csv")) {
			if p["delivered"] != p["expected"] || p["copies"] != p["delivered"]+p["duplicates"] {
				t.Errorf("writes=%v: publication %v", writes, p)
			}
		}
	}
}
