//! When to act: renewal time, backoff after failures, the ACME server's own
//! "retry after", and the cap on new orders. Pure functions of time.

use std::collections::VecDeque;

/// Renewal starts when this share of the lifetime is left, or earlier
/// when `certificatesDuration` asks for a shorter window.
const RENEW_SHARE: i64 = 3;
/// First wait after a failed order, seconds.
const BACKOFF_FIRST: i64 = 5;
/// Longest wait between two attempts, seconds (1 hour).
const BACKOFF_MOST: i64 = 3600;
/// Longest "retry after" from a server that is honoured, seconds (7 days).
const RETRY_AFTER_MOST: i64 = 7 * 24 * 3600;
/// New orders a resolver may place in one hour.
pub const ORDERS_PER_HOUR: usize = 30;

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;

/// How long before expiry a certificate is renewed, from the resolver's
/// `certificatesDuration` (hours), as Traefik reads it: a third of a
/// 90-day (30 days) or 30-day (10 days) duration, 4 months for a year or
/// more, 2 days from 6 days, 6 hours from a day, and 20 minutes below.
pub fn renew_window(certificates_duration_hours: u64) -> i64 {
    match certificates_duration_hours {
        h if h >= 365 * 24 => 120 * DAY,
        h if h >= 90 * 24 => 30 * DAY,
        h if h >= 30 * 24 => 10 * DAY,
        h if h >= 6 * 24 => 2 * DAY,
        h if h >= 24 => 6 * HOUR,
        _ => 20 * 60,
    }
}

/// When a certificate valid from `not_before` to `not_after` is renewed:
/// `window` before expiry (see [`renew_window`]), but never earlier than a
/// third of its lifetime before it, so a certificate shorter-lived than
/// `certificatesDuration` says is not ordered again at once (Traefik would
/// order it again at every check).
pub fn renew_at(not_before: i64, not_after: i64, window: i64) -> i64 {
    let lifetime = (not_after - not_before).max(0);
    not_after - (lifetime / RENEW_SHARE).min(window.max(0))
}

/// When to try again after the `failures`-th failure in a row at `now`:
/// 5 s, 10 s, 20 s… up to an hour, and never before the server's
/// `retry_after` (capped at 7 days).
pub fn next_attempt(now: i64, failures: u32, retry_after: Option<i64>) -> i64 {
    let exponent = failures.saturating_sub(1).min(20);
    let backoff = (BACKOFF_FIRST << exponent).min(BACKOFF_MOST);
    let mut at = now + backoff;
    if let Some(server) = retry_after {
        at = at.max(server.min(now + RETRY_AFTER_MOST));
    }
    at
}

/// Longest wait between two attempts to write a certificate to an
/// unwritable storage, seconds: a freed disk is used within a minute.
const STORE_RETRY_MOST: i64 = 60;

/// Seconds to wait after the `failures`-th failed write of a certificate:
/// 5 s, 10 s, 20 s, 40 s, then every minute.
pub fn store_retry(failures: u32) -> i64 {
    let exponent = failures.saturating_sub(1).min(20);
    (BACKOFF_FIRST << exponent).min(STORE_RETRY_MOST)
}

/// The orders a resolver placed in the last hour.
#[derive(Debug, Default)]
pub struct OrderWindow {
    placed: VecDeque<i64>,
}

impl OrderWindow {
    /// Takes a slot for a new order at `now`, or says when one frees up.
    pub fn take(&mut self, now: i64) -> Result<(), i64> {
        while self.placed.front().is_some_and(|&t| t <= now - 3600) {
            self.placed.pop_front();
        }
        if self.placed.len() >= ORDERS_PER_HOUR {
            return Err(self.placed.front().map_or(now, |&t| t + 3600));
        }
        self.placed.push_back(now);
        Ok(())
    }
}

/// The time in a Let's Encrypt problem detail such as "…, retry after
/// 2024-09-17 21:26:54 UTC: see https://…", as seconds since the epoch.
/// (rustls-acme's client drops response headers on errors, so the
/// `Retry-After` header itself is out of reach; Let's Encrypt repeats it in
/// the detail.)
pub fn retry_after_in(detail: &str) -> Option<i64> {
    let lower = detail.to_ascii_lowercase();
    let at = lower.find("retry after ")? + "retry after ".len();
    let text = detail.get(at..)?;
    let date = text.get(..10)?;
    let time = text.get(11..19)?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86400 + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86400;

    #[test]
    fn renewal_follows_certificates_duration_within_a_third_of_the_lifetime() {
        let default = renew_window(2160);
        assert_eq!(default, 30 * DAY);
        assert_eq!(renew_at(0, 90 * DAY, default), 60 * DAY);
        assert_eq!(renew_at(0, 6 * DAY, default), 4 * DAY);
        assert_eq!(renew_at(0, 365 * DAY, default), 335 * DAY);
        assert_eq!(renew_at(100, 160, default), 140);
        assert_eq!(renew_at(10, 5, default), 5);
        // Traefik's table.
        for (hours, window) in [
            (8760, 120 * DAY),
            (2160, 30 * DAY),
            (720, 10 * DAY),
            (144, 2 * DAY),
            (24, 6 * HOUR),
            (23, 20 * 60),
            (0, 20 * 60),
        ] {
            assert_eq!(renew_window(hours), window, "{hours} h");
        }
        // A one-year certificate with a one-year duration: 4 months before.
        assert_eq!(renew_at(0, 365 * DAY, renew_window(8760)), 245 * DAY);
        // A 90-day certificate told it lasts 6 days: 2 days before.
        assert_eq!(renew_at(0, 90 * DAY, renew_window(144)), 88 * DAY);
    }

    #[test]
    fn backoff_doubles_to_an_hour_and_honours_the_server() {
        let waits: Vec<i64> = (1..=12).map(|f| next_attempt(0, f, None)).collect();
        assert_eq!(&waits[..5], &[5, 10, 20, 40, 80]);
        assert_eq!(waits[11], 3600);
        assert_eq!(next_attempt(1000, 1, Some(5000)), 5000);
        assert_eq!(next_attempt(1000, 1, Some(900)), 1005);
        assert_eq!(next_attempt(0, 1, Some(100 * DAY)), 7 * DAY);
        assert_eq!(next_attempt(0, u32::MAX, None), 3600);
    }

    #[test]
    fn storage_writes_are_retried_at_least_every_minute() {
        let waits: Vec<i64> = (1..=7).map(store_retry).collect();
        assert_eq!(waits, [5, 10, 20, 40, 60, 60, 60]);
        assert_eq!(store_retry(u32::MAX), 60);
    }

    #[test]
    fn the_order_window_caps_orders_per_hour() {
        let mut w = OrderWindow::default();
        for i in 0..ORDERS_PER_HOUR as i64 {
            assert_eq!(w.take(i), Ok(()));
        }
        assert_eq!(w.take(100), Err(3600));
        assert_eq!(w.take(3600), Ok(()));
    }

    #[test]
    fn retry_after_is_read_from_lets_encrypt_details() {
        let detail = "too many certificates (5) already issued for this exact set of identifiers in the last 168h0m0s, retry after 2024-09-17 21:26:54 UTC: see https://letsencrypt.org/docs/rate-limits/";
        assert_eq!(retry_after_in(detail), Some(1_726_608_414));
        assert_eq!(
            retry_after_in("Retry after 1970-01-02 00:00:00 UTC"),
            Some(DAY)
        );
        assert_eq!(retry_after_in("no time here"), None);
        assert_eq!(retry_after_in("retry after soon"), None);
        assert_eq!(retry_after_in("retry after 2024-13-01 00:00:00"), None);
    }
}
