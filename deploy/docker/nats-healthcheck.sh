#!/bin/bash
# NATS health check without curl or wget: GET /healthz on the monitoring port over bash's
# /dev/tcp; healthy when the server answers 200 (it does once JetStream is up).
set -eu
port="${NATS_MONITOR_PORT:-8222}"
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
IFS= read -r -t 3 status <&3
case "$status" in
  *" 200 "*) exit 0 ;;
  *) echo "nats /healthz: $status" >&2; exit 1 ;;
esac
