#!/usr/bin/env bash
# Install the system services that the cluster tests use (idempotent):
#   postgresql            -- the multi-node call-cache backend (tests/cache/test_postgres.py
#                            start their own throw-away server on 127.0.0.1 with initdb/pg_ctl)
#   slurm-wlm, munge      -- a one-node SLURM on localhost (scripts/slurm-localhost.sh,
#                            tests/workflow/test_slurm.py)
#   chromium              -- a headless browser that opens the HTML reports (tests/plots/test_html_report.py)
# Needs root and apt-get (Debian/Ubuntu); anywhere else it says why it skips and exits 0,
# and the tests that need these services skip with a reason.
set -uo pipefail

PKGS=(postgresql slurm-wlm munge chromium)

if [ "$(id -u)" -ne 0 ]; then
    echo "install-services: not root; skipping apt install of ${PKGS[*]}" >&2
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-services: no apt-get on this system; skipping install of ${PKGS[*]}" >&2
    exit 0
fi

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-services: ${PKGS[*]} already installed"
    exit 0
fi

echo "install-services: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Do not let the packages start their system-wide daemons: the tests start their own.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
fi
rc=0
{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } || rc=$?
[ "$made_policy" = 1 ] && rm -f "$policy"
if [ "$rc" -ne 0 ]; then
    echo "install-services: apt-get failed (rc=$rc); the service tests will skip" >&2
fi
exit 0
