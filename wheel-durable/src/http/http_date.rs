//! HTTP dates, for `Retry-After`: the three formats RFC 9110 has every
//! recipient accept.
//!
//! ```text
//! Sun, 06 Nov 1994 08:49:37 GMT    IMF-fixdate (what servers send)
//! Sunday, 06-Nov-94 08:49:37 GMT   RFC 850 (obsolete; two-digit year)
//! Sun Nov  6 08:49:37 1994         asctime (obsolete)
//! ```
//!
//! The weekday is not checked (it is implied by the date); every other
//! field is, and a date that does not exist (30 February) is refused.

/// Month names as sent, January first.
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A field of digits only (`str::parse` would also take a sign).
fn number(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar
/// (month 1..=12), by shifting the year to start in March so that the leap
/// day comes last.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Unix seconds of an HTTP date, or `None` when it is not one.
pub(crate) fn parse(s: &str) -> Option<i64> {
    let spaced: String = s
        .chars()
        .map(|c| if matches!(c, ',' | '-' | ':') { ' ' } else { c })
        .collect();
    let fields: Vec<&str> = spaced.split_whitespace().collect();
    let (day, month, year, time) = match fields.as_slice() {
        [_, d, m, y, h, min, sec, "GMT"] => (d, m, y, [h, min, sec]),
        [_, m, d, h, min, sec, y] => (d, m, y, [h, min, sec]),
        _ => return None,
    };
    let month = 1 + MONTHS
        .iter()
        .position(|name| name.eq_ignore_ascii_case(month))?;
    let month = u32::try_from(month).ok()?;
    let year = match (year.len(), i64::from(number(year)?)) {
        // RFC 850's two-digit years: the nearest century that is not far
        // in the future.
        (2, y) if y < 70 => 2000 + y,
        (2, y) => 1900 + y,
        (4, y) => y,
        _ => return None,
    };
    let day = number(day)?;
    if day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let [h, min, sec] = time.map(|f| number(f));
    let (h, min, sec) = (h?, min?, sec?);
    // A leap second (60) is allowed by the grammar.
    if h > 23 || min > 59 || sec > 60 {
        return None;
    }
    let secs = i64::from(h * 3600 + min * 60 + sec);
    Some(days_from_civil(year, month, day) * 86_400 + secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOV_6_1994: i64 = 784_111_777;

    #[test]
    fn the_three_formats_parse_to_the_same_instant() {
        assert_eq!(parse("Sun, 06 Nov 1994 08:49:37 GMT"), Some(NOV_6_1994));
        assert_eq!(parse("Sunday, 06-Nov-94 08:49:37 GMT"), Some(NOV_6_1994));
        assert_eq!(parse("Sun Nov  6 08:49:37 1994"), Some(NOV_6_1994));
    }

    #[test]
    fn calendar_edges() {
        assert_eq!(parse("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse("Wed, 31 Dec 1969 23:59:59 GMT"), Some(-1));
        assert_eq!(parse("Tue, 29 Feb 2000 00:00:00 GMT"), Some(951_782_400));
        assert_eq!(parse("Thu, 29 Feb 2024 12:00:00 GMT"), Some(1_709_208_000));
        assert_eq!(
            parse("Fri, 31 Dec 9999 23:59:59 GMT"),
            Some(253_402_300_799)
        );
        assert_eq!(
            parse("Tuesday, 01-Jan-69 00:00:00 GMT"),
            Some(3_124_224_000)
        );
        assert_eq!(parse("Thursday, 01-Jan-70 00:00:00 GMT"), Some(0));
        for days in [0, 59, 365, 10_957, 19_782, 2_932_896] {
            let (y, m, d) = civil_of(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    /// The inverse of `days_from_civil`, walking the calendar (slow, tests only).
    fn civil_of(mut days: i64) -> (i64, u32, u32) {
        let mut year = 1970;
        while days >= if is_leap(year) { 366 } else { 365 } {
            days -= if is_leap(year) { 366 } else { 365 };
            year += 1;
        }
        let mut month = 1;
        while days >= i64::from(days_in_month(year, month)) {
            days -= i64::from(days_in_month(year, month));
            month += 1;
        }
        (year, month, u32::try_from(days).unwrap() + 1)
    }

    #[test]
    fn dates_that_do_not_exist_or_do_not_parse_are_refused() {
        for bad in [
            "",
            "120",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nvm 1994 08:49:37 GMT",
            "Sat, 30 Feb 2000 00:00:00 GMT",
            "Thu, 29 Feb 2001 00:00:00 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 194 08:49:37 GMT",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
