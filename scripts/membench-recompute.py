#!/usr/bin/env python3
"""Recompute PicoClaw's evidence HitRate from a `pincer membench --dump-contexts`
file and the LoCoMo data, independently of pincer's code.

    pincer membench --data DIR --json --dump-contexts contexts.jsonl > report.json
    scripts/membench-recompute.py --data DIR --dump contexts.jsonl --report report.json

Prints HitRate per strategy and category; with --report, also checks that
every figure matches the report (to 1e-9) and exits 1 if one does not.
Standard library only.
"""

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ID = re.compile(r"^D(\d+):(\d+)$")


def conversations(data_dir):
    """sample name -> {dia_id: turn text}, for both LoCoMo file shapes."""
    out = {}
    for path in sorted(Path(data_dir).glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        samples = (
            [(path.stem, doc)]
            if isinstance(doc, dict)
            else [(s["sample_id"], s["conversation"]) for s in doc]
        )
        for name, conv in samples:
            keys = sorted(
                (k for k in conv if re.fullmatch(r"session_\d+", k)),
                key=lambda k: int(k[len("session_"):]),
            )
            turns = {}
            for k in keys:
                for t in conv[k]:
                    turns[t["dia_id"]] = t["text"]
            out[name] = turns
    return out


def hit_rate(line, turns):
    context = line["context"].lower()
    if line["strategy"].startswith("picoclaw-seahorse") and context == "":
        return 0.0  # Seahorse found nothing at all
    evidence = line["evidence"]
    if not evidence:
        return 1.0
    found = resolvable = 0
    for entry in evidence:
        for token in entry.replace(";", " ").split():
            m = ID.match(token)
            if not m:
                continue
            text = turns.get("D%d:%d" % (int(m.group(1)), int(m.group(2))))
            if text is None:
                continue
            resolvable += 1
            found += text.lower() in context
    return found / resolvable if resolvable else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the directory given to --data")
    ap.add_argument("--dump", required=True, help="the --dump-contexts file")
    ap.add_argument("--report", help="the --json report to check against")
    args = ap.parse_args()

    convs = conversations(args.data)
    sums = defaultdict(lambda: [0.0, 0])
    order = []
    with open(args.dump, encoding="utf-8") as f:
        for raw in f:
            line = json.loads(raw)
            name = line["strategy"]
            if name not in order:
                order.append(name)
            h = hit_rate(line, convs[line["sample"]])
            for key in ((name, None), (name, str(line["category"]))):
                sums[key][0] += h
                sums[key][1] += 1

    def mean(key):
        s, n = sums.get(key, (0.0, 0))
        return s / n if n else None

    print("| strategy | HitRate | C1 | C2 | C3 | C4 | C5 | questions |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in order:
        cats = [mean((name, str(c))) for c in range(1, 6)]
        cells = " | ".join("–" if v is None else "%.4f" % v for v in cats)
        print("| `%s` | %.4f | %s | %d |" % (name, mean((name, None)), cells, sums[(name, None)][1]))

    if args.report:
        report = json.loads(Path(args.report).read_text(encoding="utf-8"))
        bad = 0
        for s in report["strategies"]:
            pairs = [(None, s["hit_rate"])] + list(s["by_category"].items())
            for cat, want in pairs:
                got = mean((s["name"], cat))
                if (got is None) != (want is None) or (got is not None and abs(got - want) > 1e-9):
                    print("MISMATCH %s C%s: dump %s, report %s" % (s["name"], cat, got, want))
                    bad += 1
        print("every figure of the report matches the dump" if bad == 0 else "%d mismatches" % bad)
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
