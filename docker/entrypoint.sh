#!/bin/sh
# Entrypoint of the rmq-gateway image: writes a RocketMQ properties file from the environment and
# runs `rmq-gateway COMMAND` (standalone, the default; namesrv; broker), or `health` (the
# HEALTHCHECK: a protocol probe of the NameServer, see gateway/testing/probe.py).
#
# Environment (all optional):
#   BROKER_IP1        address the broker advertises to clients (brokerIP1; default 127.0.0.1):
#                     set it to an address clients can reach when ports are published
#   BROKER_NAME       brokerName (broker-a)          BROKER_CLUSTER  brokerClusterName (DefaultCluster)
#   NAMESRV_PORT      NameServer port (9876)         BROKER_PORT     Broker port (10911)
#   GRPC_PORT         gRPC endpoint for RocketMQ 5 clients (8081; `off`: none)
#   NAMESRV_ADDR      NameServers a `broker` registers to (';'-separated)
#   RMQ_HOST          listen address (0.0.0.0)
#   RMQ_GATEWAY_CONTROL_PORT  HTTP control endpoint (fault rules, stored messages; default off),
#                     read by rmq-gateway itself
#   RMQ_GATEWAY_TOPICS  topics created before ready: NAME[:QUEUES[:TYPE]],... (e.g. orders:8:FIFO,audit)
#   RMQ_GATEWAY_GROUPS  groups created before ready: NAME[:KEY=VALUE,...];... (both read by rmq-gateway)
#   RMQ_PROP_<key>    any other Java property, e.g. RMQ_PROP_flushDiskType=SYNC_FLUSH
# Extra arguments after COMMAND go to rmq-gateway.
set -eu
cmd=${1:-standalone}
[ $# -gt 0 ] && shift
namesrv_port=${NAMESRV_PORT:-9876}
broker_port=${BROKER_PORT:-10911}
grpc_port=${GRPC_PORT:-8081}
if [ "$grpc_port" = off ]; then grpc_flag=--no-grpc; else grpc_flag="--grpc-port=$grpc_port"; fi
conf=/tmp/rmq-gateway.conf

if [ "$cmd" = health ]; then
  case $(cat /tmp/rmq-gateway.mode 2>/dev/null || echo standalone) in
    namesrv) exec python3 -m gateway.testing.probe "127.0.0.1:$namesrv_port" --brokers 0 ;;
    broker)
      # a slave (RMQ_PROP_brokerId > 0) is ready once registered under its id, not its master's
      if [ "${RMQ_PROP_brokerId:-0}" != 0 ]; then set -- --broker-id "$RMQ_PROP_brokerId"; fi
      exec python3 -m gateway.testing.probe "${NAMESRV_ADDR%%;*}" \
        --broker-name "${BROKER_NAME:-broker-a}" "$@" ;;
    *) exec python3 -m gateway.testing.probe "127.0.0.1:$namesrv_port" ;;
  esac
fi

{
  echo "brokerIP1=${BROKER_IP1:-127.0.0.1}"
  echo "brokerName=${BROKER_NAME:-broker-a}"
  echo "brokerClusterName=${BROKER_CLUSTER:-DefaultCluster}"
  echo "kvConfigPath=/data/namesrv/kvConfig.json"
  env | sed -n 's/^RMQ_PROP_\([A-Za-z0-9_.]*\)=/\1=/p'
} >"$conf"
echo "$cmd" >/tmp/rmq-gateway.mode
host=${RMQ_HOST:-0.0.0.0}
case $cmd in
  standalone)
    exec rmq-gateway standalone --host "$host" --namesrv-port "$namesrv_port" \
      --broker-port "$broker_port" "$grpc_flag" --store /data/store -c "$conf" "$@" ;;
  namesrv)
    exec rmq-gateway namesrv --host "$host" --namesrv-port "$namesrv_port" -c "$conf" "$@" ;;
  broker)
    exec rmq-gateway broker --host "$host" --broker-port "$broker_port" "$grpc_flag" --store /data/store \
      --namesrv-addr "${NAMESRV_ADDR:-127.0.0.1:9876}" -c "$conf" "$@" ;;
  *)
    exec "$cmd" "$@" ;;
esac
