#!/usr/bin/env bash
# broker.sh start|stop|status -- a single-node Apache Kafka (KRaft: broker and
# controller in one JVM) on 127.0.0.1, for the Kafka tests and by hand.
#
# start: fetches the broker's jars from Maven Central on first use (Maven's
#   dependency:copy-dependencies of org.apache.kafka:kafka_2.13 into
#   $LAMINAR_CACHE/kafka-<version>/libs), formats a fresh storage directory
#   with a random cluster id, starts the broker on a free port, waits until it
#   serves and prints `bootstrap.servers=127.0.0.1:<port>` as its last line.
# stop: stops the broker started from the same $LAMINAR_KAFKA_HOME and
#   removes its storage.
# restart: stops that broker and starts it again on the same port with the
#   same storage (a broker restart as clients see it).
# Environment: LAMINAR_KAFKA_HOME (state: pid, port, logs, data; default
#   ${TMPDIR:-/tmp}/laminardb-kafka), LAMINAR_CACHE (default
#   ~/.cache/laminardb), LAMINAR_KAFKA_VERSION (default 4.1.1),
#   LAMINAR_KAFKA_TIMEOUT (seconds to wait for readiness, default 90).
set -euo pipefail

VERSION=${LAMINAR_KAFKA_VERSION:-4.1.1}
CACHE=${LAMINAR_CACHE:-$HOME/.cache/laminardb}
LIBS="$CACHE/kafka-$VERSION/libs"
HOME_DIR=${LAMINAR_KAFKA_HOME:-${TMPDIR:-/tmp}/laminardb-kafka}
TIMEOUT=${LAMINAR_KAFKA_TIMEOUT:-90}
JOPTS=(-Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
       -Djava.awt.headless=true)

die() { echo "broker.sh: $*" >&2; exit 1; }

fetch() {
  [ -f "$LIBS/.complete" ] && return 0
  command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch Kafka $VERSION"
  local work="$CACHE/kafka-$VERSION"
  mkdir -p "$work"
  cat > "$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.laminardb</groupId><artifactId>kafka-broker</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>$VERSION</version></dependency>
  </dependencies>
</project>
POM
  echo "broker.sh: fetching Kafka $VERSION with Maven into $LIBS" >&2
  (cd "$work" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=libs \
      -DincludeScope=runtime >&2) || die "Maven could not fetch Kafka $VERSION"
  touch "$LIBS/.complete"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

running() {
  [ -f "$HOME_DIR/pid" ] && kill -0 "$(cat "$HOME_DIR/pid")" 2>/dev/null
}

# Run the broker of $HOME_DIR/server.properties in the background and wait
# until its client listener on $HOME_DIR/port accepts.
launch() {
  local cp="$LIBS/*" port
  port=$(cat "$HOME_DIR/port")
  nohup java "${JOPTS[@]}" -cp "$cp" kafka.Kafka "$HOME_DIR/server.properties" \
      >> "$HOME_DIR/stdout.log" 2>&1 < /dev/null &
  echo $! > "$HOME_DIR/pid"
  local waited=0
  # Ready when the client listener accepts (it opens once the broker has
  # started; the broker's own log has no SLF4J binding to go to).
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! running; then
      die "the broker exited: $(tail -20 "$HOME_DIR/stdout.log" 2>/dev/null)"
    fi
    if [ "$waited" -ge $((TIMEOUT * 5)) ]; then
      stop
      die "the broker did not start within ${TIMEOUT}s"
    fi
    sleep 0.2
    waited=$((waited + 1))
  done
  echo "bootstrap.servers=127.0.0.1:$port"
}

start() {
  if running; then
    echo "bootstrap.servers=127.0.0.1:$(cat "$HOME_DIR/port")"
    return 0
  fi
  command -v java >/dev/null || die "a JDK (java) is needed to run the broker"
  fetch
  rm -rf "$HOME_DIR"
  mkdir -p "$HOME_DIR/data"
  local port cport cluster
  port=$(free_port)
  cport=$(free_port)
  while [ "$cport" = "$port" ]; do cport=$(free_port); done
  cluster=$(python3 -c 'import base64,uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')
  cat > "$HOME_DIR/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$HOME_DIR/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
PROPS
  java "${JOPTS[@]}" -cp "$LIBS/*" kafka.tools.StorageTool format -t "$cluster" \
      -c "$HOME_DIR/server.properties" > "$HOME_DIR/format.log" 2>&1 \
      || die "formatting the storage failed: $(tail -5 "$HOME_DIR/format.log")"
  echo "$port" > "$HOME_DIR/port"
  launch
}

# Stop the broker's JVM (its storage stays).
halt() {
  if running; then
    local pid
    pid=$(cat "$HOME_DIR/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
}

stop() {
  halt
  rm -rf "$HOME_DIR"
}

# Stop the broker and start it again on the same port with the same storage
# (what a broker restart mid-stream looks like to clients).
restart() {
  [ -f "$HOME_DIR/server.properties" ] || die "no broker in $HOME_DIR to restart"
  halt
  launch
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) restart ;;
  status) if running; then echo "bootstrap.servers=127.0.0.1:$(cat "$HOME_DIR/port")"; else exit 1; fi ;;
  fetch) fetch ;;
  *) die "usage: broker.sh start|stop|restart|status|fetch" ;;
esac
