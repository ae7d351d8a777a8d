//! Property tests: hex round trips, address parsing never panics, TMP102
//! encode/decode.

use pincer_hw::sim::tmp102;
use pincer_hw::{I2cAddr, hex_string, parse_hex_bytes};
use proptest::prelude::*;

proptest! {
    #[test]
    fn hex_round_trips(bytes in proptest::collection::vec(any::<u8>(), 1..300)) {
        prop_assert_eq!(parse_hex_bytes("data", &hex_string(&bytes)).unwrap(), bytes.clone());
        // The contiguous form too.
        let contiguous: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        prop_assert_eq!(parse_hex_bytes("data", &format!("0x{contiguous}")).unwrap(), bytes);
    }

    #[test]
    fn address_parse_never_panics(s in "\\PC*") {
        if let Ok(a) = I2cAddr::parse(&s) {
            prop_assert!((I2cAddr::FIRST..=I2cAddr::LAST).contains(&a.get()));
        }
    }

    #[test]
    fn address_parse_accepts_what_display_prints(v in 0x03u8..=0x77) {
        let a = I2cAddr::new(v).unwrap();
        prop_assert_eq!(I2cAddr::parse(&a.to_string()).unwrap(), a);
        prop_assert_eq!(I2cAddr::parse(&v.to_string()).unwrap(), a);
    }

    /// Whatever the text, the parse either gives the bytes the text spells
    /// (formatting them back and parsing again is the same) or an error
    /// naming the field; never a panic, never bytes from a bad digit.
    #[test]
    fn hex_parse_is_exact_or_names_the_field(s in "[0-9a-fA-FxX ,g]{0,40}") {
        match parse_hex_bytes("data", &s) {
            Ok(bytes) => {
                prop_assert!(!bytes.is_empty());
                prop_assert!(!s.contains('g'), "a non-hex digit was accepted: {:?}", s);
                let again = parse_hex_bytes("data", &pincer_hw::hex_string(&bytes)).unwrap();
                prop_assert_eq!(again, bytes);
            }
            Err(e) => {
                prop_assert_eq!(e.field(), Some("data"));
            }
        }
    }

    #[test]
    fn tmp102_round_trip(counts in -880i32..=2047) {
        // -55 °C to 127.9375 °C (the 12-bit format's top; 128 °C saturates there).
        let c = f64::from(counts) * 0.0625;
        prop_assert_eq!(tmp102::decode(tmp102::encode(c, false), false), c);
        prop_assert_eq!(tmp102::decode(tmp102::encode(c, true), true), c);
    }

    #[test]
    fn tmp102_extended_reaches_150(counts in 2048i32..=2400) {
        let c = f64::from(counts) * 0.0625;
        prop_assert_eq!(tmp102::decode(tmp102::encode(c, true), true), c);
        prop_assert_eq!(tmp102::decode(tmp102::encode(c, false), false), 127.9375);
    }
}
