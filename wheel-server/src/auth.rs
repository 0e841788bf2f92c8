//! Bearer-token authentication of every `/v1` route.
//!
//! With a token configured, a request must carry `Authorization: Bearer
//! <token>`; anything else is answered 401 with a problem document and a
//! `WWW-Authenticate: Bearer` header. The comparison takes the same time
//! whatever the bytes of the token sent (`subtle`), so the token cannot be
//! guessed a byte at a time from response times. Without a token (allowed
//! only on a loopback address, see `args.rs`), every request passes.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::app::AppState;
use crate::problem::Problem;

/// Whether `headers` carry the bearer `token`.
pub(crate) fn authorized(headers: &HeaderMap, token: &[u8]) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let scheme = b"bearer ";
    if value.len() < scheme.len() || !value[..scheme.len()].eq_ignore_ascii_case(scheme) {
        return false;
    }
    let sent = value[scheme.len()..].trim_ascii();
    bool::from(sent.ct_eq(token))
}

/// The middleware: passes authorized requests on, answers 401 otherwise.
pub(crate) async fn require_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    match state.token() {
        Some(token) if !authorized(request.headers(), token) => {
            let problem = Problem::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Missing or wrong bearer token",
                "send the server's token as `Authorization: Bearer <token>`",
            );
            let mut response = problem.into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
        _ => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn only_the_exact_token_passes() {
        assert!(authorized(&with("Bearer s3cret"), b"s3cret"));
        assert!(authorized(&with("bearer s3cret"), b"s3cret"));
        assert!(!authorized(&with("Bearer s3cre"), b"s3cret"));
        assert!(!authorized(&with("Bearer s3cretx"), b"s3cret"));
        assert!(!authorized(&with("Basic s3cret"), b"s3cret"));
        assert!(!authorized(&with("Bearer"), b"s3cret"));
        assert!(!authorized(&HeaderMap::new(), b"s3cret"));
    }
}
