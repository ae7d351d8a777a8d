"""Parses a Prometheus text exposition (the file named by argv[1]) with the
prometheus_client package's own parser and prints what it read as JSON:
[{"name", "type", "samples": [{"name", "labels", "value"}]}]. Any line the
parser does not accept is an exception and a non-zero exit."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
out = []
for fam in text_string_to_metric_families(text):
    out.append({
        "name": fam.name,
        "type": fam.type,
        "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in fam.samples],
    })
print(json.dumps(out))
