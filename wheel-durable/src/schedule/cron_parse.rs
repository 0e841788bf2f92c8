//! Parsing a cron expression into `croner`'s pattern, with errors that name
//! the field and the column at fault.
//!
//! The accepted language is `croner`'s (the Open Cron Pattern
//! Specification): five fields (minute hour day-of-month month
//! day-of-week), or six with seconds first; no year field; nicknames
//! `@yearly`, `@monthly`, `@weekly`, `@daily`, `@hourly`. When both
//! day-of-month and day-of-week are restricted, a day that matches either
//! runs (Vixie cron's rule).
//!
//! `croner`'s own errors say what is wrong but not where, so each field is
//! first parsed alone, in a pattern whose other fields are `*`: the first
//! field that fails alone is the one named.
//!
//! Node state: none (pure functions).

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use super::{CronField, CronSyntaxError, SpecError};

/// The fields of a five-field expression, in order.
const FIVE: [CronField; 5] = [
    CronField::Minute,
    CronField::Hour,
    CronField::DayOfMonth,
    CronField::Month,
    CronField::DayOfWeek,
];

/// The fields of a six-field expression, in order.
const SIX: [CronField; 6] = [
    CronField::Second,
    CronField::Minute,
    CronField::Hour,
    CronField::DayOfMonth,
    CronField::Month,
    CronField::DayOfWeek,
];

/// The parser every expression goes through: seconds optional, no year.
fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
}

/// Parses `expression`, naming the field, token and column of a fault.
pub(crate) fn parse(expression: &str) -> Result<Cron, SpecError> {
    let whole = |reason: String| {
        SpecError::Cron(CronSyntaxError {
            expression: expression.to_owned(),
            field: None,
            column: 1,
            token: None,
            reason,
        })
    };
    let tokens = tokens(expression);
    if tokens.is_empty() {
        return Err(whole("empty".to_owned()));
    }
    if !tokens[0].1.starts_with('@') {
        let fields: &[CronField] = match tokens.len() {
            5 => &FIVE,
            6 => &SIX,
            n => {
                return Err(whole(format!(
                    "{n} fields; expected 5 (minute hour day-of-month month day-of-week) \
                     or 6 (seconds first)"
                )));
            }
        };
        for (&field, &(column, token)) in fields.iter().zip(&tokens) {
            if let Err(e) = parser().parse(&probe(field, token)) {
                return Err(SpecError::Cron(CronSyntaxError {
                    expression: expression.to_owned(),
                    field: Some(field),
                    column,
                    token: Some(token.to_owned()),
                    reason: e.to_string(),
                }));
            }
        }
    }
    parser().parse(expression).map_err(|e| whole(e.to_string()))
}

/// The whitespace-separated tokens of `s`, each with its 1-based character
/// column.
fn tokens(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (column, (i, c)) in s.char_indices().enumerate() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some((column + 1, i)),
            (true, Some((col, from))) => {
                out.push((col, &s[from..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some((col, from)) = start {
        out.push((col, &s[from..]));
    }
    out
}

/// A six-field pattern that is `*` (seconds `0`) but for `token` in `field`.
fn probe(field: CronField, token: &str) -> String {
    let mut parts = ["0", "*", "*", "*", "*", "*"];
    parts[SIX.iter().position(|f| *f == field).unwrap_or(0)] = token;
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(expression: &str) -> CronSyntaxError {
        match parse(expression) {
            Err(SpecError::Cron(e)) => e,
            other => panic!("{expression}: {other:?}"),
        }
    }

    #[test]
    fn tokens_carry_their_character_columns() {
        assert_eq!(tokens("  a  bc\td"), [(3, "a"), (6, "bc"), (9, "d")]);
        assert_eq!(tokens("é x"), [(1, "é"), (3, "x")]);
        assert!(tokens(" \t ").is_empty());
    }

    #[test]
    fn five_and_six_fields_and_nicknames_parse() {
        for ok in [
            "*/15 * * * *",
            "0 30 2 * * *",
            "0 9 * * MON-FRI",
            "0 0 L * ?",
            "0 12 * * 5#2",
            "@daily",
            "@hourly",
        ] {
            assert!(parse(ok).is_ok(), "{ok}: {:?}", parse(ok).err());
        }
    }

    #[test]
    fn each_field_is_named_with_its_column_and_token() {
        let cases = [
            ("61 * * * *", CronField::Minute, 1, "61"),
            ("0 24 * * *", CronField::Hour, 3, "24"),
            ("0 9 32 * *", CronField::DayOfMonth, 5, "32"),
            ("0 9 1 13 *", CronField::Month, 7, "13"),
            ("0 9 * * 8", CronField::DayOfWeek, 9, "8"),
            ("60 0 9 * * *", CronField::Second, 1, "60"),
            ("0  0 x * * *", CronField::Hour, 6, "x"),
            ("0 */0 * * *", CronField::Hour, 3, "*/0"),
            ("0 0 1 * MON#9", CronField::DayOfWeek, 9, "MON#9"),
        ];
        for (expression, field, column, token) in cases {
            let e = fault(expression);
            assert_eq!(e.field, Some(field), "{expression}: {e}");
            assert_eq!(e.column, column, "{expression}: {e}");
            assert_eq!(e.token.as_deref(), Some(token), "{expression}: {e}");
            assert!(!e.reason.is_empty());
            assert!(e.to_string().contains(&format!("{field} field")), "{e}");
        }
    }

    #[test]
    fn whole_expression_faults_name_no_field() {
        for bad in ["", "   ", "* * * *", "0 0 0 * * * 2030", "@fortnightly"] {
            let e = fault(bad);
            assert_eq!(
                (e.field, e.column, e.token.clone()),
                (None, 1, None),
                "{bad}"
            );
            assert!(e.to_string().starts_with("bad cron expression"), "{e}");
        }
        assert!(fault("* * * *").reason.contains("4 fields"));
    }
}
