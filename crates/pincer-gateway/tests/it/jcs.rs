//! pincer's JCS against the published RFC 8785 test data and the ES6
//! number-serialisation sequence (see `tests/data/jcs/README.md`).

use pincer_gateway::jcs;
use sha2::{Digest, Sha256};
use std::path::Path;

fn data(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/jcs")
        .join(rel)
}

#[test]
fn the_reference_test_cases() {
    let mut n = 0;
    for entry in std::fs::read_dir(data("input")).expect("input dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name").to_owned();
        let input = std::fs::read_to_string(&path).expect("input");
        let want = std::fs::read(data("output").join(&name)).expect("output");
        let v: serde_json::Value = serde_json::from_str(&input).expect("json");
        let got = jcs::canonicalize(&v);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{name:?}"
        );
        n += 1;
    }
    assert_eq!(n, 6, "all six reference cases ran");
}

/// The doubles of the published sequence, in order.
struct Sequence {
    statics: Vec<u64>,
    idx: usize,
    block: [u8; 32],
    left: Vec<u64>,
}

impl Sequence {
    fn new() -> Sequence {
        let statics = std::fs::read_to_string(data("es6-static.txt"))
            .expect("statics")
            .lines()
            .map(|l| u64::from_str_radix(l, 16).expect("hex"))
            .collect();
        Sequence {
            statics,
            idx: 0,
            block: [0; 32],
            left: Vec::new(),
        }
    }
}

impl Iterator for Sequence {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let i = self.idx;
        self.idx += 1;
        if i < self.statics.len() {
            return Some(self.statics[i]);
        }
        if i < self.statics.len() + 2000 {
            return Some(0x0010000000000000 + (i - self.statics.len()) as u64);
        }
        loop {
            if self.left.is_empty() {
                self.block = Sha256::digest(self.block).into();
                self.left = self
                    .block
                    .chunks(8)
                    .rev()
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect();
            }
            let bits = self.left.pop()?;
            let f = f64::from_bits(bits);
            if f != 0.0 && f.is_finite() {
                return Some(bits);
            }
        }
    }
}

/// The SHA-256 of the first `lines` lines `hex,number\n`.
fn digest(lines: usize) -> String {
    let mut h = Sha256::new();
    let mut line = String::new();
    for bits in Sequence::new().take(lines) {
        line.clear();
        line.push_str(&format!("{bits:x},"));
        jcs::write_number(f64::from_bits(bits), &mut line);
        line.push('\n');
        h.update(line.as_bytes());
    }
    pincer_gateway::keys::hex(&h.finalize())
}

#[test]
fn the_es6_number_sequence_checksums() {
    assert_eq!(
        digest(1000),
        "be18b62b6f69cdab33a7e0dae0d9cfa869fda80ddc712221570f9f40a5878687"
    );
    assert_eq!(
        digest(100_000),
        "22776e6d4b49fa294a0d0f349268e5c28808fe7e0cb2bcbe28f63894e494d4c7"
    );
}

/// A million lines: `cargo test -p pincer-gateway --release -- --ignored`.
#[test]
#[ignore = "a million numbers; run in release"]
fn the_es6_number_sequence_first_million() {
    assert_eq!(
        digest(1_000_000),
        "49415fee2c56c77864931bd3624faad425c3c577d6d74e89a83bc725506dad16"
    );
}
