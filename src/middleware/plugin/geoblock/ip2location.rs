//! IP2Location's BIN databases (the LITE DB1 the GeoBlock plugin ships,
//! and every larger DB, whose first column is the country), read whole
//! into sorted tables of range starts.
//!
//! The layout: a header of little-endian fields (database type, columns,
//! date, then for IPv4 and IPv6 the row count and the 1-based offset of
//! the first row), then rows of `ip_from` (4 bytes for IPv4, 16 for IPv6)
//! followed by 4-byte columns; the country column holds the offset of a
//! length-prefixed text, the ISO 3166-1 alpha-2 code (`-` where the range
//! has none: reserved and private ranges). A row's range ends where the
//! next row's begins.

use std::net::IpAddr;

/// Why a file is not a database this reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DatabaseError {
    /// Shorter than its header says.
    #[error("the file ends at byte {len}, before the {what} its header points at")]
    Truncated {
        /// The file's length.
        len: usize,
        /// What was being read.
        what: &'static str,
    },
    /// A header that no IP2Location database has.
    #[error("not an IP2Location BIN database ({reason})")]
    NotBin {
        /// What is wrong with the header.
        reason: String,
    },
}

/// One address family's table: where each range starts, and its country.
#[derive(Debug, Default)]
struct Table<T> {
    starts: Vec<T>,
    countries: Vec<u16>,
}

impl<T: Ord + Copy> Table<T> {
    fn find(&self, ip: T) -> Option<u16> {
        // The last range starting at or before the address.
        let at = self.starts.partition_point(|s| *s <= ip).checked_sub(1)?;
        self.countries.get(at).copied()
    }
}

/// A country database.
#[derive(Debug, Default)]
pub struct Countries {
    v4: Table<u32>,
    v6: Table<u128>,
    /// The distinct codes, indexed by the tables.
    codes: Vec<Box<str>>,
    /// The database's date (`YYYY-MM-DD`), for the log.
    pub date: String,
}

/// The header's fields this reads.
struct Header {
    columns: usize,
    v4_count: usize,
    v4_base: usize,
    v6_count: usize,
    v6_base: usize,
}

impl Countries {
    /// Reads a whole database.
    pub fn parse(bytes: &[u8]) -> Result<Self, DatabaseError> {
        let h = header(bytes)?;
        let mut db = Countries {
            date: format!("20{:02}-{:02}-{:02}", bytes[2], bytes[3], bytes[4]),
            ..Countries::default()
        };
        let mut codes = std::collections::HashMap::new();
        let v4_size = 4 * h.columns;
        for i in 0..h.v4_count {
            let row = h.v4_base - 1 + i * v4_size;
            let start = u32_at(bytes, row, "an IPv4 row")?;
            let code = db.code_at(bytes, u32_at(bytes, row + 4, "an IPv4 row")?, &mut codes)?;
            db.v4.starts.push(start);
            db.v4.countries.push(code);
        }
        let v6_size = 16 + 4 * (h.columns - 1);
        for i in 0..h.v6_count {
            let row = h.v6_base - 1 + i * v6_size;
            let start = bytes.get(row..row + 16).ok_or(DatabaseError::Truncated {
                len: bytes.len(),
                what: "an IPv6 row",
            })?;
            let start = u128::from_le_bytes(start.try_into().expect("16 bytes"));
            let code = db.code_at(bytes, u32_at(bytes, row + 16, "an IPv6 row")?, &mut codes)?;
            db.v6.starts.push(start);
            db.v6.countries.push(code);
        }
        Ok(db)
    }

    /// The index of the code whose text is at `at`, read once per offset.
    fn code_at(
        &mut self,
        bytes: &[u8],
        at: u32,
        seen: &mut std::collections::HashMap<u32, u16>,
    ) -> Result<u16, DatabaseError> {
        if let Some(code) = seen.get(&at) {
            return Ok(*code);
        }
        let truncated = DatabaseError::Truncated {
            len: bytes.len(),
            what: "a country code",
        };
        let at = at as usize;
        let len = usize::from(*bytes.get(at).ok_or(truncated.clone())?);
        let text = bytes.get(at + 1..at + 1 + len).ok_or(truncated)?;
        let text = String::from_utf8_lossy(text).trim().to_ascii_uppercase();
        let index = match self.codes.iter().position(|c| **c == *text) {
            Some(i) => i,
            None => {
                self.codes.push(text.into());
                self.codes.len() - 1
            }
        };
        let index = u16::try_from(index).map_err(|_| DatabaseError::NotBin {
            reason: "more distinct countries than any database holds".to_owned(),
        })?;
        seen.insert(at as u32, index);
        Ok(index)
    }

    /// The country of `ip` (`-` where the database has none); None when
    /// the database has no table for its family.
    pub fn country(&self, ip: IpAddr) -> Option<&str> {
        let code = match ip.to_canonical() {
            IpAddr::V4(v4) => self.v4.find(u32::from(v4)).or_else(|| {
                // An IPv6-only table holds IPv4 as mapped addresses.
                self.v6.find(u128::from(v4.to_ipv6_mapped()))
            }),
            IpAddr::V6(v6) => self.v6.find(u128::from(v6)),
        }?;
        self.codes.get(usize::from(code)).map(|c| &**c)
    }
}

fn header(bytes: &[u8]) -> Result<Header, DatabaseError> {
    let not_bin = |reason: &str| DatabaseError::NotBin {
        reason: reason.to_owned(),
    };
    if bytes.len() < 29 {
        return Err(not_bin("shorter than its header"));
    }
    let columns = usize::from(bytes[1]);
    if columns < 2 {
        return Err(not_bin("no country column"));
    }
    let field = |at: usize| u32_at(bytes, at, "the header").map(|v| v as usize);
    let h = Header {
        columns,
        v4_count: field(5)?,
        v4_base: field(9)?,
        v6_count: field(13)?,
        v6_base: field(17)?,
    };
    if (h.v4_count > 0 && h.v4_base == 0) || (h.v6_count > 0 && h.v6_base == 0) {
        return Err(not_bin("a table starts at offset 0"));
    }
    if h.v4_count + h.v6_count == 0 {
        return Err(not_bin("no rows"));
    }
    // Checked before the tables are sized, so a bad header cannot ask for
    // more memory than the file could fill.
    let v4_end = h.v4_base.saturating_sub(1) + h.v4_count * 4 * columns;
    let v6_end = h.v6_base.saturating_sub(1) + h.v6_count * (16 + 4 * (columns - 1));
    if v4_end.max(v6_end) > bytes.len() {
        return Err(DatabaseError::Truncated {
            len: bytes.len(),
            what: "the rows",
        });
    }
    Ok(h)
}

fn u32_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u32, DatabaseError> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
        .ok_or(DatabaseError::Truncated {
            len: bytes.len(),
            what,
        })
}

/// Writes a DB1 database of these ranges (start, country), each family
/// sorted by start: what the tests here and the integration tests read.
pub fn write_db1(v4: &[(std::net::Ipv4Addr, &str)], v6: &[(std::net::Ipv6Addr, &str)]) -> Vec<u8> {
    const HEADER: usize = 64;
    let v4_base = HEADER + 1;
    let v6_base = v4_base + v4.len() * 8;
    let strings_at = v6_base - 1 + v6.len() * 20;
    let mut strings: Vec<u8> = Vec::new();
    let mut offsets = std::collections::HashMap::new();
    let mut offset_of = |code: &str| -> u32 {
        *offsets.entry(code.to_owned()).or_insert_with(|| {
            let at = (strings_at + strings.len()) as u32;
            strings.push(code.len() as u8);
            strings.extend_from_slice(code.as_bytes());
            at
        })
    };
    let mut out = vec![0u8; HEADER];
    out[0] = 1;
    out[1] = 2;
    out[2] = 26;
    out[3] = 12;
    out[4] = 1;
    for (at, v) in [(5, v4.len()), (9, v4_base), (13, v6.len()), (17, v6_base)] {
        out[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
    }
    for (ip, code) in v4 {
        out.extend_from_slice(&u32::from(*ip).to_le_bytes());
        out.extend_from_slice(&offset_of(code).to_le_bytes());
    }
    for (ip, code) in v6 {
        out.extend_from_slice(&u128::from(*ip).to_le_bytes());
        out.extend_from_slice(&offset_of(code).to_le_bytes());
    }
    out.extend_from_slice(&strings);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        write_db1(
            &[
                ("0.0.0.0".parse().unwrap(), "-"),
                ("127.0.0.0".parse().unwrap(), "DE"),
                ("127.0.1.0".parse().unwrap(), "FR"),
                ("127.0.2.0".parse().unwrap(), "-"),
            ],
            &[
                ("::".parse().unwrap(), "-"),
                ("2001:db8::".parse().unwrap(), "CH"),
                ("2001:db9::".parse().unwrap(), "-"),
            ],
        )
    }

    #[test]
    fn ranges_end_where_the_next_begins() {
        let db = Countries::parse(&sample()).unwrap();
        let country = |ip: &str| db.country(ip.parse().unwrap());
        assert_eq!(country("127.0.0.0"), Some("DE"));
        assert_eq!(country("127.0.0.255"), Some("DE"));
        assert_eq!(country("127.0.1.7"), Some("FR"));
        assert_eq!(country("127.0.2.1"), Some("-"));
        assert_eq!(country("10.1.1.1"), Some("-"));
        assert_eq!(country("::ffff:127.0.1.1"), Some("FR"));
        assert_eq!(country("2001:db8::1"), Some("CH"));
        assert_eq!(country("2001:db9::1"), Some("-"));
        assert_eq!(db.date, "2026-12-01");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_refused_not_read_past_its_end() {
        assert!(matches!(
            Countries::parse(b"hello"),
            Err(DatabaseError::NotBin { .. })
        ));
        let whole = sample();
        for cut in [30, 70, whole.len() - 2] {
            assert!(Countries::parse(&whole[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge = whole;
        huge[5..9].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            Countries::parse(&huge),
            Err(DatabaseError::Truncated { .. })
        ));
    }
}
