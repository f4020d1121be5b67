"""The representative set: a cheap set of zoo models that together cover every feature and ATen op.

    python3 tests/zoo/cover.py            # tests/zoo/features.json -> tests/zoo/representative.json
    python3 tests/zoo/cover.py --check    # exit 1 if representative.json is not what features.json gives

Greedy weighted set cover over the elements features ∪ ops ("op:aten::name") of every model in
features.json: repeatedly take the model with the most uncovered elements per unit of cost (ties:
the cheaper model, then the name), first among models fit for the fast tier (tier2_ok), then,
for what only the others cover, among all. A model's cost is its recorded op count (forward +
backward, from features.json) plus MODEL_OVERHEAD_OPS, the fixed cost of building and running a
model in three modes, in op equivalents. Plain greedy (most new elements first) gives a few
fewer models but picks large ones whose extra ops are already covered (on the full zoo it
costs about 3x the recorded ops); tier 2 must stay within 10 minutes, so its cost is what the
cover minimises. Weighted greedy is within a factor ln(#elements) of the cheapest cover;
deterministic for a given features.json. The output lists the models in the order chosen and,
for each element, the chosen model that covers it first.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FEATURES = os.path.join(HERE, "features.json")
REPRESENTATIVE = os.path.join(HERE, "representative.json")


def elements(entry):
    return set(entry["features"]) | {f"op:{op}" for op in entry["ops"]}


MODEL_OVERHEAD_OPS = 2000


def greedy(models, universe, cost):
    """models: name -> element set; cost: name -> recorded ops. Returns the chosen names, covering
    `universe` as far as possible."""
    uncovered = set(universe)
    chosen = []
    while uncovered:
        best = min(models, key=lambda n: (-len(models[n] & uncovered) / (cost.get(n, 0) + MODEL_OVERHEAD_OPS),
                                          cost.get(n, 0), n))
        gain = models[best] & uncovered
        if not gain:
            break
        chosen.append(best)
        uncovered -= gain
    return chosen


def compute(features, tier2_ok=None):
    """features: the parsed features.json; tier2_ok: name -> bool (missing: True)."""
    tier2_ok = tier2_ok or {}
    sets = {n: elements(e) for n, e in features["models"].items()}
    cost = {n: e.get("recorded", 0) for n, e in features["models"].items()}
    universe = set().union(*sets.values()) if sets else set()
    fast = {n: s for n, s in sets.items() if tier2_ok.get(n, True)}
    chosen = greedy(fast, universe, cost)
    covered = set().union(*(sets[n] for n in chosen)) if chosen else set()
    rest = greedy({n: s for n, s in sets.items() if n not in fast}, universe - covered, cost)
    chosen += rest
    covers = {}
    for n in chosen:
        for x in sorted(sets[n]):
            covers.setdefault(x, n)
    feats = sorted(x for x in universe if not x.startswith("op:"))
    return {
        "models": chosen,
        "models_slow": rest,
        "zoo_models": len(sets),
        "features": len(feats),
        "ops": len(universe) - len(feats),
        "covers": dict(sorted(covers.items())),
    }


def tier2_flags():
    sys.path.insert(0, HERE)
    from registry import all_models
    return {n: getattr(zm, "tier2_ok", True) for n, zm in all_models().items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true")
    p.add_argument("--features", default=FEATURES)
    p.add_argument("--out", default=REPRESENTATIVE)
    args = p.parse_args(argv)
    with open(args.features) as f:
        features = json.load(f)
    rep = compute(features, tier2_flags())
    text = json.dumps(rep, indent=1, sort_keys=True) + "\n"
    if args.check:
        current = open(args.out).read() if os.path.exists(args.out) else ""
        if current != text:
            print(f"{args.out} is stale: regenerate it with python3 tests/zoo/cover.py", file=sys.stderr)
            return 1
        print(f"{args.out} is current: {len(rep['models'])} models cover {rep['features']} features and {rep['ops']} ops")
        return 0
    with open(args.out, "w") as f:
        f.write(text)
    print(f"{len(rep['models'])} of {rep['zoo_models']} models cover {rep['features']} features and {rep['ops']} ops "
          f"({len(rep['models_slow'])} of them outside the fast tier) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
