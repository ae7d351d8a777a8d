"""Verifies a pincer agent manifest with an implementation that is not
pincer's: Python's `cryptography` for Ed25519 and the standard library for
the canonical form.

Usage: verify_manifest.py MANIFEST.json
Exit 0 and print "verified" when the signature holds; exit 1 otherwise.

For a manifest whose member names are ASCII and whose numbers are integers
(pincer's are; checked below), RFC 8785 is exactly `json.dumps` with sorted
keys, no whitespace and no ASCII escaping: Python sorts by code point, which
is UTF-16 order for ASCII, escapes the same control characters, and writes
integers the same way.
"""

import base64
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def check_subset(v, path="manifest"):
    if isinstance(v, dict):
        for k, x in v.items():
            if not k.isascii():
                sys.exit(f"{path}: member name {k!r} is not ASCII; this check cannot canonicalise it")
            check_subset(x, f"{path}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            check_subset(x, f"{path}[{i}]")
    elif isinstance(v, float):
        sys.exit(f"{path}: a non-integer number; this check cannot canonicalise it")


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    manifest = doc["manifest"]
    check_subset(manifest)
    if doc["signature"]["alg"] != "ed25519" or doc["signature"]["canonicalization"] != "RFC8785":
        sys.exit("unexpected signature block: %r" % doc["signature"])
    key_b64 = doc["public_key"]
    if manifest["public_key"]["key"] != key_b64:
        sys.exit("the top-level key differs from the signed one")
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(key_b64, validate=True))
    sig = base64.b64decode(doc["signature"]["signature"], validate=True)
    canonical = json.dumps(
        manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    try:
        key.verify(sig, canonical)
    except InvalidSignature:
        print("signature does not verify", file=sys.stderr)
        sys.exit(1)
    print("verified")


if __name__ == "__main__":
    main()
