#!/usr/bin/env bash
# The images docker-flame and its tests put into an engine: the sidecar (docker-flame-sidecar:*),
# the test stubs (docker-flame-*) and the fixtures (flame-fixture-*). Every one of them is built
# or imported on demand, so removing them all gives the state of a brand-new machine (what CI
# starts from):
#   scripts/test-images.sh list
#   scripts/test-images.sh rm      (containers still using them are left alone: the rm fails)
set -euo pipefail
imgs() { docker images --format '{{.Repository}}:{{.Tag}}' | grep -E '^(docker-flame-|flame-fixture-)' || true; }
case "${1:-list}" in
list) imgs ;;
rm) l=$(imgs); [ -z "$l" ] || docker rmi -f $l >/dev/null; echo "removed $(printf '%s' "$l" | grep -c . || true) image(s)" ;;
*) echo "usage: $0 list|rm" >&2; exit 2 ;;
esac
