#!/usr/bin/env bash
# Ingest every graph of ../shared/datasets whole and BFS-sampled to 1,000 and 10,000 nodes
# (where the graph is larger), with the direction its README states, then list the counts.
# Usage: benchmarks/ingest_shared_datasets.sh [DATASETS_DIR] [LAKEHOUSE]
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-../shared/datasets}"
lakehouse="${2:-lakehouse-datasets}"
cli() { /usr/bin/time -f "%e s" .venv/bin/python -m pipelines --lakehouse "$lakehouse" -q "$@"; }

ingest_graph() {  # name file nodes direction-flags...
  local name="$1" file="$2" nodes="$3"; shift 3
  cli ingest --instance "$name" --source social --path "$data/$file" "$@"
  cli ingest --instance "$name-1k" --source social --path "$data/$file" "$@" --sample-bfs 1000 --seed 1
  if [ "$nodes" -gt 10000 ]; then
    cli ingest --instance "$name-10k" --source social --path "$data/$file" "$@" --sample-bfs 10000 --seed 1
  fi
}

ingest_graph fb facebook_combined.txt.gz 4039                      # undirected friends
ingest_graph tw twitter_bofa_careers.edges.gz 13688 --directed --reverse  # 'src dst': dst follows src
ingest_graph slashdot soc-Slashdot0902.txt.gz 82168 --directed     # 'A B': A is a fan of B
ingest_graph douban soc-douban.mtx.gz 154908                        # undirected, MatrixMarket
.venv/bin/python -m pipelines --lakehouse "$lakehouse" -q instances
