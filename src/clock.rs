//! The one clock at the ground: seconds and milliseconds since the Unix
//! epoch, milliseconds by the monotonic clock, and wall-clock times broken
//! into UTC calendar parts as logs and the API write them, without a date
//! crate.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch by the wall clock (0 if the clock
/// reads before 1970).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Seconds since the Unix epoch by the wall clock (0 if the clock reads
/// before 1970).
pub fn unix_secs() -> u64 {
    unix_ms() / 1000
}

/// Seconds since the Unix epoch as a signed time, as certificates' dates
/// are kept.
pub fn unix_time() -> i64 {
    i64::try_from(unix_secs()).unwrap_or(i64::MAX)
}

/// Milliseconds by the monotonic clock since the process's first look at
/// it, plus one, so that 0 can mean "never".
pub fn now_ms() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    u64::try_from(origin.elapsed().as_millis())
        .unwrap_or(u64::MAX - 1)
        .saturating_add(1)
}

/// A time broken into its calendar parts, in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    /// Year.
    pub year: i64,
    /// Month, 1–12.
    pub month: u32,
    /// Day of the month, 1–31.
    pub day: u32,
    /// Hour, 0–23.
    pub hour: u64,
    /// Minute, 0–59.
    pub minute: u64,
    /// Second, 0–59.
    pub second: u64,
    /// Nanoseconds within the second.
    pub nanos: u32,
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
pub(crate) fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

impl Utc {
    /// The parts of `t` (times before 1970 read as 1970).
    pub fn of(t: SystemTime) -> Utc {
        let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        let (year, month, day) = civil((secs / 86_400) as i64);
        let rem = secs % 86_400;
        Utc {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem % 3600 / 60,
            second: rem % 60,
            nanos: since.subsec_nanos(),
        }
    }

    /// `2026-01-02T15:04:05Z`: RFC 3339 to the second, as Traefik's own
    /// log stamps its lines.
    pub fn seconds(&self) -> String {
        let Utc {
            year,
            month,
            day,
            hour,
            minute,
            second,
            ..
        } = *self;
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
    }

    /// `2026-01-02T15:04:05.123456789Z`: RFC 3339 with nanoseconds, with
    /// trailing zeros of the fraction left out as Go writes a `time.Time`
    /// in JSON.
    pub fn nanos(&self) -> String {
        let mut s = self.seconds();
        s.pop();
        if self.nanos > 0 {
            let fraction = format!("{:09}", self.nanos);
            s.push('.');
            s.push_str(fraction.trim_end_matches('0'));
        }
        s.push('Z');
        s
    }

    /// `02/Jan/2006:15:04:05 +0000`, the Common Log Format's stamp.
    pub fn clf(&self) -> String {
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let month = MONTHS
            .get((self.month as usize).wrapping_sub(1))
            .copied()
            .unwrap_or("Jan");
        format!(
            "{:02}/{month}/{}:{:02}:{:02}:{:02} +0000",
            self.day, self.year, self.hour, self.minute, self.second
        )
    }

    /// `2006-01-02T15-04-05.000`: the stamp in a rotated file's name, as
    /// Traefik's rotation writes it (sorts in time order as text).
    pub fn file_stamp(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}.{:03}",
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.nanos / 1_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn stamps_render_in_utc() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        let u = Utc::of(t);
        assert_eq!(u.seconds(), "2026-11-18T11:06:40Z");
        assert_eq!(u.nanos(), "2026-11-18T11:06:40Z");
        assert_eq!(u.clf(), "18/Nov/2026:11:06:40 +0000");
        assert_eq!(u.file_stamp(), "2026-11-18T11-06-40.000");
        let u = Utc::of(t + Duration::from_nanos(120_500_000));
        assert_eq!(u.nanos(), "2026-11-18T11:06:40.1205Z");
        assert_eq!(u.file_stamp(), "2026-11-18T11-06-40.120");
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
    }
}
