//! The regular expressions the OpenAPI document states, computed from the
//! server's own limits: whole numbers up to a bound, delays up to a
//! maximum, listing cursors, and the header names a callback may not set.
//! Pure functions; nothing here depends on the rest of the crate.

use wheel_durable::http::{RESERVED_HEADER_PREFIXES, RESERVED_HEADERS};

/// Milliseconds, as a JSON number.
pub(crate) fn ms(d: &std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A regular expression for the whole numbers `min..=n` (`min` 0 or 1),
/// leading zeros allowed.
pub(crate) fn numbers_up_to(n: u64, nonzero: bool) -> String {
    let digits: Vec<u32> = n.to_string().bytes().map(|b| u32::from(b - b'0')).collect();
    let k = digits.len();
    let rest = |r: usize| match r {
        0 => String::new(),
        1 => "[0-9]".to_owned(),
        r => format!("[0-9]{{{r}}}"),
    };
    let class = |a: u32, b: u32| {
        if a == b {
            a.to_string()
        } else {
            format!("[{a}-{b}]")
        }
    };
    let mut alts = Vec::new();
    // Fewer digits than `n`: any such number without a leading zero.
    if k > 1 {
        alts.push(if nonzero { "[1-9]" } else { "[0-9]" }.to_owned());
        alts.extend((2..k).map(|m| format!("[1-9]{}", rest(m - 1))));
    }
    // As many digits: below `n` at the first digit that differs.
    let prefix: String = n.to_string();
    for (i, &d) in digits.iter().enumerate() {
        let low = u32::from(i == 0 && (k > 1 || nonzero));
        if d > low {
            alts.push(format!(
                "{}{}{}",
                &prefix[..i],
                class(low, d - 1),
                rest(k - i - 1)
            ));
        }
    }
    alts.push(prefix);
    format!("0*(?:{})", alts.join("|"))
}

/// The delays `parse_delay` reads, up to `max` (and from 1 ms when
/// `nonzero`): a whole number with a unit, none meaning milliseconds.
pub(crate) fn delay_pattern(max: &std::time::Duration, nonzero: bool) -> String {
    let max = ms(max);
    let units = [
        ("(?:ms)?", 1),
        ("s", 1_000),
        ("m", 60_000),
        ("h", 3_600_000),
        ("d", 86_400_000),
    ];
    let alts: Vec<String> = units
        .iter()
        .filter(|(_, unit)| max / unit > 0)
        .map(|(suffix, unit)| format!("{}{suffix}", numbers_up_to(max / unit, nonzero)))
        .collect();
    format!("^(?:{})$", alts.join("|"))
}

/// The cursors of the listings `listings` (a character class of their
/// tags): `TAG.POSITION.KEY`, the key's UTF-8 bytes in hex.
pub(crate) fn cursor_pattern(listings: &str) -> String {
    // One UTF-8 character as hex pairs (the well-formed sequences of
    // Unicode's table 3-7).
    let h = "[0-9a-fA-F]";
    let c = "[89abAB][0-9a-fA-F]";
    let utf8 = [
        format!("[0-7]{h}"),
        format!("[cC][2-9a-fA-F]{c}|[dD]{h}{c}"),
        format!("[eE]0[abAB]{h}{c}"),
        format!("[eE][1-9a-cA-C]{c}{c}|[eE][efEF]{c}{c}"),
        format!("[eE][dD][89]{h}{c}"),
        format!("[fF]0[9abAB]{h}{c}{c}"),
        format!("[fF][1-3]{c}{c}{c}"),
        format!("[fF]4[8]{h}{c}{c}"),
    ]
    .join("|");
    format!(
        "^{listings}\\.{}\\.(?:{utf8})+$",
        numbers_up_to(u64::MAX, false)
    )
}

/// The header names a callback may not set (the library's names and
/// prefixes), in any case.
pub(crate) fn reserved_headers() -> String {
    let any_case = |name: &str| -> String {
        name.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                } else {
                    regex_escape(c)
                }
            })
            .collect()
    };
    let mut alts: Vec<String> = RESERVED_HEADERS.iter().map(|n| any_case(n)).collect();
    alts.extend(
        RESERVED_HEADER_PREFIXES
            .iter()
            .map(|p| format!("{}.*", any_case(p))),
    );
    format!("^(?:{})$", alts.join("|"))
}

fn regex_escape(c: char) -> String {
    if "\\^$.|?*+()[]{}".contains(c) {
        format!("\\{c}")
    } else {
        c.to_string()
    }
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    use super::*;

    #[test]
    fn number_patterns_match_exactly_the_numbers_up_to_their_bound() {
        for n in [
            0,
            1,
            7,
            9,
            10,
            24,
            99,
            100,
            1440,
            36_500,
            86_400,
            3_153_600_000,
        ] {
            for nonzero in [false, true].into_iter().filter(|z| n > 0 || !z) {
                let re = Regex::new(&format!("^{}$", numbers_up_to(n, nonzero))).unwrap();
                let low = u64::from(nonzero);
                for v in (0..=n.min(3000)).chain(n.saturating_sub(3000)..n + 3000) {
                    let inside = (low..=n).contains(&v);
                    assert_eq!(
                        re.is_match(&v.to_string()),
                        inside,
                        "{v} in 0..={n} ({nonzero})"
                    );
                    assert_eq!(re.is_match(&format!("00{v}")), inside, "00{v}");
                }
                assert!(!re.is_match("") && !re.is_match("+1") && !re.is_match("1a"));
            }
        }
        let max = Regex::new(&format!("^{}$", numbers_up_to(u64::MAX, false))).unwrap();
        assert!(max.is_match(&u64::MAX.to_string()));
        assert!(!max.is_match("18446744073709551616"));
    }
}
