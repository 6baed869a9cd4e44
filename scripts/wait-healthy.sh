#!/bin/sh
# Waits until URL answers 200 (feedsub's /healthz), at most SECONDS: `make wait`. Plain sh and curl, because it runs
# before the dependencies may be installed. Exit 0 once it answers; 1 at the deadline.
set -eu
url=$1
seconds=${2:-300}
started=$(date +%s)
said=0
echo "wait: waiting for $url (at most $seconds s)"
while :; do
  if curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; then
    echo "wait: feedsub answers at $url (after $(( $(date +%s) - started )) s)"
    exit 0
  fi
  elapsed=$(( $(date +%s) - started ))
  if [ "$elapsed" -ge "$seconds" ]; then
    echo "wait: feedsub did not answer $url within $seconds s; is make serve running? Its output says why it is not." >&2
    exit 1
  fi
  # A line every 15 s, so a long install is never a silent minute here either.
  if [ $(( elapsed / 15 )) -gt "$said" ]; then
    said=$(( elapsed / 15 ))
    echo "wait: still waiting for $url ($elapsed s; make serve installs dependencies first on a fresh clone)"
  fi
  sleep 0.5
done
