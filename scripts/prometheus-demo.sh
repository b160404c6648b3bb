#!/usr/bin/env bash
# Runs a three-node hutch ensemble with --metrics-listen, scrapes it with a
# real Prometheus (Debian's `prometheus` package), makes some writes with
# kazoo and prints the answers of a few PromQL queries. Everything listens
# on free loopback ports and is stopped, by PID, on exit.
#
#   apt-get install -y prometheus python3-kazoo
#   scripts/prometheus-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

command -v prometheus >/dev/null || { echo "prometheus is not installed (apt-get install prometheus)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

go build -o "$work/hutch" ./cmd/hutch
head -c 32 /dev/urandom | base64 >"$work/secret"
declare -A client raft metrics
peers=""
for id in 1 2 3; do
	client[$id]=$(freeport) raft[$id]=$(freeport) metrics[$id]=$(freeport)
	peers+="${peers:+,}$id=127.0.0.1:${raft[$id]}"
done
targets=""
for id in 1 2 3; do
	"$work/hutch" --id "$id" --peers "$peers" --listen "127.0.0.1:${client[$id]}" \
		--data-dir "$work/data-$id" --peer-secret-file "$work/secret" \
		--metrics-listen "127.0.0.1:${metrics[$id]}" >"$work/hutch-$id.log" 2>&1 &
	pids+=($!)
	targets+="${targets:+, }'127.0.0.1:${metrics[$id]}'"
done

prom=$(freeport)
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: hutch
    static_configs:
      - targets: [$targets]
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
	--web.listen-address="127.0.0.1:$prom" >"$work/prometheus.log" 2>&1 &
pids+=($!)

# Scalar result of a PromQL query, 0 when empty or not yet answering.
scalar() {
	curl -s --get "http://127.0.0.1:$prom/api/v1/query" --data-urlencode "query=$1" 2>/dev/null |
		python3 -c 'import json,sys
try: r=json.load(sys.stdin)["data"]["result"]
except Exception: r=[]
print(r[0]["value"][1] if r else 0)'
}
# Prometheus must have scraped every node once before the writes, so that
# rate() sees them.
for _ in $(seq 150); do
	[ "$(scalar 'count(up == 1)')" = 3 ] && break
	sleep 0.2
done

servers=$(for id in 1 2 3; do printf '127.0.0.1:%s,' "${client[$id]}"; done)
/usr/bin/python3 - "${servers%,}" <<'EOF'
import sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=15)
zk.start(timeout=30)
for i in range(200):
    zk.create("/demo-%d" % i, b"x" * 100)
for i in range(500):
    zk.get("/demo-%d" % (i % 200))
zk.stop()
EOF

query() {
	curl -s --get "http://127.0.0.1:$prom/api/v1/query" --data-urlencode "query=$1" |
		python3 -c 'import json,sys
r = json.load(sys.stdin)["data"]["result"]
for s in sorted(r, key=lambda s: s["metric"].get("instance", "")):
    m = s["metric"]
    labels = ",".join("%s=%s" % (k, v) for k, v in sorted(m.items()) if k not in ("job",))
    print("  {%s} %s" % (labels, s["value"][1]))'
}
# Wait until Prometheus has scraped all three after the writes.
for _ in $(seq 100); do
	[ "$(scalar 'count(znode_count >= 200)')" = 3 ] && break
	sleep 0.2
done
sleep 2 # two more scrapes, so rate() has points after the load
for q in 'up' 'hutch_raft_is_leader' 'hutch_raft_term' 'znode_count' 'hutch_raft_fsm_applied_index' \
	'hutch_forwarded_writes_total' 'sum by (instance) (hutch_request_duration_seconds_count)' \
	'readlatency{quantile="0.99"}' \
	'histogram_quantile(0.99, sum by (le) (rate(hutch_request_duration_seconds_bucket{kind="write"}[1m])))'; do
	echo "> $q"
	query "$q"
done
# promtool's lint objects to ZooKeeper's own names (znode_count is a
# gauge, not a _count of a summary), which hutch keeps on purpose.
echo "> promtool check metrics (node 1)"
curl -s "http://127.0.0.1:${metrics[1]}/metrics" | promtool check metrics 2>&1 | sed 's/^/  /' || true
