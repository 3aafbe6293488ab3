//! A span of time written the way Traefik writes it: `10s`, `250ms`,
//! `1m30s`, `2.5s`, or a bare number of seconds.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[cfg(test)]
mod tests;

/// A non-negative span of time as it appears in configuration.
///
/// Accepted forms: a sequence of number-and-unit pairs (`10s`, `250ms`,
/// `1m30s`, `1h`, `2.5s`, `100us`, `100µs`, `10ns`); `0`; or a bare integer or
/// decimal number, as a string or as a YAML/TOML number, meaning seconds (as
/// in Traefik). Units are `h`, `m`, `s`, `ms`, `us` (also `µs`) and `ns`.
/// Serializes to a canonical string such as `10s`, `250ms` or `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub std::time::Duration);

/// Why a piece of text is not a [`Duration`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// The text doesn't follow the duration syntax at all.
    #[error("`{input}` is not a duration (try `10s` or `250ms`)")]
    Invalid {
        /// The text as given.
        input: String,
    },
    /// A number is followed by a unit that isn't known.
    #[error("`{input}` is not a duration: unknown unit `{unit}` (use h, m, s, ms, us or ns)")]
    UnknownUnit {
        /// The text as given.
        input: String,
        /// The unit that was not recognised.
        unit: String,
    },
    /// The text starts with a minus sign.
    #[error("`{input}` is negative; a duration must be zero or more")]
    Negative {
        /// The text as given.
        input: String,
    },
    /// The value does not fit in a duration (hundreds of years or more).
    #[error("`{input}` is too long a duration")]
    TooLarge {
        /// The text as given.
        input: String,
    },
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(std::time::Duration::ZERO);

    /// A duration of `secs` seconds.
    pub const fn from_secs(secs: u64) -> Duration {
        Duration(std::time::Duration::from_secs(secs))
    }

    /// A duration of `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Duration {
        Duration(std::time::Duration::from_millis(millis))
    }

    /// The standard-library duration this wraps.
    pub const fn get(self) -> std::time::Duration {
        self.0
    }

    /// Whether this is zero, which several timeouts read as "no limit".
    pub const fn is_zero(self) -> bool {
        self.0.is_zero()
    }

    /// `None` for zero, the duration otherwise: handy for timeouts where
    /// zero means "no limit".
    pub const fn non_zero(self) -> Option<std::time::Duration> {
        if self.0.is_zero() { None } else { Some(self.0) }
    }
}

impl From<std::time::Duration> for Duration {
    fn from(value: std::time::Duration) -> Self {
        Duration(value)
    }
}

impl From<Duration> for std::time::Duration {
    fn from(value: Duration) -> Self {
        value.0
    }
}

/// Unit suffixes with their length in nanoseconds. Longer suffixes that
/// share a first letter come first so `ms` is not read as `m` + `s`.
const UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", NANOS_PER_SEC),
    ("m", 60 * NANOS_PER_SEC),
    ("h", 3_600 * NANOS_PER_SEC),
];

/// A number split into its whole part and up to 18 fractional digits,
/// kept exact so `0.1s` is exactly 100ms.
struct Decimal {
    whole: u128,
    frac: u128,
    frac_digits: u32,
}

/// Most fractional digits kept; further ones are below a nanosecond for
/// every unit and are dropped.
const MAX_FRAC_DIGITS: u32 = 18;

/// Reads `digits[.digits]` from the start of `s`; returns the number and the
/// rest, or `None` if there is no digit at all.
fn take_decimal(s: &str) -> Option<(Decimal, &str)> {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut whole: u128 = 0;
    let mut any_digit = false;
    while let Some(b) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
        // Saturating: an absurdly long number then fails as too large.
        whole = whole
            .saturating_mul(10)
            .saturating_add(u128::from(b - b'0'));
        any_digit = true;
        i += 1;
    }
    let mut frac: u128 = 0;
    let mut frac_digits = 0;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        while let Some(b) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
            if frac_digits < MAX_FRAC_DIGITS {
                frac = frac * 10 + u128::from(b - b'0');
                frac_digits += 1;
            }
            any_digit = true;
            i += 1;
        }
    }
    if !any_digit {
        return None;
    }
    // Only ASCII bytes were consumed, so `i` is on a char boundary.
    Some((
        Decimal {
            whole,
            frac,
            frac_digits,
        },
        s.get(i..)?,
    ))
}

impl Decimal {
    /// This number times `unit` nanoseconds, rounded down; `None` on overflow.
    fn times(&self, unit: u128) -> Option<u128> {
        let whole = self.whole.checked_mul(unit)?;
        // frac < 10^18 and unit <= 3.6e12, so the product fits in u128.
        let frac = self.frac * unit / 10u128.pow(self.frac_digits);
        whole.checked_add(frac)
    }
}

fn from_nanos(nanos: u128, input: &str) -> Result<Duration, DurationError> {
    let secs = u64::try_from(nanos / NANOS_PER_SEC).map_err(|_| DurationError::TooLarge {
        input: input.to_owned(),
    })?;
    // The remainder is below 10^9, so it always fits in u32.
    let sub = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
    Ok(Duration(std::time::Duration::new(secs, sub)))
}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let invalid = || DurationError::Invalid {
            input: input.to_owned(),
        };
        let mut rest = input.trim();
        if let Some(unsigned) = rest.strip_prefix('-') {
            // `-0` is harmless but there is no reason to write it; reject
            // every sign so the rule stays simple to state.
            return Err(if take_decimal(unsigned).is_some() {
                DurationError::Negative {
                    input: input.to_owned(),
                }
            } else {
                invalid()
            });
        }
        if let Some(unsigned) = rest.strip_prefix('+') {
            rest = unsigned;
        }
        let (first, after_first) = take_decimal(rest).ok_or_else(invalid)?;
        if after_first.is_empty() {
            // A bare number is a count of seconds, as in Traefik.
            let nanos = first
                .times(NANOS_PER_SEC)
                .ok_or_else(|| DurationError::TooLarge {
                    input: input.to_owned(),
                })?;
            return from_nanos(nanos, input);
        }
        let mut total: u128 = 0;
        let mut pending = Some((first, after_first));
        while let Some((number, after_number)) = pending.take() {
            let unit_len = after_number
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(after_number.len());
            let (unit, after_unit) = after_number.split_at(unit_len);
            if unit.is_empty() {
                return Err(invalid());
            }
            let Some(&(_, unit_nanos)) = UNITS.iter().find(|(name, _)| *name == unit) else {
                return Err(DurationError::UnknownUnit {
                    input: input.to_owned(),
                    unit: unit.to_owned(),
                });
            };
            let nanos = number
                .times(unit_nanos)
                .and_then(|n| total.checked_add(n))
                .ok_or_else(|| DurationError::TooLarge {
                    input: input.to_owned(),
                })?;
            total = nanos;
            if !after_unit.is_empty() {
                pending = Some(take_decimal(after_unit).ok_or_else(invalid)?);
            }
        }
        from_nanos(total, input)
    }
}

/// Writes `value / scale` with up to nine decimals, trailing zeros removed.
fn write_scaled(f: &mut fmt::Formatter<'_>, value: u128, scale: u128, unit: &str) -> fmt::Result {
    let whole = value / scale;
    let rem = value % scale;
    if rem == 0 {
        return write!(f, "{whole}{unit}");
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{rem:0width$}");
    write!(f, "{whole}.{}{unit}", digits.trim_end_matches('0'))
}

impl fmt::Display for Duration {
    /// The canonical form: `0s`, `10s`, `1.5s`, `1m30s`, `1h`, `2h5m`,
    /// `250ms`, `100us`, `10ns`. It parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        if nanos == 0 {
            return f.write_str("0s");
        }
        if nanos < 1_000 {
            return write!(f, "{nanos}ns");
        }
        if nanos < 1_000_000 {
            return write_scaled(f, nanos, 1_000, "us");
        }
        if nanos < NANOS_PER_SEC {
            return write_scaled(f, nanos, 1_000_000, "ms");
        }
        let hours = nanos / (3_600 * NANOS_PER_SEC);
        let minutes = nanos / (60 * NANOS_PER_SEC) % 60;
        let sub_minute = nanos % (60 * NANOS_PER_SEC);
        if hours > 0 {
            write!(f, "{hours}h")?;
        }
        if minutes > 0 {
            write!(f, "{minutes}m")?;
        }
        if sub_minute > 0 {
            write_scaled(f, sub_minute, NANOS_PER_SEC, "s")?;
        }
        Ok(())
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration such as `10s`, `250ms` or `1m30s`, or a number of seconds")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
        Ok(Duration::from_secs(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
        u64::try_from(v).map(Duration::from_secs).map_err(|_| {
            E::custom(DurationError::Negative {
                input: v.to_string(),
            })
        })
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
        let input = v.to_string();
        if !v.is_finite() {
            return Err(E::custom(DurationError::Invalid { input }));
        }
        if v.is_sign_negative() && v != 0.0 {
            return Err(E::custom(DurationError::Negative { input }));
        }
        std::time::Duration::try_from_secs_f64(v.abs())
            .map(Duration)
            .map_err(|_| E::custom(DurationError::TooLarge { input }))
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DurationVisitor)
    }
}

/// A span of time that may be negative: Traefik gives a negative value a
/// meaning of its own in a few places (`terminationDelay`: wait forever;
/// `dialKeepAlive`: no keep-alive probes). Written as a [`Duration`] with
/// an optional leading `-`, or a number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SignedDuration {
    /// Below zero.
    pub negative: bool,
    /// The length, without its sign.
    pub magnitude: Duration,
}

impl SignedDuration {
    /// A non-negative span of `d`.
    pub const fn positive(d: std::time::Duration) -> Self {
        SignedDuration {
            negative: false,
            magnitude: Duration(d),
        }
    }

    /// `None` when negative, the span otherwise.
    pub const fn non_negative(self) -> Option<std::time::Duration> {
        if self.negative {
            None
        } else {
            Some(self.magnitude.0)
        }
    }
}

impl FromStr for SignedDuration {
    type Err = DurationError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let trimmed = input.trim();
        let (negative, rest) = match trimmed.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, trimmed),
        };
        let magnitude: Duration = rest.parse().map_err(|e| match e {
            // Report the text as written, sign included.
            DurationError::Invalid { .. } => DurationError::Invalid {
                input: input.to_owned(),
            },
            other => other,
        })?;
        Ok(SignedDuration {
            negative: negative && !magnitude.is_zero(),
            magnitude,
        })
    }
}

impl fmt::Display for SignedDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        self.magnitude.fmt(f)
    }
}

impl Serialize for SignedDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

struct SignedDurationVisitor;

impl Visitor<'_> for SignedDurationVisitor {
    type Value = SignedDuration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration such as `10s`, `250ms` or `-1s`, or a number of seconds")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<SignedDuration, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SignedDuration, E> {
        Ok(SignedDuration::positive(std::time::Duration::from_secs(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SignedDuration, E> {
        Ok(SignedDuration {
            negative: v < 0,
            magnitude: Duration::from_secs(v.unsigned_abs()),
        })
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<SignedDuration, E> {
        let magnitude = DurationVisitor.visit_f64::<E>(v.abs())?;
        Ok(SignedDuration {
            negative: v < 0.0 && !magnitude.is_zero(),
            magnitude,
        })
    }
}

impl<'de> Deserialize<'de> for SignedDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SignedDurationVisitor)
    }
}
