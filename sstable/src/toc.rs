//! The TOC and Digest components, both text.
//!
//! TOC: one component file suffix per line, each followed by `\n`, exactly
//! the components of [`Component::ALL`] in that order. Digest: the crc32c
//! of the whole Data component as unsigned decimal, no newline.

use crate::decoder::Origin;
use crate::error::Component;
use crate::error::Error;

/// The TOC's text.
pub(crate) fn encode_toc() -> String {
    let mut s = String::new();
    for c in Component::ALL {
        s.push_str(c.file_suffix());
        s.push('\n');
    }
    s
}

/// Checks a TOC: it must list exactly the components this version writes.
pub(crate) fn check_toc(bytes: &[u8], origin: Origin<'_>) -> Result<(), Error> {
    let expected = encode_toc();
    if bytes == expected.as_bytes() {
        return Ok(());
    }
    let at = bytes
        .iter()
        .zip(expected.as_bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(bytes.len().min(expected.len()));
    Err(origin.corrupt(
        at as u64,
        format!(
            "table of contents differs from the expected component list ({})",
            Component::ALL.map(|c| c.file_suffix()).join(", ")
        ),
    ))
}

/// The Digest's text for a Data crc.
pub(crate) fn encode_digest(crc: u32) -> String {
    crc.to_string()
}

/// Parses a Digest: canonical unsigned decimal (no sign, no leading zero).
pub(crate) fn decode_digest(bytes: &[u8], origin: Origin<'_>) -> Result<u32, Error> {
    let canonical = !bytes.is_empty()
        && bytes.len() <= 10
        && bytes.iter().all(u8::is_ascii_digit)
        && (bytes[0] != b'0' || bytes.len() == 1);
    let value = std::str::from_utf8(bytes)
        .ok()
        .filter(|_| canonical)
        .and_then(|s| s.parse::<u32>().ok());
    value.ok_or_else(|| {
        origin.corrupt(
            0,
            format!(
                "digest {:?} is not a decimal crc32c",
                String::from_utf8_lossy(bytes)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toc_and_digest() {
        let p = std::path::PathBuf::from("t");
        let o = Origin {
            file: &p,
            component: Component::Toc,
        };
        check_toc(encode_toc().as_bytes(), o).unwrap();
        let toc = encode_toc();
        assert!(check_toc(&toc.as_bytes()[..toc.len() - 1], o).is_err());
        assert_eq!(
            decode_digest(encode_digest(4_000_000_000).as_bytes(), o).unwrap(),
            4_000_000_000
        );
        for bad in ["", "01", "+1", "4294967296", "12a"] {
            assert!(decode_digest(bad.as_bytes(), o).is_err(), "{bad}");
        }
    }
}
