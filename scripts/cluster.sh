#!/usr/bin/env bash
# A local Vigil cluster in one command: a throwaway redis-server and three replicas of
# the built server sharing one SQLite file (WAL) in ./data/cluster. Ctrl-C stops it all.
#
#   scripts/cluster.sh                 # build, then redis on :6390 (or the next free port), replicas on :3001-3003
#   REPLICAS=5 BASE_PORT=4001 scripts/cluster.sh
#   SKIP_BUILD=1 JWT_SECRET=... scripts/cluster.sh
#
# Settings (environment): REPLICAS (3), BASE_PORT (3001), REDIS_PORT (6390), HOST
# (127.0.0.1), DATA_DIR (./data/cluster), JWT_SECRET (generated and printed), CONTACT_ID_KEY (kept in DATA_DIR),
# SKIP_BUILD (unset). Every other variable (TIMER_MIN_SECONDS, LOG_LEVEL, LOCK_TTL_MS,
# TWILIO_*, …) is passed to the replicas as it is. See docs/cluster.md.
set -euo pipefail
# job control: each child gets its own process group, so a terminal Ctrl-C reaches only
# this script, whose trap then stops the replicas gracefully (SIGTERM) and Redis
set -m
cd "$(dirname "$0")/.."

REPLICAS=${REPLICAS:-3}
BASE_PORT=${BASE_PORT:-3001}
REDIS_PORT=${REDIS_PORT:-6390}
export HOST=${HOST:-127.0.0.1}
export DATA_DIR=${DATA_DIR:-./data/cluster}

say() { printf '\033[1m[cluster]\033[0m %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

command -v redis-server >/dev/null || die "redis-server not found (Debian/Ubuntu: apt-get install redis-server)"
command -v node >/dev/null || die "node not found (Node 20.19+ is needed)"

# the first free port from REDIS_PORT on (another Redis may already use 6390)
port=$REDIS_PORT
while listening "$port"; do
  port=$((port + 1))
  [ "$port" -lt $((REDIS_PORT + 20)) ] || die "no free port for redis-server in $REDIS_PORT-$((REDIS_PORT + 19))"
done
REDIS_PORT=$port
for i in $(seq 1 "$REPLICAS"); do
  p=$((BASE_PORT + i - 1))
  if listening "$p"; then die "port $p is in use: stop what listens there or set BASE_PORT"; fi
done

if [ -z "${JWT_SECRET:-}" ]; then
  JWT_SECRET=$(node -e "process.stdout.write(require('node:crypto').randomBytes(32).toString('hex'))")
fi
export JWT_SECRET
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
mkdir -p "$DATA_DIR"
# the contact id key stays with the data it keyed (a new one would refuse the existing ids)
if [ -z "${CONTACT_ID_KEY:-}" ]; then
  [ -s "$DATA_DIR/contact-id-key" ] || (umask 077 && node -e "process.stdout.write(require('node:crypto').randomBytes(32).toString('hex'))" >"$DATA_DIR/contact-id-key")
  CONTACT_ID_KEY=$(cat "$DATA_DIR/contact-id-key")
fi
export CONTACT_ID_KEY

if [ -z "${SKIP_BUILD:-}" ]; then
  say "building (npm run build)…"
  npm run build --silent
fi
[ -f dist/main.js ] || die "dist/main.js is missing: run npm run build"

pids=()
redis_pid=""
stopping=""
stop_all() {
  [ -n "$stopping" ] && return
  stopping=1
  trap - INT TERM
  say "stopping replicas…"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    alive=""
    for pid in "${pids[@]}"; do if kill -0 "$pid" 2>/dev/null; then alive=1; fi; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  if [ -n "$redis_pid" ]; then
    say "stopping redis-server…"
    kill -TERM "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  say "stopped; data kept in $DATA_DIR"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

say "redis-server on :$REDIS_PORT (nothing persisted; log: $DATA_DIR/redis.log)"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
  --dir "$DATA_DIR" --logfile "$(cd "$DATA_DIR" && pwd)/redis.log" &
redis_pid=$!
for _ in $(seq 1 100); do listening "$REDIS_PORT" && break; sleep 0.1; done
listening "$REDIS_PORT" || die "redis-server did not start (see $DATA_DIR/redis.log)"

# replicas: JSON log lines on stdout, prefixed with the replica id
start_replica() {
  local i=$1 port=$((BASE_PORT + $1 - 1))
  PORT=$port REPLICA_ID=${REPLICA_PREFIX:-r}$i node dist/main.js > >(sed -u "s/^/[r$i] /") 2>&1 &
  pids+=("$!")
}
start_replica 1 # alone first: it creates the SQLite file and runs the migrations
for _ in $(seq 1 200); do curl -fsS "http://127.0.0.1:$BASE_PORT/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
for i in $(seq 2 "$REPLICAS"); do start_replica "$i"; done
for i in $(seq 1 "$REPLICAS"); do
  url="http://127.0.0.1:$((BASE_PORT + i - 1))"
  for _ in $(seq 1 200); do curl -fsS "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fsS "$url/readyz" >/dev/null 2>&1 || die "replica r$i is not ready at $url"
done

say "Vigil cluster is up: $REPLICAS replicas sharing $DATA_DIR/vigil.db, Redis $REDIS_URL"
cat >&2 <<EOF
  replicas    $(for i in $(seq 1 "$REPLICAS"); do printf 'r%s http://127.0.0.1:%s  ' "$i" $((BASE_PORT + i - 1)); done)
  JWT_SECRET  $JWT_SECRET
  tokens      JWT_SECRET=$JWT_SECRET npm run -s token -- --user alice --name Alice
              JWT_SECRET=$JWT_SECRET npm run -s token -- --user mod --admin
  console     http://127.0.0.1:$BASE_PORT/console   (any replica; paste the moderator token)
  metrics     http://127.0.0.1:$BASE_PORT/metrics   (vigil_lock_holder, vigil_lock_acquisitions_total, …)
  Ctrl-C stops everything.

EOF

# Wait until Ctrl-C (or until every replica has exited).
while :; do
  alive=""
  for pid in "${pids[@]}"; do if kill -0 "$pid" 2>/dev/null; then alive=1; fi; done
  [ -n "$alive" ] || { say "every replica has exited"; exit 1; }
  sleep 1
done
