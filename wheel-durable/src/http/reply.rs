//! What a reply, or a request that got none, comes to.
//!
//! | reply | outcome |
//! | --- | --- |
//! | 2xx | done |
//! | 408, 429, 5xx | retry: after `Retry-After` when given, else the policy's back-off |
//! | 3xx (redirects are not followed) | a failed attempt: retry with the policy's back-off |
//! | any other status (other 4xx, 1xx) | a dead letter at once |
//! | no reply: timeout, refused or reset connection, DNS, TLS | retry with the policy's back-off |
//! | a request that cannot be built | a dead letter at once |
//! | a target the private-target guard refuses | a dead letter at once |
//!
//! The back-off and the attempts are the callback's own retry policy's
//! when it has one, else the node's; the node's attempts are the ceiling
//! either way. A retry on the last attempt allowed becomes a dead letter
//! whose reason is the last failure; a dead letter's reason holds the
//! status and the first [`REASON_BODY`] bytes of the reply's body.
//!
//! Node state: none (pure functions of a reply).

use std::time::{Duration, SystemTime};

use http::StatusCode;

use super::guard;
use crate::retry::gave_up;
use crate::{Outcome, RetryPolicy};

/// How much of a reply's body a reason keeps, in bytes.
pub(crate) const REASON_BODY: usize = 1024;

/// What one request came to, before the retry policy has its say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Done,
    /// Worth another try, after `after` or the policy's back-off.
    Retry {
        after: Option<Duration>,
        why: String,
    },
    /// Never worth another try.
    Dead(String),
}

/// `HTTP 404 Not Found` and, when there is one, `: ` and the body's start.
fn describe(status: u16, note: &str, body: &[u8]) -> String {
    let name = StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut s = format!("HTTP {status}");
    if !name.is_empty() {
        s.push(' ');
        s.push_str(name);
    }
    s.push_str(note);
    if !body.is_empty() {
        s.push_str(": ");
        s.push_str(&String::from_utf8_lossy(
            &body[..body.len().min(REASON_BODY)],
        ));
    }
    s
}

/// The verdict on a reply with this status, `Retry-After` value and body.
pub(crate) fn of_status(
    status: u16,
    retry_after: Option<&str>,
    body: &[u8],
    now: SystemTime,
) -> Verdict {
    match status {
        200..=299 => Verdict::Done,
        408 | 429 | 500..=599 => Verdict::Retry {
            after: retry_after.and_then(|v| wait_of(v, now)),
            why: describe(status, "", body),
        },
        // An endpoint that moved is a configuration to fix: each attempt
        // fails until it is, and the last one leaves a dead letter.
        300..=399 => Verdict::Retry {
            after: None,
            why: describe(status, " (redirects are not followed)", body),
        },
        _ => Verdict::Dead(describe(status, "", body)),
    }
}

/// The verdict on a request that got no reply: a request the client
/// refused to build is dead, and so is a target the private-target guard
/// refused; a timeout, a refused or reset connection, a
/// DNS or TLS failure is worth another try.
pub(crate) fn of_error(e: &reqwest::Error) -> Verdict {
    // Resolving again finds the same private addresses: no retry.
    if let Some(refused) = guard::refusal(e) {
        return Verdict::Dead(refused.to_string());
    }
    if e.is_builder() {
        return Verdict::Dead(format!("the request cannot be built: {e}"));
    }
    Verdict::Retry {
        after: None,
        why: format!("no reply: {}", chain(e)),
    }
}

/// An error and its causes, `: `-separated (reqwest's own message alone
/// says only "error sending request").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// The wait a `Retry-After` value asks for: delay-seconds, or an HTTP date
/// (a date already past asks for none). `None` when it is neither.
///
/// A date is read by `httpdate`: any of the three formats RFC 9110 has
/// every recipient accept (IMF-fixdate, RFC 850 with its two-digit year,
/// asctime), names spelled as the grammar has them (case-sensitive), the
/// weekday matching the date, a date that exists, years 1970 to 9999, no
/// leap second. Anything else is no date, and the policy's back-off
/// applies.
pub(crate) fn wait_of(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // More digits than a u64 holds: as long a wait as can be said.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The outcome the node records for `verdict` on run number `attempt`,
/// under the node's policy and the callback's own, if it has one. The
/// callback's policy sets the back-off and the attempts; the node's
/// attempts stay the ceiling, as the node ends every timer's runs there.
pub(crate) fn outcome(
    verdict: Verdict,
    attempt: u32,
    node: &RetryPolicy,
    own: Option<&RetryPolicy>,
) -> Outcome {
    let last = node.is_last(attempt) || own.is_some_and(|p| p.is_last(attempt));
    match verdict {
        Verdict::Done => Outcome::Done,
        Verdict::Dead(reason) => Outcome::Fail(reason),
        // The node would give up too, but with a reason that does not say
        // what went wrong: give up here, with the failure as the reason.
        Verdict::Retry { why, .. } if last => Outcome::Fail(gave_up(attempt, &why)),
        Verdict::Retry { after: Some(d), .. } => Outcome::RetryAfter(d),
        Verdict::Retry { after: None, .. } => match own.and_then(|p| p.delay(attempt)) {
            Some(d) => Outcome::RetryAfter(d),
            None => Outcome::Retry,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn retry(after: Option<Duration>, why: &str) -> Verdict {
        Verdict::Retry {
            after,
            why: why.into(),
        }
    }

    #[test]
    fn statuses_map_to_the_table() {
        let now = SystemTime::now();
        for s in [200, 201, 204, 299] {
            assert_eq!(of_status(s, None, b"", now), Verdict::Done, "{s}");
        }
        assert_eq!(
            of_status(503, None, b"down", now),
            retry(None, "HTTP 503 Service Unavailable: down")
        );
        assert_eq!(
            of_status(429, Some("1"), b"", now),
            retry(Some(Duration::from_secs(1)), "HTTP 429 Too Many Requests")
        );
        assert_eq!(
            of_status(408, Some("soon"), b"", now),
            retry(None, "HTTP 408 Request Timeout")
        );
        assert_eq!(of_status(599, None, b"", now), retry(None, "HTTP 599"));
        assert_eq!(
            of_status(404, Some("5"), b"no such order", now),
            Verdict::Dead("HTTP 404 Not Found: no such order".into())
        );
        assert_eq!(
            of_status(301, None, b"", now),
            retry(
                None,
                "HTTP 301 Moved Permanently (redirects are not followed)"
            )
        );
        for s in [100, 400, 401, 403, 409, 410, 422, 499, 600] {
            assert!(
                matches!(of_status(s, None, b"", now), Verdict::Dead(_)),
                "{s}"
            );
        }
    }

    #[test]
    fn a_reason_keeps_the_first_kib_of_the_body() {
        let body = vec![b'x'; 3 * REASON_BODY];
        let Verdict::Dead(reason) = of_status(400, None, &body, SystemTime::now()) else {
            panic!("a 400 is dead at once");
        };
        assert_eq!(reason.len(), "HTTP 400 Bad Request: ".len() + REASON_BODY);
    }

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777);
        let wait = |v| wait_of(v, now);
        assert_eq!(wait("0"), Some(Duration::ZERO));
        assert_eq!(wait(" 120 "), Some(Duration::from_secs(120)));
        assert_eq!(
            wait("99999999999999999999999"),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(
            wait("Sun, 06 Nov 1994 08:50:07 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(wait("Sun, 06 Nov 1994 08:00:00 GMT"), Some(Duration::ZERO));
        for bad in ["", "-1", "1.5", "+3", "soon"] {
            assert_eq!(wait(bad), None, "{bad:?}");
        }
    }

    /// Unix seconds of `Sun, 06 Nov 1994 08:49:37 GMT`.
    const NOV_6_1994: u64 = 784_111_777;

    /// The wait a `Retry-After` date asks for, seen at the Unix epoch: the
    /// date's Unix seconds.
    fn epoch_secs(date: &str) -> Option<u64> {
        wait_of(date, UNIX_EPOCH).map(|d| d.as_secs())
    }

    #[test]
    fn the_three_date_formats_ask_for_the_same_wait() {
        let now = UNIX_EPOCH + Duration::from_secs(NOV_6_1994 - 30);
        for date in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                wait_of(date, now),
                Some(Duration::from_secs(30)),
                "{date:?}"
            );
        }
    }

    #[test]
    fn dates_on_the_calendars_edges() {
        assert_eq!(epoch_secs("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            epoch_secs("Tue, 29 Feb 2000 00:00:00 GMT"),
            Some(951_782_400)
        );
        assert_eq!(
            epoch_secs("Thu, 29 Feb 2024 12:00:00 GMT"),
            Some(1_709_208_000)
        );
        // The far end of what an HTTP date can say: a wait of 8000 years.
        assert_eq!(
            epoch_secs("Fri, 31 Dec 9999 23:59:59 GMT"),
            Some(253_402_300_799)
        );
        // RFC 850's two-digit years: 00 to 69 are 20xx, 70 to 99 are 19xx.
        assert_eq!(
            epoch_secs("Tuesday, 01-Jan-69 00:00:00 GMT"),
            Some(3_124_224_000)
        );
        assert_eq!(epoch_secs("Thursday, 01-Jan-70 00:00:00 GMT"), Some(0));
    }

    #[test]
    fn values_that_are_no_http_date_ask_for_no_wait() {
        for bad in [
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nvm 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Mon, 06 Nov 1994 08:49:37 GMT",
            "Sat, 30 Feb 2000 00:00:00 GMT",
            "Thu, 29 Feb 2001 00:00:00 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:60 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 194 08:49:37 GMT",
            "Wed, 31 Dec 1969 23:59:59 GMT",
            "Sat, 01 Jan 10000 00:00:00 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT\u{e9}",
        ] {
            assert_eq!(wait_of(bad, UNIX_EPOCH), None, "{bad:?}");
        }
    }

    #[test]
    fn the_policy_decides_between_a_retry_and_giving_up() {
        let policy = RetryPolicy::new().max_attempts(3);
        assert_eq!(outcome(Verdict::Done, 3, &policy, None), Outcome::Done);
        assert_eq!(
            outcome(Verdict::Dead("HTTP 404".into()), 1, &policy, None),
            Outcome::Fail("HTTP 404".into())
        );
        assert_eq!(outcome(retry(None, "x"), 2, &policy, None), Outcome::Retry);
        assert_eq!(
            outcome(retry(Some(Duration::from_secs(1)), "x"), 2, &policy, None),
            Outcome::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(
            outcome(
                retry(Some(Duration::from_secs(1)), "HTTP 503"),
                3,
                &policy,
                None
            ),
            Outcome::Fail("gave up after 3 attempts: HTTP 503".into())
        );
    }

    #[test]
    fn a_callbacks_policy_sets_the_back_off_and_attempts_under_the_nodes_ceiling() {
        let node = RetryPolicy::new().max_attempts(5);
        let own = RetryPolicy::new()
            .initial(Duration::from_secs(1))
            .multiplier(3.0)
            .jitter(0.0)
            .max_attempts(2);
        assert_eq!(
            outcome(retry(None, "HTTP 500"), 1, &node, Some(&own)),
            Outcome::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(
            outcome(
                retry(Some(Duration::from_secs(9)), "HTTP 503"),
                1,
                &node,
                Some(&own)
            ),
            Outcome::RetryAfter(Duration::from_secs(9)),
            "Retry-After wins over the callback's back-off"
        );
        assert_eq!(
            outcome(retry(None, "HTTP 500"), 2, &node, Some(&own)),
            Outcome::Fail("gave up after 2 attempts: HTTP 500".into())
        );
        let generous = own.max_attempts(50);
        assert_eq!(
            outcome(retry(None, "HTTP 500"), 4, &node, Some(&generous)),
            Outcome::RetryAfter(Duration::from_secs(27))
        );
        assert_eq!(
            outcome(retry(None, "HTTP 500"), 5, &node, Some(&generous)),
            Outcome::Fail("gave up after 5 attempts: HTTP 500".into()),
            "the node's attempts are the ceiling"
        );
    }

    #[test]
    fn errors_without_a_reply_are_retried_unless_the_request_is_bad() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(super::super::send::tls().unwrap())
            .no_proxy()
            .build()
            .unwrap();
        // Port 9 (discard) on loopback: nothing listens, the connection is
        // refused.
        let refused = rt
            .block_on(client.get("http://127.0.0.1:9/").send())
            .unwrap_err();
        assert!(
            matches!(of_error(&refused), Verdict::Retry { after: None, ref why } if why.starts_with("no reply")),
            "{refused:?}"
        );
        let bad = client
            .get("http://127.0.0.1/")
            .header("bad header", "x")
            .build()
            .unwrap_err();
        assert!(matches!(of_error(&bad), Verdict::Dead(_)), "{bad:?}");
    }
}
