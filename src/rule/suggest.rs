//! "Did you mean" suggestions for misspelled matcher names.

/// Names from older Traefik versions or from TCP routers, with advice.
const KNOWN_MISTAKES: [(&str, &str); 6] = [
    (
        "Headers",
        "did you mean `Header`? (`Headers` is the Traefik v2 name; `ruleSyntax=v2` reads v2 rules)",
    ),
    (
        "HeadersRegexp",
        "did you mean `HeaderRegexp`? (`HeadersRegexp` is the Traefik v2 name; `ruleSyntax=v2` reads v2 rules)",
    ),
    (
        "HostHeader",
        "did you mean `Host`? (`HostHeader` is the Traefik v2 name; `ruleSyntax=v2` reads v2 rules)",
    ),
    (
        "HostSNI",
        "`HostSNI` is a TCP router matcher; HTTP rules use `Host`",
    ),
    (
        "HostSNIRegexp",
        "`HostSNIRegexp` is a TCP router matcher; HTTP rules use `HostRegexp`",
    ),
    ("ALPN", "`ALPN` is a TCP router matcher"),
];

/// Advice for a name an HTTP rule does not know but Traefik once did, or
/// a TCP router's.
pub(super) fn known_mistake(word: &str) -> Option<&'static str> {
    KNOWN_MISTAKES
        .iter()
        .find(|(w, _)| *w == word)
        .map(|(_, advice)| *advice)
}

/// A hint for an unknown `word`, naming the closest of `names` if any is
/// close enough to be a likely typo.
pub(super) fn suggest(word: &str, names: &[&str]) -> Option<String> {
    let lower = word.to_ascii_lowercase();
    let (best, distance) = names
        .iter()
        .map(|name| (*name, distance(&lower, &name.to_ascii_lowercase())))
        .min_by_key(|(_, d)| *d)?;
    // Allow roughly one typo per three letters, and at least two.
    let allowed = (word.chars().count() / 3).max(2);
    (distance <= allowed).then(|| format!("did you mean `{best}`?"))
}

/// Edit distance counting insertions, deletions, substitutions and swaps of
/// adjacent characters as one edit each.
pub(super) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[0] is two rows back, rows[1] the previous row, rows[2] the current.
    let mut rows = [
        vec![0; b.len() + 1],
        (0..=b.len()).collect(),
        vec![0; b.len() + 1],
    ];
    for (i, &ca) in a.iter().enumerate() {
        let [two_back, prev, cur] = &mut rows;
        cur.clear();
        cur.push(i + 1);
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let deletion = prev.get(j + 1).map_or(usize::MAX, |d| d + 1);
            let insertion = cur.get(j).map_or(usize::MAX, |d| d + 1);
            let substitution = prev.get(j).map_or(usize::MAX, |d| d + cost);
            let mut best = deletion.min(insertion).min(substitution);
            let swapped = i > 0 && j > 0 && a.get(i - 1) == Some(&cb) && b.get(j - 1) == Some(&ca);
            if swapped && let Some(d) = two_back.get(j - 1) {
                best = best.min(d + 1);
            }
            cur.push(best);
        }
        rows.rotate_left(1);
    }
    rows.get(1).and_then(|row| row.last()).copied().unwrap_or(0)
}
