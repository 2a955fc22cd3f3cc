//! Parsing of human-written durations, as the configuration's spellings
//! ([`CommitLogMode::parse`](crate::CommitLogMode::parse)) read them: an
//! integer with a unit `ms`, `s`, `m`, `h` (plain numbers are seconds):
//! `30s`, `5m`, `250ms`. (Sizes and counts are parsed by the load
//! generator, `replica-stress`, which alone reads them.)
//!
//! The parser reports a clear [`Error::InvalidOption`] naming the option,
//! the value and the accepted form; overflow is an error, never a wrap.

use std::time::Duration;

use crate::error::Error;

fn invalid(name: &'static str, value: &str, expected: &str) -> Error {
    Error::InvalidOption {
        name,
        value: value.to_owned(),
        expected: expected.to_owned(),
    }
}

/// Splits a human-written quantity into its leading unsigned integer and
/// the unit after it, both trimmed: `"250ms"` is `(250, "ms")`, `" 64 KiB"`
/// is `(64, "KiB")`. `None` without leading digits or for a number beyond
/// `u64`. The load generator's size and count parsers read their units
/// from it too, so every quantity is split the same way.
///
/// ```
/// assert_eq!(replica::units::split_number("250ms"), Some((250, "ms")));
/// assert_eq!(replica::units::split_number("MiB"), None);
/// ```
pub fn split_number(s: &str) -> Option<(u64, &str)> {
    let s = s.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let (number, unit) = s.split_at(digits);
    Some((number.parse().ok()?, unit.trim()))
}

const DURATION_FORM: &str = "a duration such as 30s, 250ms, 5m or 1h";

/// Parses a duration; `name` is the option, for the error message.
pub fn parse_duration(name: &'static str, value: &str) -> Result<Duration, Error> {
    let (n, unit) = split_number(value).ok_or_else(|| invalid(name, value, DURATION_FORM))?;
    let millis_per_unit: u64 = match unit.to_ascii_lowercase().as_str() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        _ => return Err(invalid(name, value, DURATION_FORM)),
    };
    n.checked_mul(millis_per_unit)
        .map(Duration::from_millis)
        .ok_or_else(|| invalid(name, value, "a duration below 2^64 milliseconds"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("d", "30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("d", "30s").unwrap(), Duration::from_secs(30));
        assert_eq!(
            parse_duration("d", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(parse_duration("d", "5m").unwrap(), Duration::from_secs(300));
        assert_eq!(
            parse_duration("d", "1h").unwrap(),
            Duration::from_secs(3600)
        );
        let e = parse_duration("--duration", "3 fortnights")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--duration") && e.contains("30s"), "{e}");
        assert!(parse_duration("d", "99999999999999999h").is_err());
    }
}
