#!/usr/bin/env bash
# Runs the shared peer-benchmark kit (../shared/bench, see its README.md) for tend and the
# physical-limit baselines in one session, with tend built as shipped (`--profile dist`, whole-
# program optimization; TEND_PROFILE=release for a quicker build) on PATH. The kit is
# used as it is: results go to bench/results/ in this repository, never into the kit.
#
#   bench/peers.sh                       # scenarios 1-4, N = 1000,10000, chain 1000
#   bench/peers.sh --n 100,1000 --runs 3 # extra arguments go to `harness.py run`
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
kit="${TEND_BENCH_KIT:-$repo/../shared/bench}"
# A git worktree lives one level further down (e.g. wt/NAME next to main).
[[ -f "$kit/harness.py" ]] || kit="$repo/../../shared/bench"
if [[ ! -f "$kit/harness.py" ]]; then
    echo "peer benchmark kit not found at $kit (set TEND_BENCH_KIT)" >&2
    exit 2
fi
profile="${TEND_PROFILE:-dist}"
cargo build --profile "$profile" --manifest-path "$repo/Cargo.toml" --bin tend
out="$repo/bench/results/results.json"
mkdir -p "$(dirname "$out")"
cd "$kit"
# The machine is shared: do not wait minutes for it to go idle, repeat a disturbed run once.
PATH="$repo/target/$profile:$PATH" python3 harness.py run \
    --tools tend,baseline-c,baseline-py \
    --n 1000,10000 --chain-n 1000 \
    --quiet-wait 2 --retries 1 \
    --out "$out" "$@"
python3 "$repo/bench/summary.py" "$out"
