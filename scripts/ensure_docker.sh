#!/usr/bin/env bash
# Make sure a Docker engine answers. As root on Debian: install docker.io when dockerd is missing and start
# dockerd in the background (log: /var/log/agentrl-dockerd.log). Otherwise print what to do and exit 1.
set -uo pipefail
say() { printf '\033[1m[docker]\033[0m %s\n' "$*"; }
if docker info >/dev/null 2>&1; then say "engine answers"; exit 0; fi
if [ "$(id -u)" != 0 ]; then
  say "no Docker engine answers and we are not root: start Docker (or ask an admin), then re-run 'make setup'"
  exit 1
fi
if ! command -v dockerd >/dev/null 2>&1; then
  say "installing Debian's docker.io"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null) \
    || { say "apt-get install docker.io failed"; exit 1; }
fi
if ! command -v debootstrap >/dev/null 2>&1 || ! command -v bwrap >/dev/null 2>&1; then
  say "installing debootstrap and bubblewrap (sandbox image builder, non-Docker fallback)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap bubblewrap >/dev/null 2>&1 \
    || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap bubblewrap >/dev/null) \
    || say "could not install debootstrap/bubblewrap"
fi
say "starting dockerd in the background"
nohup dockerd >/var/log/agentrl-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then say "engine answers"; exit 0; fi
  sleep 1
done
say "dockerd did not answer within 60 s; see /var/log/agentrl-dockerd.log"
exit 1
