#!/usr/bin/env bash
# kafka.sh start|stop|status -- a local Apache Kafka broker (KRaft, single node,
# 127.0.0.1) for trying the Kafka connectors by hand: the one the tests use,
# tests/kafka/broker.sh (docs/KAFKA.md). `start` fetches the broker's jars with
# Maven on first use and prints `bootstrap.servers=127.0.0.1:<port>` last.
exec "$(dirname "${BASH_SOURCE[0]}")/../tests/kafka/broker.sh" "$@"
