#!/usr/bin/env bash
# stage1-heldout.sh: stage 1 as a team reaches it, measured on runs it
# never saw. The runs' task families are dealt into FOLDS groups; for each
# group, the documented stage-1 commands run on a team's first FIRST runs
# of the other groups (taken a family at a time, round robin, so that they
# span families) and `overseer eval` judges the held-out group with the
# gates in force. The held-out figures are pooled over the groups.
#
#   scripts/stage1-heldout.sh TRACES_DIR [OUT_DIR]
#
# TRACES_DIR holds trajs/ (one file or directory per run, named by its
# instance id: mini-swe-agent, SWE-agent and OpenHands layouts) and
# labels.json. FIRST (60), FOLDS (3), OVERSEER (the overseer binary; built
# from cmd/ when unset), CALIBRATE_FLAGS and EVAL_FLAGS (extra flags of
# calibrate and eval, e.g. CALIBRATE_FLAGS="--relative-measures all") may be
# set. SUCCEEDED=N keeps at most N succeeded runs among a team's first runs
# (the others are skipped, failed runs taking their place), to see what a
# team of an agent that rarely succeeds has at stage 1 on runs of one that
# succeeds often; the held-out groups keep all their runs, so that the
# share of succeeded runs held is measured on many. SEED (0: in name order)
# shuffles each family's runs before they are taken. GROUP_BY=run deals the
# runs themselves, not their task families, into the groups (with SEED, in
# a shuffled order): held-out runs of the same repositories as a team's
# first runs, runs like them, where the default holds out repositories.
# The pooled figures end with what the judge's pauses and the budgets
# hold and catch each alone.
set -euo pipefail

traces=${1:?usage: scripts/stage1-heldout.sh TRACES_DIR [OUT_DIR]}
out=${2:-$(mktemp -d)}
first=${FIRST:-60}
folds=${FOLDS:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${OVERSEER:-}" ]]; then
	OVERSEER="$out/overseer"
	(cd "$root/cmd" && go build -o "$OVERSEER" ./overseer)
fi
[[ -d "$traces/trajs" && -f "$traces/labels.json" ]] || { echo "stage1-heldout: $traces has no trajs/ and labels.json" >&2; exit 2; }
mkdir -p "$out"

# The plan: each run's group and, for each group, the training runs.
python3 - "$traces" "$out" "$first" "$folds" "${SUCCEEDED:--1}" "${SEED:-0}" "${GROUP_BY:-family}" <<'PY'
import json, os, re, sys, collections, random
traces, out, first, folds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
succeeded_cap, seed, group_by = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
if group_by not in ("family", "run"):
    sys.exit(f"stage1-heldout: GROUP_BY={group_by}: give family (the default) or run")
labels = json.load(open(os.path.join(traces, "labels.json")))
entries = sorted(os.listdir(os.path.join(traces, "trajs")))
def run_id(e): return re.sub(r"\.traj(\.json)?$", "", e)
def family(e): return run_id(e) if group_by == "run" else re.sub(r"-\d+$", "", run_id(e))
by_family = collections.defaultdict(list)
for e in entries: by_family[family(e)].append(e)
if len(by_family) < folds:
    sys.exit(f"stage1-heldout: {traces} holds {len(by_family)} task families; {folds} held-out groups need {folds} at least (set FOLDS)")
# Largest family first, each to the group with the fewest families so far
# (runs dealt alone: in a shuffled order with SEED).
groups = [[] for _ in range(folds)]
order = sorted(by_family, key=lambda f: (-len(by_family[f]), f))
if group_by == "run" and seed:
    random.Random(seed).shuffle(order)
for f in order:
    min(groups, key=len).append(f)
plan = []
for g, fams in enumerate(groups):
    others = sorted(f for f in by_family if f not in fams)
    if group_by == "run" and seed:
        random.Random(f"{seed}/{g}").shuffle(others)
    queues = {f: list(by_family[f]) for f in others}
    if seed:
        for f in others:
            random.Random(f"{seed}/{f}").shuffle(queues[f])
    train, succeeded = [], 0
    while len(train) < first and any(queues.values()):
        for f in others:
            if queues[f] and len(train) < first:
                e = queues[f].pop(0)
                ok = labels.get(run_id(e)) is True
                if ok and 0 <= succeeded_cap <= succeeded:
                    continue
                succeeded += ok
                train.append(e)
    held = [e for f in fams for e in by_family[f]]
    plan.append({"group": g, "families": fams, "train": train, "held_out": held})
json.dump(plan, open(os.path.join(out, "plan.json"), "w"), indent=1)
for p in plan:
    for kind in ("train", "held_out"):
        d = os.path.join(out, f"g{p['group']}", kind, "trajs")
        os.makedirs(d, exist_ok=True)
        for e in p[kind]:
            link = os.path.join(d, e)
            if not os.path.lexists(link):
                os.symlink(os.path.abspath(os.path.join(traces, "trajs", e)), link)
        dst = os.path.join(out, f"g{p['group']}", kind, "labels.json")
        if not os.path.exists(dst):
            os.symlink(os.path.abspath(os.path.join(traces, "labels.json")), dst)
    ok = sum(labels.get(run_id(e)) is True for e in p["train"])
    of = "runs dealt alone" if group_by == "run" else ", ".join(p["families"])
    print(f"group {p['group']}: {len(p['held_out'])} held-out runs ({of}); trained on {len(p['train'])} runs of the others ({ok} succeeded)")
PY

for g in $(seq 0 $((folds - 1))); do
	dir="$out/g$g"
	echo "== group $g" >&2
	"$OVERSEER" recalibrate --traces "$dir/train" --out "$dir/model.json" >"$dir/recalibrate.txt" 2>&1 || { echo "group $g: recalibrate refused:" >&2; tail -3 "$dir/recalibrate.txt" >&2; }
	model=()
	[[ -f "$dir/model.json" ]] && model=(--model "$dir/model.json")
	# shellcheck disable=SC2086
	"$OVERSEER" calibrate --traces "$dir/train" "${model[@]}" ${CALIBRATE_FLAGS:-} --out "$dir/policy.json" >"$dir/calibrate.txt" 2>&1 || { echo "group $g: calibrate refused:" >&2; tail -3 "$dir/calibrate.txt" >&2; }
	policy=()
	[[ -f "$dir/policy.json" ]] && policy=(--policy "$dir/policy.json")
	# shellcheck disable=SC2086
	# eval exits 1 where the held-out runs break the policy's promise, and
	# its figures are still the measure.
	"$OVERSEER" eval --traces "$dir/held_out" "${model[@]}" "${policy[@]}" --relative-budget-gates ${EVAL_FLAGS:-} --json >"$dir/eval.json" 2>"$dir/eval.err" ||
		{ [[ -s "$dir/eval.json" ]] || { cat "$dir/eval.err" >&2; exit 1; }; echo "group $g: $(tail -n 1 "$dir/eval.err")" >&2; }
done

# Pooled over the held-out groups.
python3 - "$out" "$folds" <<'PY'
import json, sys
out, folds = sys.argv[1], int(sys.argv[2])
keys = ("succeeded", "held", "failed", "caught", "failed_tokens", "saved_tokens", "failed_time_ns", "saved_time_ns")
pool = dict.fromkeys(keys, 0)
alone = {"judge": [0, 0], "budgets": [0, 0]}  # held, caught by each cause alone
for g in range(folds):
    f = json.load(open(f"{out}/g{g}/eval.json"))["spend"]["in_force"]
    row = {k: f.get(k) or 0 for k in keys}
    for cause in alone:
        alone[cause][0] += (f.get(cause) or {}).get("held") or 0
        alone[cause][1] += (f.get(cause) or {}).get("caught") or 0
    print(f"group {g}: gates in force: {f.get('policy')}; {f.get('relative') or 'no relative budget in force'}")
    print(f"  held {row['held']} of {row['succeeded']} succeeded; caught {row['caught']} of {row['failed']} failed; "
          f"saved {row['saved_tokens']} of {row['failed_tokens']} failed-run tokens")
    for k in keys: pool[k] += row[k]
share = lambda a, b: f"{100*a/b:.1f}%" if b else "n/a"
print(f"pooled: held {pool['held']} of {pool['succeeded']} succeeded runs ({share(pool['held'], pool['succeeded'])}); "
      f"caught {pool['caught']} of {pool['failed']} failed ({share(pool['caught'], pool['failed'])}); "
      f"failed runs' tokens saved {share(pool['saved_tokens'], pool['failed_tokens'])}, time saved {share(pool['saved_time_ns'], pool['failed_time_ns'])}")
print(f"pooled, each cause alone: the judge's pauses held {alone['judge'][0]} ({share(alone['judge'][0], pool['succeeded'])}) and caught {alone['judge'][1]}; "
      f"the budgets held {alone['budgets'][0]} ({share(alone['budgets'][0], pool['succeeded'])}) and caught {alone['budgets'][1]}")
PY
echo "outputs in $out" >&2
