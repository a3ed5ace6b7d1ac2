#!/usr/bin/env bash
# The test backend: a throwaway PostgreSQL cluster on 127.0.0.1 and the PostgREST-compatible
# server over it, twice: the project's own schema and the deployed variant (bytea secrets).
#
#   scripts/stack.sh start   install PostgreSQL if missing, init/start the cluster, apply the
#                            bootstrap and migrations, start both servers, write $STACK_DIR/stack.env
#   scripts/stack.sh stop    stop what start started, by pid
#   scripts/stack.sh env     print the environment file
#   scripts/stack.sh info    how to use the running stack
#
# With STACK_PUSH=1, start also runs an APNs imitation (apns-imitation) and the push worker
# against the project's database (docs/push-worker.md); their logs are in $STACK_DIR.
#
# Settings (environment): STACK_DIR (default /tmp/session-sync-stack), STACK_PG_PORT (25329),
# STACK_API_PORT (25321, the project's schema), STACK_DEPLOYED_API_PORT (25322). The defaults sit
# below the kernel's ephemeral range (32768-60999), where outgoing connections never take them.
# The databases are rebuilt whenever supabase/ changes (its digest is kept in $STACK_DIR).
set -euo pipefail
# The server and the fuzz targets are part of the test rig (Package.swift).
export SESSION_SYNC_RIG=1

root=$(cd "$(dirname "$0")/.." && pwd)
STACK_DIR=${STACK_DIR:-/tmp/session-sync-stack}
PG_PORT=${STACK_PG_PORT:-25329}
API_PORT=${STACK_API_PORT:-25321}
DEPLOYED_API_PORT=${STACK_DEPLOYED_API_PORT:-25322}
SERVER=${STACK_SERVER:-$root/.build/debug/postgrest-server}
PGDATA="$STACK_DIR/pgdata"

log() { echo "stack: $*" >&2; }

as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && { echo "$dir"; return; }
  return 1
}

install_postgres() {
  pg_bin >/dev/null && return
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    log "installing PostgreSQL"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends postgresql postgresql-contrib >/dev/null 2>&1 || {
      apt-get update >/dev/null
      apt-get install -y --no-install-recommends postgresql postgresql-contrib >/dev/null
    }
  else
    log "PostgreSQL is missing: install it with: sudo apt-get install postgresql postgresql-contrib"
    exit 1
  fi
}

psql_as() {  # database, then psql arguments
  local db=$1; shift
  PGOPTIONS="-c client_min_messages=warning" "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "$db" "$@"
}

wait_for_http() {
  local url=$1 pid=$2
  for _ in $(seq 1 200); do
    if ! kill -0 "$pid" 2>/dev/null; then log "server exited; see $STACK_DIR/*.log"; return 1; fi
    if curl -s -o /dev/null "$url" 2>/dev/null || (exec 3<>"/dev/tcp/127.0.0.1/${url##*:}") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  log "server did not come up at $url"
  return 1
}

start_server() {  # name, port, database
  local name=$1 port=$2 db=$3
  # Supabase's own statement timeout for `authenticated` is 8 s; connections without a complete
  # request head, or with a body still arriving, are closed after 5 s.
  PGRST_JWT_SECRET="$JWT_SECRET" PGRST_SERVER_PORT="$port" PGRST_DB_PORT="$PG_PORT" PGRST_DB_NAME="$db" \
    PGRST_DB_USER=authenticator PGRST_AUTH_DB_USER=supabase_auth_admin PGRST_STATEMENT_TIMEOUT_MS=8000 \
    PGRST_IDLE_TIMEOUT_S=5 PGRST_BODY_TIMEOUT_S=5 nohup "$SERVER" >"$STACK_DIR/$name.log" 2>&1 &
  echo $! >"$STACK_DIR/$name.pid"
  wait_for_http "http://127.0.0.1:$port" "$(cat "$STACK_DIR/$name.pid")"
}

create_database() {  # name, variant (own | deployed)
  local db=$1 variant=$2 file name
  if [ "$(psql_as postgres -tA -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" = "1" ]; then return; fi
  psql_as postgres -c "CREATE DATABASE $db"
  psql_as "$db" -f "$root/supabase/bootstrap/plain-postgres.sql"
  for file in "$root"/supabase/migrations/*.sql; do
    name=$(basename "$file")
    if [ "$variant" = deployed ]; then
      # The deployed variant: its own secrets table, no updated_at triggers, no column limits,
      # no capabilities merge, none of the coordination functions, no envelope digest and no change feeds.
      case "$name" in
        *_session_secrets.sql) file="$root/supabase/variants/deployed_session_secrets.sql" ;;
        # Only the server's reading of the trust log (device credentials need it), between its markers.
        *_approval_recipients.sql)
          sed -n '/^-- deployed variant: begin/,/^-- deployed variant: end/p' "$file" >"$STACK_DIR/deployed-$name"
          file="$STACK_DIR/deployed-$name" ;;
        *_updated_at_triggers.sql|*_column_limits.sql|*_capabilities_merge.sql|*_coordination.sql|*_push_token_ownership.sql|*_approvals.sql|*_notifications.sql|*_push_delivery.sql|*_secret_digest.sql|*_secret_digest_kept.sql|*_change_feed.sql|*_pull_feed.sql|*_session_id_index.sql|*_trust_log_feeds.sql|*_approval_decision_v2.sql|*_delivery_limits.sql|*_fair_claim.sql|*_approval_control.sql|*_notifications_2.sql|*_agent_hooks.sql|*_device_scoped_calls.sql|*_device_scoped_calls_2.sql|*_outbox_token_hidden.sql|*_delivery_round_5.sql|*_remote_rules.sql|*_request_rules.sql|*_delivery_rules.sql|*_live_activity_rules.sql|*_push_priority_rules.sql|*_push_payload_rules.sql|*_push_token_rules.sql|*_silent_push_rules.sql|*_push_token_placement.sql|*_clear_approval_recipients.sql|*_live_activity_counts.sql|*_revoked_device_pushes.sql|*_live_activity_refusal.sql) continue ;;
      esac
    fi
    psql_as "$db" -f "$file"
  done
  if [ "$variant" = own ]; then
    # The push worker logs in as a member of push_worker (the migration's role), as a deployment does.
    psql_as "$db" -c "DO \$\$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'push_sender') THEN CREATE ROLE push_sender LOGIN IN ROLE push_worker; END IF; END \$\$"
  fi
}

start() {
  install_postgres
  BIN=$(pg_bin)
  [ -x "$SERVER" ] || { log "building postgrest-server"; (cd "$root" && swift build --product postgrest-server >&2); }
  mkdir -p "$STACK_DIR"
  chmod 755 "$STACK_DIR"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$STACK_DIR"; fi
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    log "initialising a throwaway cluster in $PGDATA"
    as_postgres "$BIN/initdb" -D "$PGDATA" -U postgres -A trust --no-sync -E UTF8 >"$STACK_DIR/initdb.log" 2>&1
  fi
  if ! as_postgres "$BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
    log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
    as_postgres "$BIN/pg_ctl" -D "$PGDATA" -l "$STACK_DIR/postgres.log" -w -t 60 start \
      -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=$STACK_DIR -c timezone=UTC -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=1000 -c log_lock_waits=on" >/dev/null
  fi
  local digest
  digest=$(cat "$root"/supabase/bootstrap/*.sql "$root"/supabase/migrations/*.sql "$root"/supabase/variants/*.sql | sha256sum | cut -d' ' -f1)
  # Rebuilt when supabase/ changed, or when an earlier start failed before writing the digest (a
  # migration that failed leaves a database half made, which must not be taken for a finished one).
  if [ "$(cat "$STACK_DIR/schema.sha256" 2>/dev/null)" != "$digest" ]; then
    log "supabase/ changed (or the last start did not finish): rebuilding the databases"
    stop_servers
    psql_as postgres -c "DROP DATABASE IF EXISTS sync_own" -c "DROP DATABASE IF EXISTS sync_deployed" \
      -c "DROP DATABASE IF EXISTS sync_push"
  fi
  create_database sync_own own
  create_database sync_deployed deployed
  # The push worker's tests: the same schema, where no other test queues pushes.
  create_database sync_push own
  echo "$digest" >"$STACK_DIR/schema.sha256"

  if [ ! -f "$STACK_DIR/jwt-secret" ]; then
    (umask 077; head -c 48 /dev/urandom | base64 | tr -d '\n/+=' >"$STACK_DIR/jwt-secret")
  fi
  JWT_SECRET=$(cat "$STACK_DIR/jwt-secret")
  stop_servers
  start_server api "$API_PORT" sync_own
  start_server api-deployed "$DEPLOYED_API_PORT" sync_deployed
  if [ "${STACK_PUSH:-}" = 1 ]; then start_push; fi

  local keys anon service
  keys=$(PGRST_JWT_SECRET="$JWT_SECRET" "$SERVER" keys)
  anon=$(echo "$keys" | sed -n 's/^anon=//p')
  service=$(echo "$keys" | sed -n 's/^service_role=//p')
  (umask 077; cat >"$STACK_DIR/stack.env" <<ENV
export SYNC_STACK_URL=http://127.0.0.1:$API_PORT
export SYNC_STACK_DEPLOYED_URL=http://127.0.0.1:$DEPLOYED_API_PORT
export SYNC_STACK_ANON_KEY=$anon
export SYNC_STACK_SERVICE_KEY=$service
export SYNC_STACK_JWT_SECRET=$JWT_SECRET
export SYNC_STACK_DB="host=127.0.0.1 port=$PG_PORT user=postgres dbname=sync_own"
# The psql binary itself: Debian's /usr/bin/psql is a Perl wrapper that costs a Perl start per call.
export SYNC_STACK_PSQL=$BIN/psql
export SYNC_STACK_PUSH_DATABASE_URL=postgres://push_sender@127.0.0.1:$PG_PORT/sync_push?sslmode=disable
# The test targets are declared only with the rig (Package.swift).
export SESSION_SYNC_RIG=1
ENV
  )
  log "up: API http://127.0.0.1:$API_PORT (deployed variant :$DEPLOYED_API_PORT), PostgreSQL 127.0.0.1:$PG_PORT"
}

start_push() {
  local dir="$STACK_DIR/push" imitation="$root/.build/debug/apns-imitation" worker="$root/.build/debug/push-worker"
  [ -x "$imitation" ] && [ -x "$worker" ] || { log "STACK_PUSH=1 needs apns-imitation and push-worker built (make stack does it)"; return 1; }
  mkdir -p "$dir"
  if [ ! -f "$dir/AuthKey.p8" ]; then
    (umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/AuthKey.p8" 2>/dev/null)
  fi
  nohup "$imitation" --directory "$dir" --key-path "$dir/AuthKey.p8" --key-id STACK12345 --team-id TEAM123456 \
    --bundle-id com.example.agentsync >"$STACK_DIR/apns-imitation.log" 2>&1 &
  echo $! >"$STACK_DIR/apns-imitation.pid"
  local url=""
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^apns-imitation listening on \(https:[^ ]*\).*/\1/p' "$STACK_DIR/apns-imitation.log")
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { log "the APNs imitation did not start; see $STACK_DIR/apns-imitation.log"; return 1; }
  APNS_KEY_PATH="$dir/AuthKey.p8" APNS_KEY_ID=STACK12345 APNS_TEAM_ID=TEAM123456 APNS_BUNDLE_ID=com.example.agentsync \
    APNS_ENVIRONMENT=both DATABASE_URL="postgres://push_sender@127.0.0.1:$PG_PORT/sync_own?sslmode=disable" \
    APNS_BASE_URL="$url" APNS_CA_FILE="$dir/apns-imitation-cert.pem" \
    nohup "$worker" run >"$STACK_DIR/push-worker.log" 2>&1 &
  echo $! >"$STACK_DIR/push-worker.pid"
  log "push: worker delivering sync_own's outbox to the APNs imitation at $url (logs: $STACK_DIR/push-worker.log, $STACK_DIR/apns-imitation.log)"
}

stop_servers() {
  for name in push-worker apns-imitation api api-deployed; do
    if [ -f "$STACK_DIR/$name.pid" ]; then
      local pid
      pid=$(cat "$STACK_DIR/$name.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$STACK_DIR/$name.pid"
    fi
  done
}

stop() {
  [ -d "$STACK_DIR" ] || return 0
  stop_servers
  if BIN=$(pg_bin) && [ -f "$PGDATA/postmaster.pid" ]; then
    as_postgres "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
  fi
  log "stopped"
}

info() {
  # shellcheck disable=SC1091
  source "$STACK_DIR/stack.env"
  cat <<INFO

  REST API      $SYNC_STACK_URL/rest/v1/   (deployed-schema variant: $SYNC_STACK_DEPLOYED_URL)
  apikey        $SYNC_STACK_ANON_KEY
  environment   source $STACK_DIR/stack.env

  A user token (GoTrue-style):
    curl -s -X POST "$SYNC_STACK_URL/auth/v1/signup" -H "apikey: $SYNC_STACK_ANON_KEY" \\
         -H 'Content-Type: application/json' -d '{"email":"you@example.com","password":"choose-a-password"}'
    curl -s -X POST "$SYNC_STACK_URL/auth/v1/token?grant_type=password" -H "apikey: $SYNC_STACK_ANON_KEY" \\
         -H 'Content-Type: application/json' -d '{"email":"you@example.com","password":"choose-a-password"}'
  then send  apikey: <apikey>  and  Authorization: Bearer <access_token>.

  Or sign a store in with sync-cli (after the signup above; the password at its prompt):
    .build/debug/sync-cli init --store /tmp/desktop --role desktop --name laptop
    SUPABASE_ANON_KEY=$SYNC_STACK_ANON_KEY .build/debug/sync-cli login --store /tmp/desktop \\
         --remote $SYNC_STACK_URL --email you@example.com

  Stop it with: STACK_DIR=$STACK_DIR $0 stop
INFO
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) cat "$STACK_DIR/stack.env" ;;
  info) info ;;
  *) echo "usage: $0 start|stop|env|info" >&2; exit 64 ;;
esac
