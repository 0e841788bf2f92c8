//! Every error the server answers, as an RFC 9457 problem document
//! (`application/problem+json`).
//!
//! A [`Problem`] always has a `type` (a `urn:wheel:problem:` URN naming
//! the kind of failure, stable for clients to branch on), a `title` (the
//! same for every problem of one type), the HTTP `status`, and a `detail`
//! for people. When one field of the request is at fault, `field` names it
//! as a JSON path (`callback.url`, `timers[3].delay`) or as the query or
//! path parameter (`limit`, `key`). No error reaches a client in any other
//! form: axum's own rejections are converted here, and so are panics (see
//! `app.rs`).
//!
//! A library error is sorted by [`DurableError::is_input`]: the caller's
//! input is a 4xx naming its field, the store's trouble a 503 (unreachable,
//! stopping, or a write not confirmed by enough Redis replicas) or a 500. Nothing here depends on the rest of the crate.

use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use wheel_durable::DurableError;

/// The media type of a problem document.
pub(crate) const PROBLEM_JSON: &str = "application/problem+json";

/// An RFC 9457 problem document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct Problem {
    /// A URN naming the kind of problem, e.g. `urn:wheel:problem:invalid-field`.
    #[serde(rename = "type")]
    pub(crate) kind: String,
    /// A short summary of the kind of problem.
    pub(crate) title: String,
    /// The HTTP status code.
    pub(crate) status: u16,
    /// What went wrong with this request, for people.
    pub(crate) detail: String,
    /// The request field at fault, as a JSON path or a parameter name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) field: Option<String>,
}

impl Problem {
    /// A problem of kind `slug` with its title and status.
    pub(crate) fn new(
        status: StatusCode,
        slug: &str,
        title: &str,
        detail: impl Into<String>,
    ) -> Problem {
        Problem {
            kind: format!("urn:wheel:problem:{slug}"),
            title: title.to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            field: None,
        }
    }

    /// Names the field at fault.
    pub(crate) fn at(mut self, field: impl Into<String>) -> Problem {
        self.field = Some(field.into());
        self
    }

    /// A request field that does not hold an acceptable value (422).
    pub(crate) fn invalid(field: impl Into<String>, detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-field",
            "A field of the request is invalid",
            detail,
        )
        .at(field)
    }

    /// A query or path parameter that does not parse (400).
    pub(crate) fn bad_parameter(field: impl Into<String>, detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid-parameter",
            "A parameter of the request is invalid",
            detail,
        )
        .at(field)
    }

    /// No timer (or dead letter) with this key (404).
    pub(crate) fn no_timer(key: &str, what: &str) -> Problem {
        Problem::new(
            StatusCode::NOT_FOUND,
            "timer-not-found",
            "No such timer",
            format!("there is no {what} with the key {key:?}"),
        )
        .at("key")
    }

    /// The request conflicts with the timer's state or content (409).
    pub(crate) fn conflict(detail: impl Into<String>) -> Problem {
        Problem::new(
            StatusCode::CONFLICT,
            "conflict",
            "The request conflicts with the timer as it is",
            detail,
        )
    }

    /// A failure on the server's side (500): the detail is logged, not sent.
    pub(crate) fn internal(detail: &str) -> Problem {
        tracing::error!(detail, "internal error");
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal server error",
            "the server failed to handle the request; its log has the cause",
        )
    }

    /// The status as a `StatusCode`.
    pub(crate) fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// A library error on the request whose fields start at `prefix` (empty
    /// for the top level, `timers[3].` in a batch): the caller's input
    /// ([`DurableError::is_input`]) is a 4xx naming the field it is about,
    /// the store's trouble a 503 or a 500.
    pub(crate) fn durable(err: &DurableError, prefix: &str) -> Problem {
        if err.is_input() {
            return Problem::input(err, prefix);
        }
        if matches!(err, DurableError::Unavailable(_) | DurableError::Closed) {
            tracing::warn!(error = %err, "the store is unavailable");
            return Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store-unavailable",
                "The timer store is unavailable",
                "the store did not answer in time; the change may or may not have been made: retry it (adds are idempotent on their key)",
            );
        }
        if let DurableError::NotReplicated { wanted, confirmed } = err {
            tracing::warn!(error = %err, "a write was not replicated in time");
            return Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store-not-replicated",
                "The change is not yet on enough Redis replicas",
                format!(
                    "the Redis master made the change, but {confirmed} of the {wanted} replicas required (--redis-replicas) confirmed it within --redis-replica-timeout: it may be lost if the master fails; retry it (adds are idempotent on their key)"
                ),
            );
        }
        Problem::internal(&err.to_string())
    }

    /// An input error of the library: 422 (413 for a callback too large
    /// to store), at the field the error is about when it names one.
    fn input(err: &DurableError, prefix: &str) -> Problem {
        let f = |name: &str| format!("{prefix}{name}");
        let (field, detail) = match err {
            DurableError::PayloadTooLarge { len, max } => {
                return Problem::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "callback-too-large",
                    "The callback is too large to store",
                    format!("the encoded callback takes {len} bytes; the limit is {max}"),
                )
                .at(f("callback"));
            }
            DurableError::InvalidKey => (
                Some("key"),
                format!(
                    "a key is 1 to {} bytes and does not start with `sched:` or \
                     `sched-trigger:` (the keys of schedule runs)",
                    wheel_durable::MAX_KEY_LEN
                ),
            ),
            DurableError::InvalidTime => (
                Some("due_at"),
                "the due time must be after 1970-01-01 and before the year 285000".to_owned(),
            ),
            DurableError::InvalidMethod(m) => (
                Some("callback.method"),
                format!("{m:?} is not one of GET, POST, PUT, PATCH and DELETE"),
            ),
            DurableError::InvalidUrl(why) => (Some("callback.url"), why.clone()),
            DurableError::InvalidHeader(why) => (Some("callback.headers"), why.clone()),
            DurableError::InvalidFlow(_) => (Some("callback.flow"), err.to_string()),
            // An input error this server does not place: still the
            // client's, with the library's words.
            other => (None, other.to_string()),
        };
        let problem = Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-field",
            "A field of the request is invalid",
            detail,
        );
        match field {
            Some(name) => problem.at(f(name)),
            None => problem,
        }
    }

    /// A body that could not be read: too large (413), or cut short (400).
    pub(crate) fn body(rejection: &BytesRejection) -> Problem {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body-too-large",
                "The request body is too large",
                "the request body is larger than the server's limit (--max-body)",
            );
        }
        Problem::new(
            StatusCode::BAD_REQUEST,
            "unreadable-body",
            "The request body could not be read",
            rejection.body_text(),
        )
    }

    /// A query string that does not parse into the route's parameters; a
    /// parameter given twice (`limit=1&limit=2`) is named.
    pub(crate) fn query(rejection: &QueryRejection) -> Problem {
        let text = rejection.body_text();
        let repeated = serde_field(&text).map(str::to_owned);
        let problem = Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid-parameter",
            "A parameter of the request is invalid",
            text,
        );
        match repeated {
            Some(name) => problem.at(name),
            None => problem,
        }
    }

    /// A path whose parameters do not decode.
    pub(crate) fn path(rejection: &PathRejection) -> Problem {
        Problem::bad_parameter("key", rejection.body_text())
    }
}

/// The field a serde message names when it reports a field missing or
/// given twice (serde reports both at the parent, not at the field).
pub(crate) fn serde_field(message: &str) -> Option<&str> {
    ["missing field `", "duplicate field `"]
        .iter()
        .find_map(|start| message.split_once(start))
        .and_then(|(_, rest)| rest.split('`').next())
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = self.status_code();
        let body = serde_json::to_vec(&self).unwrap_or_else(|_| b"{}".to_vec());
        (status, [(header::CONTENT_TYPE, PROBLEM_JSON)], body).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_errors_are_sorted_by_whether_the_input_is_at_fault() {
        use wheel_durable::ErrorDetail;
        let input = [
            DurableError::InvalidKey,
            DurableError::InvalidTime,
            DurableError::Config("x".into()),
            DurableError::InvalidMethod("BREW".into()),
            DurableError::InvalidUrl("x".into()),
            DurableError::InvalidHeader("x".into()),
        ];
        for e in &input {
            assert_eq!(Problem::durable(e, "").status, 422, "{e:?}");
        }
        let unavailable = [
            DurableError::Unavailable(ErrorDetail::new("x")),
            DurableError::Closed,
            DurableError::NotReplicated {
                wanted: 2,
                confirmed: 1,
            },
        ];
        for e in &unavailable {
            assert_eq!(Problem::durable(e, "").status, 503, "{e:?}");
        }
        let broken = [
            DurableError::Locked(ErrorDetail::new("x")),
            DurableError::Corrupt(ErrorDetail::new("x")),
            DurableError::Io(ErrorDetail::new("x")),
            DurableError::Store(ErrorDetail::new("x")),
        ];
        for e in &broken {
            assert_eq!(Problem::durable(e, "").status, 500, "{e:?}");
        }
    }

    #[test]
    fn library_errors_name_the_field_under_the_prefix() {
        let p = Problem::durable(&DurableError::InvalidUrl("no host".into()), "timers[2].");
        assert_eq!(p.status, 422);
        assert_eq!(p.field.as_deref(), Some("timers[2].callback.url"));
        let p = Problem::durable(&DurableError::PayloadTooLarge { len: 9, max: 4 }, "");
        assert_eq!(p.status, 413);
        assert_eq!(p.field.as_deref(), Some("callback"));
        let p = Problem::durable(&DurableError::Closed, "");
        assert_eq!(p.status, 503);
    }

    #[test]
    fn the_document_has_the_rfc_9457_members() {
        let p = Problem::invalid("delay", "not a duration");
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["type"], "urn:wheel:problem:invalid-field");
        assert_eq!(v["status"], 422);
        assert_eq!(v["field"], "delay");
        assert!(v["title"].is_string() && v["detail"].is_string());
    }
}
