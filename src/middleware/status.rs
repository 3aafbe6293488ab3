//! Status code lists as Traefik writes them: `500`, `500,502`, `500-599`,
//! `404,418,500-599`.

use super::MiddlewareError;
use http::StatusCode;

/// Inclusive ranges of status codes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusRanges(Vec<(u16, u16)>);

impl StatusRanges {
    /// Parses every entry (each may hold several comma-separated parts).
    pub fn parse(entries: &[String], option: &'static str) -> Result<Self, MiddlewareError> {
        let mut out = Vec::new();
        for entry in entries {
            for part in entry.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let bad = || {
                    MiddlewareError::invalid(
                        option,
                        format!("`{part}` is not a status or a range like `500-599`"),
                    )
                };
                let (lo, hi) = match part.split_once('-') {
                    Some((a, b)) => (
                        a.trim().parse::<u16>().map_err(|_| bad())?,
                        b.trim().parse::<u16>().map_err(|_| bad())?,
                    ),
                    None => {
                        let n = part.parse::<u16>().map_err(|_| bad())?;
                        (n, n)
                    }
                };
                if lo > hi || !(100..=999).contains(&lo) || hi > 999 {
                    return Err(bad());
                }
                out.push((lo, hi));
            }
        }
        Ok(StatusRanges(out))
    }

    /// Whether `status` is in one of the ranges.
    pub fn contains(&self, status: StatusCode) -> bool {
        let s = status.as_u16();
        self.0.iter().any(|(lo, hi)| (*lo..=*hi).contains(&s))
    }

    /// No range at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges_parse() {
        let r =
            StatusRanges::parse(&["404,418".into(), "500-599".into()], "status").expect("parses");
        for s in [404, 418, 500, 550, 599] {
            assert!(r.contains(StatusCode::from_u16(s).expect("status")), "{s}");
        }
        for s in [200, 403, 419, 499] {
            assert!(!r.contains(StatusCode::from_u16(s).expect("status")), "{s}");
        }
        for bad in ["5xx", "600-500", "50", "500-"] {
            assert!(
                StatusRanges::parse(&[bad.into()], "status").is_err(),
                "{bad}"
            );
        }
    }
}
