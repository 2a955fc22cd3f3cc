//! Parsing of human-written sizes, counts and durations for the options,
//! and the byte counts of the reports.
//!
//! * Sizes: an integer with an optional unit, case-insensitive:
//!   `B`; binary `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (powers of
//!   1024); decimal `KB`, `MB`, `GB`, `TB` (powers of 1000). `128KiB` is
//!   131072 bytes.
//! * Counts: an integer with an optional decimal multiplier `k`, `m`, `b`
//!   (or `g`), as cassandra-stress writes `n=1M`: `1M` is 1,000,000.
//! * Durations: an integer with a unit `ms`, `s`, `m`, `h` (plain numbers
//!   are seconds): `30s`, `5m`, `250ms`, read by the database's own
//!   parser ([`replica::units::parse_duration`], which its configuration
//!   spellings use too), so both read a duration the same way.
//!
//! Every parser reports a clear [`Error::InvalidOption`] naming the option,
//! the value and the accepted form; overflow is an error, never a wrap.

use std::time::Duration;

use replica::units::split_number;

use crate::error::Error;

fn invalid(name: &'static str, value: &str, expected: &str) -> Error {
    Error::InvalidOption {
        name,
        value: value.to_owned(),
        expected: expected.to_owned(),
    }
}

const SIZE_FORM: &str = "a byte size such as 4096, 64KiB, 512MiB or 2GB";

/// Parses a size in bytes; `name` is the option, for the error message.
pub fn parse_size(name: &'static str, value: &str) -> Result<u64, Error> {
    let (n, unit) = split_number(value).ok_or_else(|| invalid(name, value, SIZE_FORM))?;
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(invalid(name, value, SIZE_FORM)),
    };
    n.checked_mul(multiplier)
        .ok_or_else(|| invalid(name, value, "a size below 2^64 bytes"))
}

const COUNT_FORM: &str = "a count such as 1000, 100k, 1M or 2B";

/// Parses a count; `name` is the option, for the error message.
pub fn parse_count(name: &'static str, value: &str) -> Result<u64, Error> {
    let (n, unit) = split_number(value).ok_or_else(|| invalid(name, value, COUNT_FORM))?;
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "b" | "g" => 1_000_000_000,
        _ => return Err(invalid(name, value, COUNT_FORM)),
    };
    n.checked_mul(multiplier)
        .ok_or_else(|| invalid(name, value, "a count below 2^64"))
}

/// Parses a duration; `name` is the option, for the error message.
pub fn parse_duration(name: &'static str, value: &str) -> Result<Duration, Error> {
    replica::units::parse_duration(name, value).map_err(Error::from)
}

/// Formats a byte count with a binary unit, for reports: `1.5 MiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_size("s", "4096").unwrap(), 4096);
        assert_eq!(parse_size("s", "128KiB").unwrap(), 128 << 10);
        assert_eq!(parse_size("s", "128k").unwrap(), 128 << 10);
        assert_eq!(parse_size("s", "2 MiB").unwrap(), 2 << 20);
        assert_eq!(parse_size("s", "1gib").unwrap(), 1 << 30);
        assert_eq!(parse_size("s", "3MB").unwrap(), 3_000_000);
        assert_eq!(parse_size("s", "7B").unwrap(), 7);
    }

    #[test]
    fn bad_sizes_name_the_option_and_the_form() {
        for bad in ["", "KiB", "-1", "1.5MiB", "12 parsecs", "1XB"] {
            let e = parse_size("--partition-size", bad).unwrap_err().to_string();
            assert!(e.contains("--partition-size"), "{e}");
            assert!(e.contains("64KiB"), "{e}");
        }
        let e = parse_size("--budget", "99999999999TiB")
            .unwrap_err()
            .to_string();
        assert!(e.contains("below 2^64"), "{e}");
        let e = parse_size("--budget", "99999999999999999999")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--budget"), "{e}");
    }

    #[test]
    fn counts_use_decimal_multipliers() {
        assert_eq!(parse_count("n", "1000").unwrap(), 1000);
        assert_eq!(parse_count("n", "100k").unwrap(), 100_000);
        assert_eq!(parse_count("n", "1M").unwrap(), 1_000_000);
        assert_eq!(parse_count("n", "2B").unwrap(), 2_000_000_000);
        assert!(parse_count("n", "1KiB").is_err());
        assert!(parse_count("n", "x").is_err());
        assert!(parse_count("n", "99999999999999B").is_err());
    }

    /// Durations are the database's own parser's (its tests cover the
    /// forms); what this wrapper adds is the load generator's error.
    #[test]
    fn durations_are_the_databases_with_this_crates_error() {
        assert_eq!(
            parse_duration("d", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        let e = parse_duration("--duration", "3 fortnights").unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidOption {
                    name: "--duration",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn bytes_format_with_binary_units() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(128 << 20), "128.0 MiB");
    }
}
