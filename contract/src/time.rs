//! Timestamps: RFC 3339 with an offset on input, UTC (`…Z`) on output.
//!
//! The contract wants "带时区 ISO 8601" everywhere; we accept any RFC 3339 time with an
//! explicit offset and always send UTC. A time without an offset is invalid input (we
//! never guess a zone for data we received).

use chrono::{DateTime, FixedOffset, SecondsFormat, Utc};

/// Parses an RFC 3339 timestamp that carries an offset (`Z` or `±hh:mm`).
pub fn parse_rfc3339(s: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(s).ok()
}

/// Formats a time as RFC 3339 UTC with second precision, e.g. `2026-08-06T08:03:00Z`.
pub fn format_utc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Formats a time as RFC 3339 UTC with millisecond precision (for journals and ordering).
pub fn format_utc_millis(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_an_offset() {
        assert!(parse_rfc3339("2026-08-17T08:00:00Z").is_some());
        assert!(parse_rfc3339("2026-11-30T08:02:10+08:00").is_some());
        assert!(parse_rfc3339("2026-08-17T08:00:00").is_none());
        assert!(parse_rfc3339("2026-08-17 08:00:00").is_none());
        assert!(parse_rfc3339("").is_none());
    }

    #[test]
    fn sends_utc() {
        let t = parse_rfc3339("2026-11-30T08:02:10+08:00").unwrap();
        assert_eq!(format_utc(t.with_timezone(&Utc)), "2026-11-30T00:02:10Z");
    }
}
